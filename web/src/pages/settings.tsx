import { useState, type FormEvent } from 'react';
import { api, unwrap, type ApiError } from '../api/client';
import type { components } from '../api/schema';
import {
  asApiError,
  Badge,
  CopyButton,
  ErrorMessage,
  Field,
  PageTitle,
  Show,
  useLoad,
  when,
} from '../ui';

type ApiKey = components['schemas']['ApiKeyResponse'];

async function loadSettings() {
  const [project, keys] = await Promise.all([
    unwrap(api.GET('/project')),
    unwrap(api.GET('/project/keys', { params: { query: { limit: 100 } } })),
  ]);
  return { project: project.data, keys: keys.data.items };
}

export function SettingsPage() {
  const state = useLoad(loadSettings, []);
  return (
    <>
      <PageTitle>Settings</PageTitle>
      <Show state={state}>
        {({ project, keys }) => (
          <>
            <h2>Project</h2>
            <dl className="facts">
              <dt>Name</dt>
              <dd>{project.name}</dd>
              <dt>ID</dt>
              <dd>
                <code>{project.id}</code>
              </dd>
              <dt>Default sender</dt>
              <dd>
                <code>{project.defaultFrom ? JSON.stringify(project.defaultFrom) : '—'}</code>
              </dd>
              <dt>Created</dt>
              <dd>{when(project.createdAt)}</dd>
            </dl>
            <ApiKeys keys={keys} onChange={state.reload} />
          </>
        )}
      </Show>
    </>
  );
}

function ApiKeys({ keys, onChange }: { keys: ApiKey[]; onChange: () => void }) {
  const [type, setType] = useState<'secret' | 'public'>('secret');
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  const [created, setCreated] = useState<{ key: ApiKey; apiKey: string }>();
  const [revoked, setRevoked] = useState<string>();

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    setRevoked(undefined);
    setBusy(true);
    try {
      const answer = await unwrap(
        api.POST('/project/keys', {
          body: { type, ...(name.trim() ? { name: name.trim() } : {}) },
        }),
      );
      setCreated(answer.data);
      setName('');
      onChange();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };

  const revoke = async (key: ApiKey) => {
    const label = key.name ? `${key.name} (${key.prefix}…)` : `${key.prefix}…`;
    if (!window.confirm(`Revoke the key ${label}? Anything using it gets 401 from now on.`)) return;
    setError(undefined);
    try {
      await unwrap(api.DELETE('/project/keys/{id}', { params: { path: { id: key.id } } }));
      if (created?.key.id === key.id) setCreated(undefined);
      setRevoked(`Key ${label} revoked.`);
      onChange();
    } catch (err) {
      setError(asApiError(err));
    }
  };

  return (
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      <p>
        Secret keys (<code>sk_</code>) can call every endpoint and sign in here; public keys (
        <code>pk_</code>) only track events and take signups from a web page.
      </p>
      {created && (
        <section className="card" aria-labelledby="new-key-title" role="status">
          <h3 id="new-key-title">New {created.key.type} key</h3>
          <p>Store it now: it is not shown again.</p>
          <p className="record-row">
            <code data-testid="new-api-key">{created.apiKey}</code>
            <CopyButton text={created.apiKey} label="new API key" />
          </p>
          <button type="button" onClick={() => setCreated(undefined)}>
            I have stored it
          </button>
        </section>
      )}
      {revoked && <p role="status">{revoked}</p>}
      <form className="filters" onSubmit={create} aria-label="New API key">
        <Field label="Key type">
          {(id) => (
            <select
              id={id}
              value={type}
              onChange={(e) => setType(e.target.value as 'secret' | 'public')}
            >
              <option value="secret">Secret (sk_)</option>
              <option value="public">Public (pk_)</option>
            </select>
          )}
        </Field>
        <Field label="Name (optional)">
          {(id) => (
            <input
              id={id}
              value={name}
              maxLength={100}
              placeholder="Production server"
              onChange={(e) => setName(e.target.value)}
            />
          )}
        </Field>
        <button type="submit" disabled={busy}>
          {busy ? 'Creating…' : 'Create key'}
        </button>
      </form>
      <ErrorMessage error={error} />
      <div className="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Name</th>
              <th scope="col">Type</th>
              <th scope="col">State</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr key={k.id} data-testid="api-key">
                <td>
                  <code>{k.prefix}…</code>
                </td>
                <td>{k.name ?? '—'}</td>
                <td>{k.type}</td>
                <td>
                  <Badge value={k.revoked ? 'Revoked' : 'Active'} />
                  {k.revokedAt && <div className="muted">{when(k.revokedAt)}</div>}
                </td>
                <td>{when(k.createdAt)}</td>
                <td>
                  {!k.revoked && (
                    <button
                      type="button"
                      className="small danger"
                      onClick={() => revoke(k)}
                      aria-label={`Revoke ${k.name ?? k.prefix}`}
                    >
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
