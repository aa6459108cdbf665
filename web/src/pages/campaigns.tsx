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
  ConditionBuilder,
  emptyCondition,
  type ConditionGroup,
  type ConditionNode,
} from '../conditions';
import { InputField, SelectField, useAction } from '../form';
import { PagedTable, usePagedList } from '../list';
import { useEventNames, useSegmentPreview, useSegments } from '../segment-data';
import {
  asApiError,
  Badge,
  ErrorMessage,
  Field,
  PageTitle,
  percent,
  Show,
  useLoad,
  when,
} from '../ui';
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
  const list = usePagedList(
    (cursor) =>
      unwrap(
        api.GET('/campaigns', {
          params: { query: { limit: 50, cursor, status: status || undefined } },
        }),
      ).then((r) => r.data),
    [status],
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
        <SelectField
          label="Status"
          value={status}
          onChange={setStatus}
          choices={STATUSES}
          blank="All"
        />
      </div>
      <PagedTable
        list={list}
        label="Campaigns"
        empty={status ? 'No campaigns match.' : 'No campaigns yet.'}
        columns={['Name', 'Subject', 'Status', 'Recipients', 'Scheduled / started']}
        row={(c) => (
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
        )}
      />
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
  const save = useAction();
  const bodyRef = useRef<HTMLTextAreaElement>(null);
  const [, navigate] = useLocation();
  const templates = useLoad(
    () => unwrap(api.GET('/templates', { params: { query: { limit: 100 } } })).then((r) => r.data),
    [],
  );
  const segments = useSegments();
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

  const submit = (e: FormEvent) => {
    e.preventDefault();
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
    void save.run(async () => {
      const res = campaign
        ? await unwrap(
            api.PATCH('/campaigns/{id}', { params: { path: { id: campaign.id } }, body }),
          )
        : await unwrap(api.POST('/campaigns', { body }));
      navigate(`/campaigns/${res.data.id}`);
    });
  };

  return (
    <>
      <PageTitle>{campaign ? `Edit ${campaign.name}` : 'New campaign'}</PageTitle>
      <p className="muted">
        <Link href={campaign ? `/campaigns/${campaign.id}` : '/campaigns'}>
          {campaign ? 'Back to the campaign' : 'All campaigns'}
        </Link>
      </p>
      <form className="editor-form" onSubmit={submit} aria-label="Campaign">
        <InputField
          label="Campaign name"
          value={draft.name}
          required
          onChange={(v) => set('name', v)}
        />
        <div className="editor">
          <InputField
            label="From address"
            type="email"
            value={draft.from}
            required
            placeholder="news@yourdomain.com"
            onChange={(v) => set('from', v)}
          />
          <InputField
            label="From name (optional)"
            value={draft.fromName}
            onChange={(v) => set('fromName', v)}
          />
        </div>
        <fieldset>
          <legend>Content</legend>
          <div className="editor-form">
            <SelectField
              label="Start from a template (copies its subject and body)"
              value=""
              onChange={copyTemplate}
              blank={
                templates.data
                  ? templates.data.items.length
                    ? 'Choose a template…'
                    : 'No templates yet'
                  : 'Loading templates…'
              }
              choices={(templates.data?.items ?? []).map((t) => [t.id, t.name] as const)}
            />
            <InputField
              label="Subject (Liquid)"
              value={draft.subject}
              required
              onChange={(v) => set('subject', v)}
            />
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
            <SelectField
              label="Segment"
              value={draft.segmentId}
              required
              onChange={(v) => set('segmentId', v)}
              blank={
                segments.data
                  ? segments.data.length
                    ? 'Choose a segment…'
                    : 'No segments yet'
                  : 'Loading segments…'
              }
              choices={(segments.data ?? []).map(
                (s) => [s.id, `${s.name} (${s.memberCount.toLocaleString()} members)`] as const,
              )}
            />
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
              segments={(segments.data ?? []).map((x) => ({ id: x.id, name: x.name }))}
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
        <LiquidErrors error={save.error} onLine={(_, line) => goToLine(bodyRef.current, line)} />
        <div className="actions">
          <button type="submit" disabled={save.busy}>
            {save.busy ? 'Saving…' : campaign ? 'Save changes' : 'Create campaign'}
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
  const conditions: ConditionNode[] = [{ field: 'subscribed', operator: 'equals', value: true }];
  if (type === 'SEGMENT') conditions.push({ field: 'segment', operator: 'in', value: segmentId });
  if (type === 'FILTERED' && filter.conditions.length > 0) conditions.push(filter);
  const asked =
    type === 'SEGMENT' && !segmentId ? undefined : { logic: 'AND' as const, conditions };
  // A filter is typed into: asked 400 ms after the last change, as the segment builder does.
  const preview = useSegmentPreview(asked, type === 'FILTERED' ? 400 : 0);
  // Unlike the builder's count, a count being asked shows no earlier one.
  if (!asked || preview.busy) return { busy: preview.busy };
  return { count: preview.count, error: preview.error, busy: false };
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
          <InputField
            label="Schedule for (your local time)"
            type="datetime-local"
            required
            value={scheduleAt}
            onChange={setScheduleAt}
          />
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
        <InputField
          label="Send a test to (up to 5 addresses)"
          value={testTo}
          required
          placeholder="me@yourdomain.com"
          onChange={setTestTo}
        />
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
  const list = usePagedList(
    (cursor) =>
      unwrap(
        api.GET('/emails', {
          params: {
            query: { campaignId, limit: 50, cursor, [which]: true },
          },
        }),
      ).then((r) => r.data),
    [campaignId, which],
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
      <PagedTable
        list={list}
        label={which === 'opened' ? 'Openers' : 'Clickers'}
        empty={`No one has ${which} yet.`}
        columns={[
          'Recipient',
          which === 'opened' ? 'First opened' : 'First clicked',
          which === 'opened' ? 'Opens' : 'Clicks',
        ]}
        row={(e) => (
          <tr key={e.id}>
            <td>
              <Link href={`/emails/${e.id}`}>{e.to}</Link>
            </td>
            <td>{when(which === 'opened' ? e.openedAt : e.clickedAt)}</td>
            <td>{which === 'opened' ? e.opens : e.clicks}</td>
          </tr>
        )}
      />
    </section>
  );
}
