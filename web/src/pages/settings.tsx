import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import type { components } from '../api/schema';
import { InputField, SelectField, useAction } from '../form';
import { Table } from '../list';
import { asApiError, Badge, CopyButton, ErrorMessage, PageTitle, Show, useLoad, when } from '../ui';

type ApiKey = components['schemas']['ApiKeyResponse'];

const KEY_TYPES = [
  ['secret', 'Secret (sk_)'],
  ['public', 'Public (pk_)'],
] as const;

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
  const action = useAction();
  const [created, setCreated] = useState<{ key: ApiKey; apiKey: string }>();
  const [revoked, setRevoked] = useState<string>();

  const create = (e: FormEvent) => {
    e.preventDefault();
    setRevoked(undefined);
    void action.run(async () => {
      const answer = await unwrap(
        api.POST('/project/keys', {
          body: { type, ...(name.trim() ? { name: name.trim() } : {}) },
        }),
      );
      setCreated(answer.data);
      setName('');
      onChange();
    });
  };

  const revoke = async (key: ApiKey) => {
    const label = key.name ? `${key.name} (${key.prefix}…)` : `${key.prefix}…`;
    if (!window.confirm(`Revoke the key ${label}? Anything using it gets 401 from now on.`)) return;
    action.setError(undefined);
    try {
      await unwrap(api.DELETE('/project/keys/{id}', { params: { path: { id: key.id } } }));
      if (created?.key.id === key.id) setCreated(undefined);
      setRevoked(`Key ${label} revoked.`);
      onChange();
    } catch (err) {
      action.setError(asApiError(err));
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
        <SelectField label="Key type" value={type} onChange={setType} choices={KEY_TYPES} />
        <InputField
          label="Name (optional)"
          value={name}
          maxLength={100}
          placeholder="Production server"
          onChange={setName}
        />
        <button type="submit" disabled={action.busy}>
          {action.busy ? 'Creating…' : 'Create key'}
        </button>
      </form>
      <ErrorMessage error={action.error} />
      <Table
        columns={[
          'Key',
          'Name',
          'Type',
          'State',
          'Created',
          <span className="visually-hidden">Actions</span>,
        ]}
      >
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
      </Table>
    </section>
  );
}
