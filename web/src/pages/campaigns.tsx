import { lazy, Suspense, useEffect, useRef, useState, type FormEvent } from 'react';
import { Link, useLocation } from 'wouter';
import { api, unwrap, type ApiError } from '../api/client';
import type {
  SchemaAudienceType,
  SchemaCampaignResponse,
  SchemaCampaignStatsResponse,
  SchemaCampaignStatus,
} from '../api/schema';
import {
  asApiError,
  Badge,
  ErrorMessage,
  Field,
  PageTitle,
  Pager,
  percent,
  Show,
  useCursor,
  useLoad,
  when,
} from '../ui';
import { ConditionBuilder, emptyCondition, type ConditionGroup } from '../conditions';
import { useEventNames } from './segments';
import { goToLine, LiquidErrors } from './templates';
import './editor.css';

// uPlot is only needed on a campaign's page: its own chunk keeps it out of the initial JavaScript.
const StatsChart = lazy(() => import('./campaign-chart'));

const STATUSES: SchemaCampaignStatus[] = [
  'DRAFT',
  'SCHEDULED',
  'SENDING',
  'PAUSED',
  'SENT',
  'CANCELLED',
];
/** Statuses whose numbers still move; the page polls the stats only while in one of them. */
const LIVE: SchemaCampaignStatus[] = ['SENDING', 'SCHEDULED'];
const POLL_MS = 2000;

export function CampaignsPage() {
  const [status, setStatus] = useState<SchemaCampaignStatus | ''>('');
  const paging = useCursor(status);
  const state = useLoad(
    () =>
      unwrap(
        api.GET('/campaigns', {
          params: { query: { limit: 50, cursor: paging.cursor, status: status || undefined } },
        }),
      ).then((r) => r.data),
    [paging.cursor, status],
  );
  return (
    <>
      <PageTitle
        actions={
          <Link className="button" href="/campaigns/new">
            New campaign
          </Link>
        }
      >
        Campaigns
      </PageTitle>
      <div className="filters">
        <Field label="Status">
          {(id) => (
            <select
              id={id}
              value={status}
              onChange={(e) => setStatus(e.target.value as SchemaCampaignStatus | '')}
            >
              <option value="">All</option>
              {STATUSES.map((s) => (
                <option key={s}>{s}</option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <Show state={state}>
        {(data) => (
          <>
            {data.items.length === 0 ? (
              <p>{status ? 'No campaigns match.' : 'No campaigns yet.'}</p>
            ) : (
              <div className="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Subject</th>
                      <th scope="col">Status</th>
                      <th scope="col">Recipients</th>
                      <th scope="col">Scheduled / started</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.items.map((c) => (
                      <tr key={c.id}>
                        <td>
                          <Link href={`/campaigns/${c.id}`}>{c.name}</Link>
                        </td>
                        <td>{c.subject}</td>
                        <td>
                          <Badge value={c.status} />
                        </td>
                        <td>{c.recipientCount?.toLocaleString() ?? '—'}</td>
                        <td>{when(c.startedAt ?? c.scheduledAt)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <Pager page={paging.page} data={data} paging={paging} label="Campaigns" />
          </>
        )}
      </Show>
    </>
  );
}

interface Draft {
  name: string;
  subject: string;
  body: string;
  from: string;
  fromName: string;
  audienceType: SchemaAudienceType;
  segmentId: string;
  audienceFilter: ConditionGroup;
}

const EMPTY: Draft = {
  name: '',
  subject: '',
  body: '<p>Hello {{ firstName | default: "there" }},</p>\n\n<p><a href="{{ unsubscribeUrl }}">Unsubscribe</a></p>',
  from: '',
  fromName: '',
  audienceType: 'ALL',
  segmentId: '',
  audienceFilter: emptyCondition(),
};

export function NewCampaignPage() {
  return <CampaignEditor />;
}

export function EditCampaignPage({ id }: { id: string }) {
  const state = useLoad(
    () => unwrap(api.GET('/campaigns/{id}', { params: { path: { id } } })).then((r) => r.data),
    [id],
  );
  return <Show state={state}>{(c) => <CampaignEditor key={c.id} campaign={c} />}</Show>;
}

/** Create (no campaign) or edit a DRAFT or SCHEDULED campaign. */
function CampaignEditor({ campaign }: { campaign?: SchemaCampaignResponse }) {
  const [draft, setDraft] = useState<Draft>(
    campaign
      ? {
          name: campaign.name,
          subject: campaign.subject,
          body: campaign.body,
          from: campaign.from,
          fromName: campaign.fromName ?? '',
          audienceType: campaign.audienceType,
          segmentId: campaign.segmentId ?? '',
          audienceFilter: (campaign.audienceFilter as ConditionGroup | null) ?? emptyCondition(),
        }
      : EMPTY,
  );
  const [error, setError] = useState<ApiError>();
  const [saving, setSaving] = useState(false);
  const bodyRef = useRef<HTMLTextAreaElement>(null);
  const [, navigate] = useLocation();
  const templates = useLoad(
    () => unwrap(api.GET('/templates', { params: { query: { limit: 100 } } })).then((r) => r.data),
    [],
  );
  const segments = useLoad(
    () => unwrap(api.GET('/segments', { params: { query: { limit: 100 } } })).then((r) => r.data),
    [],
  );
  const eventNames = useEventNames();
  const count = useAudienceCount(draft.audienceType, draft.segmentId, draft.audienceFilter);
  const set = <K extends keyof Draft>(key: K, value: Draft[K]) =>
    setDraft((d) => ({ ...d, [key]: value }));

  const copyTemplate = (templateId: string) => {
    const t = templates.data?.items.find((x) => x.id === templateId);
    if (!t) return;
    setDraft((d) => ({
      ...d,
      subject: t.subject,
      body: t.body,
      from: d.from || t.from || '',
      fromName: d.fromName || t.fromName || '',
    }));
  };

  const save = async (e: FormEvent) => {
    e.preventDefault();
    setSaving(true);
    setError(undefined);
    const body = {
      name: draft.name.trim(),
      subject: draft.subject,
      body: draft.body,
      from: draft.from.trim(),
      fromName: draft.fromName.trim() || null,
      audienceType: draft.audienceType,
      segmentId: draft.audienceType === 'SEGMENT' ? draft.segmentId || null : null,
      audienceFilter: draft.audienceType === 'FILTERED' ? draft.audienceFilter : null,
    };
    try {
      const res = campaign
        ? await unwrap(
            api.PATCH('/campaigns/{id}', { params: { path: { id: campaign.id } }, body }),
          )
        : await unwrap(api.POST('/campaigns', { body }));
      navigate(`/campaigns/${res.data.id}`);
    } catch (err) {
      setError(asApiError(err));
      setSaving(false);
    }
  };

  return (
    <>
      <PageTitle>{campaign ? `Edit ${campaign.name}` : 'New campaign'}</PageTitle>
      <p className="muted">
        <Link href={campaign ? `/campaigns/${campaign.id}` : '/campaigns'}>
          {campaign ? 'Back to the campaign' : 'All campaigns'}
        </Link>
      </p>
      <form className="editor-form" onSubmit={save} aria-label="Campaign">
        <Field label="Campaign name">
          {(id) => (
            <input
              id={id}
              value={draft.name}
              required
              onChange={(e) => set('name', e.target.value)}
            />
          )}
        </Field>
        <div className="editor">
          <Field label="From address">
            {(id) => (
              <input
                id={id}
                type="email"
                value={draft.from}
                required
                placeholder="news@yourdomain.com"
                onChange={(e) => set('from', e.target.value)}
              />
            )}
          </Field>
          <Field label="From name (optional)">
            {(id) => (
              <input
                id={id}
                value={draft.fromName}
                onChange={(e) => set('fromName', e.target.value)}
              />
            )}
          </Field>
        </div>
        <fieldset>
          <legend>Content</legend>
          <div className="editor-form">
            <Field label="Start from a template (copies its subject and body)">
              {(id) => (
                <select id={id} value="" onChange={(e) => copyTemplate(e.target.value)}>
                  <option value="">
                    {templates.data
                      ? templates.data.items.length
                        ? 'Choose a template…'
                        : 'No templates yet'
                      : 'Loading templates…'}
                  </option>
                  {templates.data?.items.map((t) => (
                    <option key={t.id} value={t.id}>
                      {t.name}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <Field label="Subject (Liquid)">
              {(id) => (
                <input
                  id={id}
                  value={draft.subject}
                  required
                  onChange={(e) => set('subject', e.target.value)}
                />
              )}
            </Field>
            <Field label="Body (HTML with Liquid)">
              {(id) => (
                <textarea
                  id={id}
                  ref={bodyRef}
                  className="code"
                  rows={12}
                  spellCheck={false}
                  value={draft.body}
                  required
                  onChange={(e) => set('body', e.target.value)}
                />
              )}
            </Field>
          </div>
        </fieldset>
        <fieldset>
          <legend>Audience</legend>
          <label className="radio">
            <input
              type="radio"
              name="audience"
              checked={draft.audienceType === 'ALL'}
              onChange={() => set('audienceType', 'ALL')}
            />
            All subscribed contacts
          </label>
          <label className="radio">
            <input
              type="radio"
              name="audience"
              checked={draft.audienceType === 'SEGMENT'}
              onChange={() => set('audienceType', 'SEGMENT')}
            />
            A segment
          </label>
          {draft.audienceType === 'SEGMENT' && (
            <Field label="Segment">
              {(id) => (
                <select
                  id={id}
                  value={draft.segmentId}
                  required
                  onChange={(e) => set('segmentId', e.target.value)}
                >
                  <option value="">
                    {segments.data
                      ? segments.data.items.length
                        ? 'Choose a segment…'
                        : 'No segments yet'
                      : 'Loading segments…'}
                  </option>
                  {segments.data?.items.map((s) => (
                    <option key={s.id} value={s.id}>
                      {s.name} ({s.memberCount.toLocaleString()} members)
                    </option>
                  ))}
                </select>
              )}
            </Field>
          )}
          <label className="radio">
            <input
              type="radio"
              name="audience"
              checked={draft.audienceType === 'FILTERED'}
              onChange={() => set('audienceType', 'FILTERED')}
            />
            Contacts matching a filter
          </label>
          {draft.audienceType === 'FILTERED' && (
            <ConditionBuilder
              value={draft.audienceFilter}
              onChange={(next) => set('audienceFilter', next)}
              segments={(segments.data?.items ?? []).map((x) => ({ id: x.id, name: x.name }))}
              eventNames={eventNames}
              label="Audience filter"
            />
          )}
          <ErrorMessage error={segments.error} />
          <p role="status" aria-busy={count.busy}>
            {count.error
              ? `Recipient count unavailable: ${count.error.message}`
              : count.count === undefined
                ? draft.audienceType === 'SEGMENT' && !draft.segmentId
                  ? 'Choose a segment to see its recipients.'
                  : 'Counting recipients…'
                : `${count.count.toLocaleString()} subscribed recipients now`}
          </p>
        </fieldset>
        <LiquidErrors error={error} onLine={(_, line) => goToLine(bodyRef.current, line)} />
        <div className="actions">
          <button type="submit" disabled={saving}>
            {saving ? 'Saving…' : campaign ? 'Save changes' : 'Create campaign'}
          </button>
        </div>
      </form>
    </>
  );
}

/**
 * The audience's size now, asked of POST /segments/preview: subscribed contacts, of the chosen
 * segment when there is one (suppressed contacts are left out later, at send).
 */
function useAudienceCount(type: SchemaAudienceType, segmentId: string, filter: ConditionGroup) {
  const [state, setState] = useState<{ count?: number; error?: ApiError; busy: boolean }>({
    busy: false,
  });
  // The filter as text: a new object with the same condition asks nothing again.
  const filterText = JSON.stringify(filter);
  useEffect(() => {
    if (type === 'SEGMENT' && !segmentId) {
      setState({ busy: false });
      return;
    }
    const conditions: Record<string, unknown>[] = [
      { field: 'subscribed', operator: 'equals', value: true },
    ];
    if (type === 'SEGMENT') conditions.push({ field: 'segment', operator: 'in', value: segmentId });
    const group = JSON.parse(filterText) as ConditionGroup;
    if (type === 'FILTERED' && group.conditions.length > 0) conditions.push(group);
    let current = true;
    setState({ busy: true });
    // A filter is typed into: ask 400 ms after the last change, as the segment builder does.
    const timer = setTimeout(
      () =>
        unwrap(
          api.POST('/segments/preview', { body: { condition: { logic: 'AND', conditions } } }),
        ).then(
          (r) => current && setState({ count: r.data.count, busy: false }),
          (err: unknown) => current && setState({ error: asApiError(err), busy: false }),
        ),
      type === 'FILTERED' ? 400 : 0,
    );
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [type, segmentId, filterText]);
  return state;
}

export interface Sample {
  at: number;
  sent: number;
  opened: number;
  clicked: number;
}

export function CampaignPage({ id }: { id: string }) {
  const campaign = useLoad(
    () => unwrap(api.GET('/campaigns/{id}', { params: { path: { id } } })).then((r) => r.data),
    [id],
  );
  const [current, setCurrent] = useState<SchemaCampaignResponse>();
  const c = current ?? campaign.data;
  // The stats are read beside the campaign, not after it; an action's new status reads them again.
  const { stats, samples, error: statsError } = useLiveStats(id, current?.status, c?.startedAt);
  // The stats carry the status: when it changes (SENDING → SENT), the campaign is read again.
  useEffect(() => {
    if (c && stats && stats.status !== c.status) {
      unwrap(api.GET('/campaigns/{id}', { params: { path: { id } } })).then(
        (r) => setCurrent(r.data),
        () => undefined,
      );
    }
  }, [stats?.status]);

  return (
    <Show state={{ ...campaign, data: c }}>
      {(c) => (
        <>
          <PageTitle>{c.name}</PageTitle>
          <p className="muted">
            <Link href="/campaigns">All campaigns</Link>
          </p>
          <p role="status">
            Status: <Badge value={stats?.status ?? c.status} />
            {c.scheduledAt && c.status === 'SCHEDULED' && <> · sends {when(c.scheduledAt)}</>}
            {c.startedAt && <> · started {when(c.startedAt)}</>}
            {c.finishedAt && <> · finished {when(c.finishedAt)}</>}
          </p>
          <Actions campaign={c} onChange={setCurrent} />
          <dl className="facts">
            <dt>Subject</dt>
            <dd>{c.subject}</dd>
            <dt>From</dt>
            <dd>{c.fromName ? `${c.fromName} <${c.from}>` : c.from}</dd>
            <dt>Audience</dt>
            <dd>
              {c.audienceType === 'ALL'
                ? 'All subscribed contacts'
                : c.audienceType === 'SEGMENT'
                  ? 'A segment'
                  : 'A filter'}
              {c.recipientCount !== null && <> · {c.recipientCount.toLocaleString()} recipients</>}
            </dd>
          </dl>
          <h2>Stats</h2>
          <ErrorMessage error={statsError} />
          {stats ? <StatsView stats={stats} /> : <p aria-busy="true">Loading stats…</p>}
          {samples.length >= 2 ? (
            <Suspense fallback={<p>Loading the chart…</p>}>
              <StatsChart samples={samples} />
            </Suspense>
          ) : (
            <p className="muted">
              The chart of sent, opened and clicked draws while this page watches the campaign send.
            </p>
          )}
          {c.status !== 'DRAFT' && c.status !== 'SCHEDULED' && <Recipients campaignId={c.id} />}
        </>
      )}
    </Show>
  );
}

/**
 * GET /campaigns/{id}/stats now, then every 2 s while the stats say SENDING or SCHEDULED; again
 * from the start when `status` (the campaign after an action on this page) changes.
 */
function useLiveStats(
  id: string,
  status: SchemaCampaignStatus | undefined,
  startedAt: string | null | undefined,
) {
  const [stats, setStats] = useState<SchemaCampaignStatsResponse>();
  const [samples, setSamples] = useState<Sample[]>([]);
  // The chart starts where sending did (nothing sent yet); later points are what the polls read.
  const origin: Sample[] = startedAt
    ? [{ at: new Date(startedAt).getTime() / 1000, sent: 0, opened: 0, clicked: 0 }]
    : [];
  const [error, setError] = useState<ApiError>();
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      try {
        const s = (await unwrap(api.GET('/campaigns/{id}/stats', { params: { path: { id } } })))
          .data;
        if (stopped) return;
        setStats(s);
        setError(undefined);
        if (s.status !== 'DRAFT' && s.status !== 'SCHEDULED') {
          setSamples((xs) => [
            ...xs,
            { at: Date.now() / 1000, sent: s.sent, opened: s.opened, clicked: s.clicked },
          ]);
        }
        if (LIVE.includes(s.status)) timer = setTimeout(tick, POLL_MS);
      } catch (err) {
        if (stopped) return;
        setError(asApiError(err));
        // A failed read is tried again: a live page should not give up on one error.
        timer = setTimeout(tick, POLL_MS * 2);
      }
    };
    void tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
    // Restarts after Send, Pause, Resume or Cancel, and when the stats saw the status change.
  }, [id, status]);
  return {
    stats,
    samples: origin.length && samples.length ? [...origin, ...samples] : samples,
    error,
  };
}

function StatsView({ stats }: { stats: SchemaCampaignStatsResponse }) {
  const done =
    stats.sent +
    stats.failed +
    stats.bounced +
    stats.complained +
    stats.suppressed +
    stats.cancelled;
  const cards: [string, number, string?][] = [
    ['Recipients', stats.recipients],
    ['Queued', stats.queued + stats.sending],
    ['Sent', stats.sent],
    ['Failed', stats.failed],
    ['Bounced', stats.bounced, percent(stats.bounceRate)],
    ['Suppressed', stats.suppressed],
    ['Opened', stats.opened, percent(stats.openRate)],
    ['Clicked', stats.clicked, percent(stats.clickRate)],
    ['Unsubscribed', stats.unsubscribed, percent(stats.unsubscribeRate)],
  ];
  return (
    <>
      {stats.recipients > 0 && (
        <div className="field">
          <label htmlFor="campaign-progress">
            Delivered or settled: {done.toLocaleString()} of {stats.recipients.toLocaleString()}
          </label>
          <progress
            id="campaign-progress"
            className="progress"
            max={stats.recipients}
            value={done}
          />
        </div>
      )}
      <div className="cards" aria-label="Campaign stats">
        {cards.map(([label, n, rate]) => (
          <div className="card" key={label}>
            <h3>{label}</h3>
            <p className="big">{n.toLocaleString()}</p>
            {rate && <p className="muted">{rate}</p>}
          </div>
        ))}
      </div>
    </>
  );
}

function Actions({
  campaign: c,
  onChange,
}: {
  campaign: SchemaCampaignResponse;
  onChange: (c: SchemaCampaignResponse) => void;
}) {
  const [error, setError] = useState<ApiError>();
  const [busy, setBusy] = useState('');
  const [note, setNote] = useState('');
  const [testTo, setTestTo] = useState('');
  const [scheduleAt, setScheduleAt] = useState('');
  const [, navigate] = useLocation();
  const id = c.id;
  const path = { params: { path: { id } } };

  const run = async (
    label: string,
    call: () => Promise<{ data: SchemaCampaignResponse } | void>,
  ) => {
    setBusy(label);
    setError(undefined);
    setNote('');
    try {
      const res = await call();
      if (res) onChange(res.data);
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy('');
    }
  };

  const testSend = (e: FormEvent) => {
    e.preventDefault();
    const emails = testTo
      .split(/[\s,;]+/)
      .map((x) => x.trim())
      .filter(Boolean);
    void run('test', async () => {
      const res = await unwrap(api.POST('/campaigns/{id}/test', { ...path, body: { emails } }));
      setNote(`Test sent to ${res.data.emails.map((m) => m.to).join(', ')}.`);
    });
  };

  const schedule = (e: FormEvent) => {
    e.preventDefault();
    const at = new Date(scheduleAt);
    if (Number.isNaN(at.getTime())) return;
    void run('schedule', () =>
      unwrap(
        api.POST('/campaigns/{id}/send', { ...path, body: { scheduledFor: at.toISOString() } }),
      ),
    );
  };

  const editable = c.status === 'DRAFT' || c.status === 'SCHEDULED';
  return (
    <section aria-label="Actions">
      <div className="actions">
        {editable && (
          <Link className="button" href={`/campaigns/${id}/edit`}>
            Edit
          </Link>
        )}
        {editable && (
          <button
            type="button"
            disabled={!!busy}
            onClick={() => {
              if (window.confirm(`Send “${c.name}” to its audience now?`))
                void run('send', () =>
                  unwrap(api.POST('/campaigns/{id}/send', { ...path, body: {} })),
                );
            }}
          >
            {busy === 'send' ? 'Starting…' : 'Send now'}
          </button>
        )}
        {c.status === 'SENDING' && (
          <button
            type="button"
            disabled={!!busy}
            onClick={() => run('pause', () => unwrap(api.POST('/campaigns/{id}/pause', path)))}
          >
            {busy === 'pause' ? 'Pausing…' : 'Pause'}
          </button>
        )}
        {c.status === 'PAUSED' && (
          <button
            type="button"
            disabled={!!busy}
            onClick={() => run('resume', () => unwrap(api.POST('/campaigns/{id}/resume', path)))}
          >
            {busy === 'resume' ? 'Resuming…' : 'Resume'}
          </button>
        )}
        {c.status === 'SCHEDULED' && (
          <button
            type="button"
            disabled={!!busy}
            onClick={() =>
              run('unschedule', () =>
                unwrap(api.PATCH('/campaigns/{id}', { ...path, body: { scheduledAt: null } })),
              )
            }
          >
            Back to draft
          </button>
        )}
        {(c.status === 'SCHEDULED' || c.status === 'SENDING' || c.status === 'PAUSED') && (
          <button
            type="button"
            className="danger"
            disabled={!!busy}
            onClick={() => {
              if (window.confirm(`Cancel “${c.name}”? Emails not yet sent will never be sent.`))
                void run('cancel', () => unwrap(api.POST('/campaigns/{id}/cancel', path)));
            }}
          >
            {busy === 'cancel' ? 'Cancelling…' : 'Cancel campaign'}
          </button>
        )}
        {c.status === 'DRAFT' && (
          <button
            type="button"
            className="danger"
            disabled={!!busy}
            onClick={() => {
              if (window.confirm(`Delete “${c.name}”?`))
                void run('delete', async () => {
                  await unwrap(api.DELETE('/campaigns/{id}', path));
                  navigate('/campaigns');
                });
            }}
          >
            Delete
          </button>
        )}
      </div>
      {editable && (
        <form className="filters" onSubmit={schedule}>
          <Field label="Schedule for (your local time)">
            {(fid) => (
              <input
                id={fid}
                type="datetime-local"
                required
                value={scheduleAt}
                onChange={(e) => setScheduleAt(e.target.value)}
              />
            )}
          </Field>
          <button type="submit" disabled={!!busy}>
            {busy === 'schedule'
              ? 'Scheduling…'
              : c.status === 'SCHEDULED'
                ? 'Reschedule'
                : 'Schedule'}
          </button>
        </form>
      )}
      <form className="filters" onSubmit={testSend}>
        <Field label="Send a test to (up to 5 addresses)">
          {(fid) => (
            <input
              id={fid}
              value={testTo}
              required
              placeholder="me@yourdomain.com"
              onChange={(e) => setTestTo(e.target.value)}
            />
          )}
        </Field>
        <button type="submit" disabled={!!busy}>
          {busy === 'test' ? 'Sending test…' : 'Send test'}
        </button>
      </form>
      {note && <p role="status">{note}</p>}
      <ErrorMessage error={error} />
    </section>
  );
}

/** Who opened, who clicked: the campaign's email records filtered by GET /emails opened/clicked. */
function Recipients({ campaignId }: { campaignId: string }) {
  const [which, setWhich] = useState<'opened' | 'clicked'>('opened');
  const paging = useCursor(which);
  const state = useLoad(
    () =>
      unwrap(
        api.GET('/emails', {
          params: {
            query: { campaignId, limit: 50, cursor: paging.cursor, [which]: true },
          },
        }),
      ).then((r) => r.data),
    [campaignId, which, paging.cursor],
  );
  return (
    <section aria-labelledby="recipients-title">
      <h2 id="recipients-title">Recipients who engaged</h2>
      <div className="tabs" role="group" aria-label="Show">
        {(['opened', 'clicked'] as const).map((w) => (
          <button key={w} type="button" aria-pressed={which === w} onClick={() => setWhich(w)}>
            {w === 'opened' ? 'Opened' : 'Clicked'}
          </button>
        ))}
      </div>
      <Show state={state}>
        {(data) => (
          <>
            {data.items.length === 0 ? (
              <p>No one has {which} yet.</p>
            ) : (
              <div className="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Recipient</th>
                      <th scope="col">{which === 'opened' ? 'First opened' : 'First clicked'}</th>
                      <th scope="col">{which === 'opened' ? 'Opens' : 'Clicks'}</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.items.map((e) => (
                      <tr key={e.id}>
                        <td>
                          <Link href={`/emails/${e.id}`}>{e.to}</Link>
                        </td>
                        <td>{when(which === 'opened' ? e.openedAt : e.clickedAt)}</td>
                        <td>{which === 'opened' ? e.opens : e.clicks}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <Pager
              page={paging.page}
              data={data}
              paging={paging}
              label={which === 'opened' ? 'Openers' : 'Clickers'}
            />
          </>
        )}
      </Show>
    </section>
  );
}
