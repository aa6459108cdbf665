import { useEffect, useState, type FormEvent } from 'react';
import { Link, useLocation } from 'wouter';
import { api, unwrap } from '../api/client';
import type { components } from '../api/schema';
import { InputField, SelectField, useAction } from '../form';
import { PagedTable, usePagedList } from '../list';
import { Badge, CopyButton, ErrorMessage, PageTitle, Show, useLoad, when } from '../ui';

type Endpoint = components['schemas']['WebhookResponse'];
type DeliveryStatus = components['schemas']['WebhookDeliveryStatus'];

/** "email.*, contact.unsubscribed" → ["email.*", "contact.unsubscribed"] */
function eventList(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((e) => e.trim())
    .filter(Boolean);
}

const EVENTS_LABEL = 'Events (comma-separated; prefix.* or *)';

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
  const list = usePagedList(
    (cursor) =>
      unwrap(api.GET('/webhooks', { params: { query: { limit: 50, cursor } } })).then(
        (r) => r.data,
      ),
    [],
  );
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState('email.*');
  const [description, setDescription] = useState('');
  const add = useAction();
  const [created, setCreated] = useState<{ id: string; secret: string }>();

  const create = (e: FormEvent) => {
    e.preventDefault();
    void add.run(async () => {
      const body = {
        url: url.trim(),
        events: eventList(events),
        ...(description.trim() ? { description: description.trim() } : {}),
      };
      const answer = await unwrap(api.POST('/webhooks', { body }));
      setCreated({ id: answer.data.id, secret: answer.data.secret });
      setUrl('');
      setDescription('');
      list.state.reload();
    });
  };

  return (
    <>
      <PageTitle>Webhooks</PageTitle>
      {created && <SecretOnce secret={created.secret} onDone={() => setCreated(undefined)} />}
      <form className="filters" onSubmit={create} aria-label="New endpoint">
        <InputField
          label="Endpoint URL"
          type="url"
          value={url}
          required
          placeholder="https://app.example.com/hooks/mailwright"
          onChange={setUrl}
        />
        <InputField label={EVENTS_LABEL} value={events} required onChange={setEvents} />
        <InputField label="Description (optional)" value={description} onChange={setDescription} />
        <button type="submit" disabled={add.busy}>
          {add.busy ? 'Adding…' : 'Add endpoint'}
        </button>
      </form>
      <ErrorMessage error={add.error} />
      <PagedTable
        list={list}
        label="Endpoints"
        empty="No webhook endpoints yet."
        columns={['URL', 'Events', 'State', 'Created']}
        row={(w) => (
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
        )}
      />
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
  const action = useAction();
  const [secret, setSecret] = useState<string>();
  const [round, setRound] = useState(0);
  const [, navigate] = useLocation();
  const endpoint = changed ?? state.data;

  const sendTest = () =>
    action.run(async () => {
      await unwrap(api.POST('/webhooks/{id}/test', { params: { path: { id } } }));
      setRound((r) => r + 1);
    });
  const rotate = () =>
    action.run(async () => {
      if (!window.confirm('Make a new signing secret? The current one stops being used.')) return;
      const answer = await unwrap(
        api.POST('/webhooks/{id}/rotate-secret', { params: { path: { id } } }),
      );
      setSecret(answer.data.secret);
    });
  const remove = () =>
    action.run(async () => {
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
          <ErrorMessage error={action.error} />
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
  const save = useAction();
  const [saved, setSaved] = useState(false);

  const submit = (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    void save.run(async () => {
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
    });
  };

  return (
    <form onSubmit={submit} aria-labelledby="edit-title">
      <h2 id="edit-title">Settings</h2>
      <EndpointState endpoint={endpoint} />
      <InputField label="Endpoint URL" type="url" required value={url} onChange={setUrl} />
      <InputField label={EVENTS_LABEL} required value={events} onChange={setEvents} />
      <InputField label="Description" value={description} onChange={setDescription} />
      <div className="field">
        <label>
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} />{' '}
          Enabled
        </label>
      </div>
      <div>
        <button type="submit">Save</button> {saved && <span role="status">Saved</span>}
      </div>
      <ErrorMessage error={save.error} />
    </form>
  );
}

/** Polls while some delivery is still PENDING, so a retry is seen to finish. */
const POLL_MS = 2000;

const DELIVERY_STATUSES = [
  ['PENDING', 'Pending'],
  ['SUCCEEDED', 'Succeeded'],
  ['FAILED', 'Failed'],
] as const;

function Deliveries({ endpointId, round }: { endpointId: string; round: number }) {
  const [status, setStatus] = useState<DeliveryStatus | ''>('');
  const [tick, setTick] = useState(0);
  const list = usePagedList(
    (cursor) =>
      unwrap(
        api.GET('/webhooks/{id}/deliveries', {
          params: {
            path: { id: endpointId },
            query: { limit: 20, cursor, ...(status ? { status } : {}) },
          },
        }),
      ).then((r) => r.data),
    [endpointId, status],
    [round, tick],
  );
  const { state } = list;
  const retry = useAction();
  const pending = state.data?.items.some((d) => d.status === 'PENDING') ?? false;

  useEffect(() => {
    if (!pending || state.loading) return;
    const timer = setTimeout(() => setTick((t) => t + 1), POLL_MS);
    return () => clearTimeout(timer);
  }, [pending, state.loading, state.data]);

  const retryDelivery = (deliveryId: string) =>
    retry.run(async () => {
      await unwrap(
        api.POST('/webhooks/{id}/deliveries/{deliveryId}/retry', {
          params: { path: { id: endpointId, deliveryId } },
        }),
      );
      setTick((t) => t + 1);
    });

  return (
    <section aria-labelledby="deliveries-title">
      <h2 id="deliveries-title">Deliveries</h2>
      <div className="filters">
        <SelectField
          label="Status"
          value={status}
          onChange={setStatus}
          choices={DELIVERY_STATUSES}
          blank="Any"
        />
        <button type="button" onClick={() => setTick((t) => t + 1)}>
          Refresh
        </button>
      </div>
      <ErrorMessage error={retry.error} />
      <PagedTable
        list={list}
        label="Deliveries"
        empty="No deliveries yet. Send a test event to see one."
        pagerWhenEmpty={false}
        columns={[
          'Event',
          'Status',
          'Attempts',
          'Response',
          'Last attempt',
          'Next attempt',
          <span className="visually-hidden">Actions</span>,
        ]}
        row={(d) => (
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
                  onClick={() => retryDelivery(d.id)}
                  aria-label={`Retry the ${d.eventType} delivery of ${when(d.createdAt)}`}
                >
                  Retry
                </button>
              )}
            </td>
          </tr>
        )}
      />
    </section>
  );
}
