import { useEffect, useState, type FormEvent } from 'react';
import { Link, useLocation } from 'wouter';
import { api, unwrap, type ApiError } from '../api/client';
import type { components } from '../api/schema';
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

type Endpoint = components['schemas']['WebhookResponse'];
type DeliveryStatus = components['schemas']['WebhookDeliveryStatus'];

/** "email.*, contact.unsubscribed" → ["email.*", "contact.unsubscribed"] */
function eventList(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((e) => e.trim())
    .filter(Boolean);
}

/** The signing secret, shown once: the API never shows it again. */
function SecretOnce({ secret, onDone }: { secret: string; onDone: () => void }) {
  return (
    <section className="card" aria-labelledby="secret-title" role="status">
      <h2 id="secret-title">Signing secret</h2>
      <p>
        Store it now: it is not shown again. Your receiver checks the <code>webhook-signature</code>{' '}
        header with it.
      </p>
      <p className="record-row">
        <code data-testid="webhook-secret">{secret}</code>
        <CopyButton text={secret} label="signing secret" />
      </p>
      <button type="button" onClick={onDone}>
        I have stored it
      </button>
    </section>
  );
}

export function WebhooksPage() {
  const paging = useCursor('');
  const state = useLoad(
    () =>
      unwrap(
        api.GET('/webhooks', { params: { query: { limit: 50, cursor: paging.cursor } } }),
      ).then((r) => r.data),
    [paging.cursor],
  );
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState('email.*');
  const [description, setDescription] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  const [created, setCreated] = useState<{ id: string; secret: string }>();

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    setBusy(true);
    try {
      const body = {
        url: url.trim(),
        events: eventList(events),
        ...(description.trim() ? { description: description.trim() } : {}),
      };
      const answer = await unwrap(api.POST('/webhooks', { body }));
      setCreated({ id: answer.data.id, secret: answer.data.secret });
      setUrl('');
      setDescription('');
      state.reload();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <PageTitle>Webhooks</PageTitle>
      {created && <SecretOnce secret={created.secret} onDone={() => setCreated(undefined)} />}
      <form className="filters" onSubmit={create} aria-label="New endpoint">
        <Field label="Endpoint URL">
          {(id) => (
            <input
              id={id}
              type="url"
              value={url}
              required
              placeholder="https://app.example.com/hooks/mailwright"
              onChange={(e) => setUrl(e.target.value)}
            />
          )}
        </Field>
        <Field label="Events (comma-separated; prefix.* or *)">
          {(id) => (
            <input id={id} value={events} required onChange={(e) => setEvents(e.target.value)} />
          )}
        </Field>
        <Field label="Description (optional)">
          {(id) => (
            <input id={id} value={description} onChange={(e) => setDescription(e.target.value)} />
          )}
        </Field>
        <button type="submit" disabled={busy}>
          {busy ? 'Adding…' : 'Add endpoint'}
        </button>
      </form>
      <ErrorMessage error={error} />
      <Show state={state}>
        {(data) => (
          <>
            {data.items.length === 0 ? (
              <p>No webhook endpoints yet.</p>
            ) : (
              <div className="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">URL</th>
                      <th scope="col">Events</th>
                      <th scope="col">State</th>
                      <th scope="col">Created</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.items.map((w) => (
                      <tr key={w.id}>
                        <td>
                          <Link href={`/webhooks/${w.id}`}>
                            <code className="clip">{w.url}</code>
                          </Link>
                          {w.description && <div className="muted">{w.description}</div>}
                        </td>
                        <td>{w.events.join(', ')}</td>
                        <td>
                          <EndpointState endpoint={w} />
                        </td>
                        <td>{when(w.createdAt)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <Pager page={paging.page} data={data} paging={paging} label="Endpoints" />
          </>
        )}
      </Show>
    </>
  );
}

function EndpointState({ endpoint }: { endpoint: Endpoint }) {
  return (
    <>
      <Badge value={endpoint.enabled ? 'Enabled' : 'Disabled'} />
      {endpoint.disabledReason && <div className="muted">{endpoint.disabledReason}</div>}
      {endpoint.failingSince && (
        <div className="muted">failing since {when(endpoint.failingSince)}</div>
      )}
    </>
  );
}

export function WebhookPage({ id }: { id: string }) {
  const state = useLoad(
    () => unwrap(api.GET('/webhooks/{id}', { params: { path: { id } } })).then((r) => r.data),
    [id],
  );
  const [changed, setChanged] = useState<Endpoint>();
  const [error, setError] = useState<ApiError>();
  const [secret, setSecret] = useState<string>();
  const [round, setRound] = useState(0);
  const [, navigate] = useLocation();
  const endpoint = changed ?? state.data;

  const act = async (work: () => Promise<void>) => {
    setError(undefined);
    try {
      await work();
    } catch (err) {
      setError(asApiError(err));
    }
  };
  const sendTest = () =>
    act(async () => {
      await unwrap(api.POST('/webhooks/{id}/test', { params: { path: { id } } }));
      setRound((r) => r + 1);
    });
  const rotate = () =>
    act(async () => {
      if (!window.confirm('Make a new signing secret? The current one stops being used.')) return;
      const answer = await unwrap(
        api.POST('/webhooks/{id}/rotate-secret', { params: { path: { id } } }),
      );
      setSecret(answer.data.secret);
    });
  const remove = () =>
    act(async () => {
      if (!endpoint || !window.confirm(`Delete the endpoint ${endpoint.url} and its deliveries?`))
        return;
      await unwrap(api.DELETE('/webhooks/{id}', { params: { path: { id } } }));
      navigate('/webhooks');
    });

  return (
    <Show state={{ ...state, data: endpoint }}>
      {(w) => (
        <>
          <PageTitle
            actions={
              <>
                <button type="button" onClick={sendTest}>
                  Send test event
                </button>
                <button type="button" onClick={rotate}>
                  New secret
                </button>
                <button type="button" className="danger" onClick={remove}>
                  Delete
                </button>
              </>
            }
          >
            Webhook endpoint
          </PageTitle>
          <p>
            <Link href="/webhooks">All endpoints</Link>
          </p>
          {secret && <SecretOnce secret={secret} onDone={() => setSecret(undefined)} />}
          <ErrorMessage error={error} />
          <EditEndpoint endpoint={w} onSaved={setChanged} />
          <Deliveries endpointId={id} round={round} />
        </>
      )}
    </Show>
  );
}

function EditEndpoint({
  endpoint,
  onSaved,
}: {
  endpoint: Endpoint;
  onSaved: (e: Endpoint) => void;
}) {
  const [url, setUrl] = useState(endpoint.url);
  const [events, setEvents] = useState(endpoint.events.join(', '));
  const [description, setDescription] = useState(endpoint.description ?? '');
  const [enabled, setEnabled] = useState(endpoint.enabled);
  const [error, setError] = useState<ApiError>();
  const [saved, setSaved] = useState(false);

  const save = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    setSaved(false);
    try {
      const answer = await unwrap(
        api.PATCH('/webhooks/{id}', {
          params: { path: { id: endpoint.id } },
          body: {
            url: url.trim(),
            events: eventList(events),
            description: description.trim() || null,
            enabled,
          },
        }),
      );
      onSaved(answer.data);
      setSaved(true);
    } catch (err) {
      setError(asApiError(err));
    }
  };

  return (
    <form onSubmit={save} aria-labelledby="edit-title">
      <h2 id="edit-title">Settings</h2>
      <EndpointState endpoint={endpoint} />
      <Field label="Endpoint URL">
        {(id) => (
          <input id={id} type="url" required value={url} onChange={(e) => setUrl(e.target.value)} />
        )}
      </Field>
      <Field label="Events (comma-separated; prefix.* or *)">
        {(id) => (
          <input id={id} required value={events} onChange={(e) => setEvents(e.target.value)} />
        )}
      </Field>
      <Field label="Description">
        {(id) => (
          <input id={id} value={description} onChange={(e) => setDescription(e.target.value)} />
        )}
      </Field>
      <div className="field">
        <label>
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} />{' '}
          Enabled
        </label>
      </div>
      <div>
        <button type="submit">Save</button> {saved && <span role="status">Saved</span>}
      </div>
      <ErrorMessage error={error} />
    </form>
  );
}

/** Polls while some delivery is still PENDING, so a retry is seen to finish. */
const POLL_MS = 2000;

function Deliveries({ endpointId, round }: { endpointId: string; round: number }) {
  const [status, setStatus] = useState<DeliveryStatus | ''>('');
  const paging = useCursor(status);
  const [tick, setTick] = useState(0);
  const state = useLoad(
    () =>
      unwrap(
        api.GET('/webhooks/{id}/deliveries', {
          params: {
            path: { id: endpointId },
            query: { limit: 20, cursor: paging.cursor, ...(status ? { status } : {}) },
          },
        }),
      ).then((r) => r.data),
    [endpointId, paging.cursor, status, round, tick],
  );
  const [error, setError] = useState<ApiError>();
  const pending = state.data?.items.some((d) => d.status === 'PENDING') ?? false;

  useEffect(() => {
    if (!pending || state.loading) return;
    const timer = setTimeout(() => setTick((t) => t + 1), POLL_MS);
    return () => clearTimeout(timer);
  }, [pending, state.loading, state.data]);

  const retry = async (deliveryId: string) => {
    setError(undefined);
    try {
      await unwrap(
        api.POST('/webhooks/{id}/deliveries/{deliveryId}/retry', {
          params: { path: { id: endpointId, deliveryId } },
        }),
      );
      setTick((t) => t + 1);
    } catch (err) {
      setError(asApiError(err));
    }
  };

  return (
    <section aria-labelledby="deliveries-title">
      <h2 id="deliveries-title">Deliveries</h2>
      <div className="filters">
        <Field label="Status">
          {(id) => (
            <select
              id={id}
              value={status}
              onChange={(e) => setStatus(e.target.value as DeliveryStatus | '')}
            >
              <option value="">Any</option>
              <option value="PENDING">Pending</option>
              <option value="SUCCEEDED">Succeeded</option>
              <option value="FAILED">Failed</option>
            </select>
          )}
        </Field>
        <button type="button" onClick={() => setTick((t) => t + 1)}>
          Refresh
        </button>
      </div>
      <ErrorMessage error={error} />
      <Show state={state}>
        {(data) =>
          data.items.length === 0 ? (
            <p>No deliveries yet. Send a test event to see one.</p>
          ) : (
            <>
              <div className="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Event</th>
                      <th scope="col">Status</th>
                      <th scope="col">Attempts</th>
                      <th scope="col">Response</th>
                      <th scope="col">Last attempt</th>
                      <th scope="col">Next attempt</th>
                      <th scope="col">
                        <span className="visually-hidden">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.items.map((d) => (
                      <tr key={d.id} data-testid="delivery">
                        <td>{d.eventType}</td>
                        <td>
                          <Badge value={d.status} />
                        </td>
                        <td>{d.attempts}</td>
                        <td>
                          {d.responseStatus ?? '—'}
                          {d.lastError && <div className="muted">{d.lastError}</div>}
                        </td>
                        <td>{when(d.lastAttemptAt)}</td>
                        <td>{when(d.nextAttemptAt)}</td>
                        <td>
                          {d.status !== 'SUCCEEDED' && (
                            <button
                              type="button"
                              className="small"
                              onClick={() => retry(d.id)}
                              aria-label={`Retry the ${d.eventType} delivery of ${when(d.createdAt)}`}
                            >
                              Retry
                            </button>
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              <Pager page={paging.page} data={data} paging={paging} label="Deliveries" />
            </>
          )
        }
      </Show>
    </section>
  );
}
