import { useState, type FormEvent } from 'react';
import { Link, useLocation } from 'wouter';
import { api, unwrap } from '../api/client';
import { InputField, useAction } from '../form';
import { PagedTable, usePagedList } from '../list';
import { asApiError, Badge, CopyButton, ErrorMessage, PageTitle, Show, useLoad, when } from '../ui';

const REASONS: Record<string, string> = {
  NXDOMAIN: 'The name does not exist in DNS',
  NO_RECORD: 'No such record at the name',
  MISMATCH: 'Another value is published',
  DNS_ERROR: 'DNS did not answer; try again',
};

export function DomainsPage() {
  const list = usePagedList(
    (cursor) =>
      unwrap(api.GET('/domains', { params: { query: { limit: 50, cursor } } })).then((r) => r.data),
    [],
  );
  const [name, setName] = useState('');
  const add = useAction();
  const [, navigate] = useLocation();

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void add.run(async () => {
      const created = await unwrap(api.POST('/domains', { body: { domain: name.trim() } }));
      navigate(`/domains/${created.data.id}`);
    });
  };

  return (
    <>
      <PageTitle>Domains</PageTitle>
      <form className="filters" onSubmit={submit}>
        <InputField
          label="Add a sending domain"
          value={name}
          placeholder="example.com"
          required
          onChange={setName}
        />
        <button type="submit">Add domain</button>
      </form>
      <ErrorMessage error={add.error} />
      <PagedTable
        list={list}
        label="Domains"
        empty="No domains yet."
        columns={['Domain', 'Status', 'Last checked']}
        row={(d) => (
          <tr key={d.id}>
            <td>
              <Link href={`/domains/${d.id}`}>{d.domain}</Link>
            </td>
            <td>
              <Badge value={d.status} />
            </td>
            <td>{when(d.lastCheckedAt)}</td>
          </tr>
        )}
      />
    </>
  );
}

export function DomainPage({ id }: { id: string }) {
  const state = useLoad(
    () => unwrap(api.GET('/domains/{id}', { params: { path: { id } } })).then((r) => r.data),
    [id],
  );
  const check = useAction();
  const [verified, setVerified] = useState<typeof state.data>();
  const [, navigate] = useLocation();
  const domain = verified ?? state.data;

  const verify = () =>
    check.run(async () =>
      setVerified(
        (await unwrap(api.POST('/domains/{id}/verify', { params: { path: { id } } }))).data,
      ),
    );

  const remove = async () => {
    if (!domain || !window.confirm(`Delete ${domain.domain}?`)) return;
    try {
      await unwrap(api.DELETE('/domains/{id}', { params: { path: { id } } }));
      navigate('/domains');
    } catch (err) {
      check.setError(asApiError(err));
    }
  };

  return (
    <Show state={{ ...state, data: domain }}>
      {(d) => (
        <>
          <PageTitle
            actions={
              <>
                <button type="button" onClick={verify} disabled={check.busy}>
                  {check.busy ? 'Verifying…' : 'Verify'}
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
          <ErrorMessage error={check.error} />
          <h2>DNS records</h2>
          <p>Publish these at your DNS provider, then verify. Required records must match.</p>
          <ul className="records">
            {d.records.map((r) => (
              <li key={`${r.purpose}-${r.name}`} className="record">
                <div className="record-head">
                  <strong>{r.purpose}</strong> <span>{r.type}</span>{' '}
                  {r.required ? (
                    <span className="muted">required</span>
                  ) : (
                    <span className="muted">recommended</span>
                  )}{' '}
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
