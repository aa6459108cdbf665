import { lazy, Suspense, useEffect, useState } from 'react';
import { Link } from 'wouter';
import { api, unwrap, type ApiError } from '../api/client';
import type { components } from '../api/schema';
import { Table } from '../list';
import {
  asApiError,
  Badge,
  ErrorMessage,
  PageTitle,
  percent,
  Show,
  Total,
  useLoad,
  when,
} from '../ui';

const loadChart = () => import('./events-chart');
const EventsChart = lazy(loadChart);

type StatsWindow = components['schemas']['StatsWindowResponse'];
type PerMinute = components['schemas']['EventsPerMinuteResponse'];

/** How often the live events-per-minute figure is read again. */
const LIVE_MS = 10_000;

/**
 * Four API calls to show the page (sender health, the 30-day stats, the contacts total, recent
 * events) and a fifth, GET /events/per-minute, for the live chart (read again every 10 s), all at
 * once; with the app's GET /session, six. The emails sent are the stats' figure.
 */
async function loadOverview() {
  const [health, stats, contacts, events] = await Promise.all([
    unwrap(api.GET('/project/health')),
    unwrap(api.GET('/project/stats', { params: { query: { days: 30 } } })),
    unwrap(api.GET('/contacts', { params: { query: { limit: 1 } } })),
    unwrap(api.GET('/events', { params: { query: { limit: 10 } } })),
  ]);
  return {
    health: health.data,
    stats: stats.data,
    contacts: contacts.data,
    events: events.data,
  };
}

/** "▲ 1.20 pts" style change of a rate against the previous window, in words for screen readers. */
function Change({
  now,
  before,
  count,
}: {
  now: number | null;
  before: number | null;
  count?: boolean;
}) {
  if (now === null || before === null) return <span className="muted">no earlier figure</span>;
  const delta = count ? now - before : (now - before) * 100;
  if (Math.abs(delta) < (count ? 0.5 : 0.005)) return <span className="muted">same as before</span>;
  const up = delta > 0;
  const size = count ? Math.abs(delta).toLocaleString() : `${Math.abs(delta).toFixed(2)} pts`;
  return (
    <span className="muted">
      <span aria-hidden="true">{up ? '▲' : '▼'} </span>
      {up ? 'up' : 'down'} {size}
    </span>
  );
}

const RATES: [string, keyof StatsWindow, keyof StatsWindow][] = [
  ['Open rate', 'openRate', 'opened'],
  ['Click rate', 'clickRate', 'clicked'],
  ['Bounce rate', 'bounceRate', 'bounced'],
  ['Complaint rate', 'complaintRate', 'complained'],
];

function Rates({
  days,
  current,
  previous,
}: {
  days: number;
  current: StatsWindow;
  previous: StatsWindow;
}) {
  return (
    <section aria-labelledby="rates-title">
      <h2 id="rates-title">
        Last {days} days <span className="muted">against the {days} before</span>
      </h2>
      <div className="cards">
        <div className="card">
          <h3>Sent</h3>
          <p className="big">
            <Link href="/emails">{current.sent.toLocaleString()}</Link>
          </p>
          <p>
            <Change now={current.sent} before={previous.sent} count />{' '}
            <span className="muted">(was {previous.sent.toLocaleString()})</span>
          </p>
        </div>
        {RATES.map(([label, rate, count]) => (
          <div className="card" key={label}>
            <h3>{label}</h3>
            <p className="big">{percent(current[rate] as number | null)}</p>
            <p>
              <Change
                now={current[rate] as number | null}
                before={previous[rate] as number | null}
              />{' '}
              <span className="muted">
                ({(current[count] as number).toLocaleString()}; was{' '}
                {percent(previous[rate] as number | null)})
              </span>
            </p>
          </div>
        ))}
      </div>
    </section>
  );
}

/** Events per minute over the last hour, read again every 10 s while the page is open. */
function LiveEvents() {
  const [data, setData] = useState<PerMinute>();
  const [error, setError] = useState<ApiError>();
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout>;
    const read = async () => {
      try {
        const answer = await unwrap(
          api.GET('/events/per-minute', { params: { query: { minutes: 60 } } }),
        );
        if (stopped) return;
        setData(answer.data);
        setError(undefined);
      } catch (err) {
        if (!stopped) setError(asApiError(err));
      }
      if (!stopped) timer = setTimeout(read, LIVE_MS);
    };
    void read();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, []);
  const points = data?.points ?? [];
  const last = points.length > 1 ? points[points.length - 2].count : 0;
  const hour = points.reduce((sum, p) => sum + p.count, 0);
  return (
    <section aria-labelledby="live-title">
      <h2 id="live-title">Events per minute</h2>
      <ErrorMessage error={error} />
      {data ? (
        <>
          <p data-testid="events-per-minute">
            <strong>{last.toLocaleString()}</strong> in the last full minute ·{' '}
            {hour.toLocaleString()} in the last hour
          </p>
          <Suspense fallback={<p aria-busy="true">Loading the chart…</p>}>
            <EventsChart points={points} />
          </Suspense>
        </>
      ) : (
        !error && <p aria-busy="true">Loading…</p>
      )}
    </section>
  );
}

export function OverviewPage() {
  const state = useLoad(loadOverview, []);
  // The chart's code is fetched beside the page's data rather than after the first figures.
  useEffect(() => void loadChart(), []);
  return (
    <>
      <PageTitle>Overview</PageTitle>
      <Show state={state}>
        {({ health, stats, contacts, events }) => (
          <>
            <section aria-label="Key figures" className="cards">
              <div className="card">
                <h3>Sender health</h3>
                <p className="big">
                  <Badge value={health.status} />
                </p>
                {health.reason && <p>{health.reason}</p>}
                <p className="muted">
                  Last {health.windowDays} days: {percent(health.bounceRate)} bounces,{' '}
                  {percent(health.complaintRate)} complaints
                </p>
              </div>
              <div className="card">
                <h3>Contacts</h3>
                <p className="big">
                  <Link href="/contacts">
                    <Total page={contacts} />
                  </Link>
                </p>
              </div>
            </section>
            <Rates days={stats.days} current={stats.current} previous={stats.previous} />
            <section aria-labelledby="activity-title">
              <h2 id="activity-title">Recent activity</h2>
              {events.items.length === 0 ? (
                <p>No events yet.</p>
              ) : (
                <Table columns={['Event', 'Contact', 'When']}>
                  {events.items.map((e) => (
                    <tr key={e.id}>
                      <td>{e.name}</td>
                      <td>
                        {e.contactId ? <Link href={`/contacts/${e.contactId}`}>Contact</Link> : '—'}
                      </td>
                      <td>{when(e.createdAt)}</td>
                    </tr>
                  ))}
                </Table>
              )}
            </section>
          </>
        )}
      </Show>
      {/* Outside Show: the live figures are read at once, beside the page's other calls. */}
      <LiveEvents />
    </>
  );
}
