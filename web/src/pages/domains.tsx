import { useState, type FormEvent } from 'react';
import { Link, useLocation } from 'wouter';
import { api, unwrap, type ApiError } from '../api/client';
import {
  asApiError,
  Badge,
  CopyButton,
  ErrorMessage,
  Field,
  PageTitle,
  Pager,
  Show,
  useCursor,
  useLoad,
  when,
} from '../ui';

const REASONS: Record<string, string> = {
  NXDOMAIN: 'The name does not exist in DNS',
  NO_RECORD: 'No such record at the name',
  MISMATCH: 'Another value is published',
  DNS_ERROR: 'DNS did not answer; try again',
};

export function DomainsPage() {
  const paging = useCursor('');
  const state = useLoad(
    () =>
      unwrap(api.GET('/domains', { params: { query: { limit: 50, cursor: paging.cursor } } })).then(
        (r) => r.data,
      ),
    [paging.cursor],
  );
  const [name, setName] = useState('');
  const [error, setError] = useState<ApiError>();
  const [, navigate] = useLocation();

  const add = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    try {
      const created = await unwrap(api.POST('/domains', { body: { domain: name.trim() } }));
      navigate(`/domains/${created.data.id}`);
    } catch (err) {
      setError(asApiError(err));
    }
  };

  return (
    <>
      <PageTitle>Domains</PageTitle>
      <form className="filters" onSubmit={add}>
        <Field label="Add a sending domain">
          {(id) => (
            <input
              id={id}
              value={name}
              placeholder="example.com"
              required
              onChange={(e) => setName(e.target.value)}
            />
          )}
        </Field>
        <button type="submit">Add domain</button>
      </form>
      <ErrorMessage error={error} />
      <Show state={state}>
        {(data) => (
          <>
            {data.items.length === 0 ? (
              <p>No domains yet.</p>
            ) : (
              <div className="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Domain</th>
                      <th scope="col">Status</th>
                      <th scope="col">Last checked</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.items.map((d) => (
                      <tr key={d.id}>
                        <td>
                          <Link href={`/domains/${d.id}`}>{d.domain}</Link>
                        </td>
                        <td>
                          <Badge value={d.status} />
                        </td>
                        <td>{when(d.lastCheckedAt)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <Pager page={paging.page} data={data} paging={paging} label="Domains" />
          </>
        )}
      </Show>
    </>
  );
}

export function DomainPage({ id }: { id: string }) {
  const state = useLoad(
    () => unwrap(api.GET('/domains/{id}', { params: { path: { id } } })).then((r) => r.data),
    [id],
  );
  const [verifying, setVerifying] = useState(false);
  const [error, setError] = useState<ApiError>();
  const [verified, setVerified] = useState<typeof state.data>();
  const [, navigate] = useLocation();
  const domain = verified ?? state.data;

  const verify = async () => {
    setVerifying(true);
    setError(undefined);
    try {
      setVerified(
        (await unwrap(api.POST('/domains/{id}/verify', { params: { path: { id } } }))).data,
      );
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setVerifying(false);
    }
  };

  const remove = async () => {
    if (!domain || !window.confirm(`Delete ${domain.domain}?`)) return;
    try {
      await unwrap(api.DELETE('/domains/{id}', { params: { path: { id } } }));
      navigate('/domains');
    } catch (err) {
      setError(asApiError(err));
    }
  };

  return (
    <Show state={{ ...state, data: domain }}>
      {(d) => (
        <>
          <PageTitle
            actions={
              <>
                <button type="button" onClick={verify} disabled={verifying}>
                  {verifying ? 'Verifying…' : 'Verify'}
                </button>
                <button type="button" className="danger" onClick={remove}>
                  Delete
                </button>
              </>
            }
          >
            {d.domain}
          </PageTitle>
          <p role="status">
            Status: <Badge value={d.status} /> · last checked {when(d.lastCheckedAt)}
            {d.verifiedAt && <> · verified {when(d.verifiedAt)}</>}
          </p>
          <ErrorMessage error={error} />
          <h2>DNS records</h2>
          <p>Publish these at your DNS provider, then verify. Required records must match.</p>
          <ul className="records">
            {d.records.map((r) => (
              <li key={`${r.purpose}-${r.name}`} className="record">
                <div className="record-head">
                  <strong>{r.purpose}</strong> <span>{r.type}</span>{' '}
                  {r.required ? <span className="muted">required</span> : <span className="muted">recommended</span>}{' '}
                  <Badge value={r.status} />
                </div>
                <div className="record-row">
                  <span className="label">Name</span>
                  <code>{r.name}</code>
                  <CopyButton text={r.name} label={`${r.purpose} record name`} />
                </div>
                <div className="record-row">
                  <span className="label">Value</span>
                  <code>{r.value}</code>
                  <CopyButton text={r.value} label={`${r.purpose} record value`} />
                </div>
                {r.error && (
                  <p className="reason">
                    {REASONS[r.error] ?? r.error}
                    {r.found && r.found.length > 0 && <> (found: {r.found.join(', ')})</>}
                  </p>
                )}
              </li>
            ))}
          </ul>
        </>
      )}
    </Show>
  );
}
