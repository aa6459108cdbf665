import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { verifyDomainForTest } from './support/domains';
import { pollUntil } from './support/poll';
import { ROOT } from './support/processes';
import { SendingTest, startSendingTest } from './support/sending';
import { ServiceCluster } from './support/services';
import { TEST_REDIS_URL, TestProject } from './support/test-app';

/**
 * Campaigns of different projects sending at the same time share
 * EMAIL_RATE_PER_SECOND: none gets less than half of an equal share (contract,
 * "Tenant safety and limits"). Measured at the SMTP sink: from the moment the
 * later campaign was sent until the first of them has all its mail delivered,
 * each project's messages are counted; with two projects each must have at
 * least a quarter of them. The rate is low enough that the run lasts seconds,
 * so the feed's backlog, not the machine's speed, decides who goes first.
 */
const RATE = 40;
/**
 * Volumes: the big audience is several times the feed's backlog (a second's worth of RATE, at least
 * 50 jobs), so a later campaign queued behind its whole audience would get nothing of the window;
 * the small one is twice that backlog, so its share is measured past the jobs already waiting.
 * Larger audiences only make the run longer.
 */
const BIG = 400;
const SMALL = 100;
/**
 * The later two of the three projects: the third must start while the second has most of its
 * audience left, and have enough of its own after the backlog it finds for its share to show (at
 * SMALL it came close to the bound of 1/6).
 */
const LATER = 200;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Tenant {
  project: TestProject;
  /** Its contacts are `c<i>@<tag>.example.org`, its sender domain `<tag>.test`. */
  tag: string;
}

/** The helpers of a fairness run against one test world (its app, SMTP sink, database). */
function fairness(world: () => SendingTest) {
  let made = 0;

  /** A project with a verified domain and `contacts` subscribed contacts. */
  async function tenant(contacts: number): Promise<Tenant> {
    const t = world();
    const tag = `t${++made}`;
    const project = await t.app.createProject(`Tenant ${tag}`);
    await verifyDomainForTest(t.app, project, `${tag}.test`, t.dns);
    await t.app.app.get(DataSource).query(
      `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'c' || i || '@' || $2 || '.example.org', true, '{}',
              now() - interval '1 minute', now() - interval '1 minute'
         FROM generate_series(1, $3::int) AS i`,
      [project.id, tag, contacts],
    );
    return { project, tag };
  }

  /** Creates the tenant's campaign to all its contacts and sends it; answers when it was sent. */
  async function startCampaign(tenantOf: Tenant): Promise<number> {
    const t = world();
    const key = tenantOf.project.secretKey;
    const created = await t.app.request({
      method: 'POST',
      url: '/campaigns',
      key,
      body: {
        name: `News of ${tenantOf.tag}`,
        subject: 'News',
        body: '<p>Hello {{ contact.email }}</p>',
        from: `news@${tenantOf.tag}.test`,
        audienceType: 'ALL',
      },
    });
    expect(created.status).toBe(201);
    const id = (created.body.data as Json).id as string;
    const sentAt = Date.now();
    const sent = await t.app.request({ method: 'POST', url: `/campaigns/${id}/send`, key });
    expect(sent.status).toBe(202);
    return sentAt;
  }

  /** Arrival times at the sink of one tenant's messages, oldest first. */
  function arrivals(tenantOf: Tenant): number[] {
    return world()
      .smtp.messages.filter((m) => m.to[0]?.endsWith(`@${tenantOf.tag}.example.org`))
      .map((m) => m.receivedAt);
  }

  async function waitForArrivals(tenantOf: Tenant, count: number): Promise<void> {
    const got = await pollUntil(
      () => Promise.resolve(arrivals(tenantOf).length),
      (n) => n >= count,
      240_000,
      100,
    );
    expect(got).toBeGreaterThanOrEqual(count);
  }

  /**
   * Each tenant's share of the messages that arrived from `from` (the last
   * campaign's send) until the first of them had no more to send: the window
   * in which all were sending.
   */
  function shares(tenants: Tenant[], from: number): Record<string, number> {
    const times = tenants.map((x) => arrivals(x).filter((at) => at >= from));
    // A tenant with nothing in the window had no share of it (not NaN).
    if (times.some((list) => list.length === 0))
      return Object.fromEntries(tenants.map((x, i) => [x.tag, times[i].length > 0 ? 1 : 0]));
    const until = Math.min(...times.map((list) => list[list.length - 1]));
    const counts = times.map((list) => list.filter((at) => at <= until).length);
    const total = counts.reduce((a, b) => a + b, 0);
    return Object.fromEntries(tenants.map((x, i) => [x.tag, counts[i] / total]));
  }

  return { tenant, startCampaign, waitForArrivals, shares };
}

describe('campaign fairness between projects (e2e)', () => {
  let t: SendingTest;
  const { tenant, startCampaign, waitForArrivals, shares } = fairness(() => t);

  beforeAll(async () => {
    t = await startSendingTest(
      'Fairness',
      { EMAIL_RATE_PER_SECOND: String(RATE) },
      { parse: false, keepRaw: false },
    );
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  /** A big campaign first; a small one of another project once `headStart` of the big one's messages arrived. */
  async function race(headStart: number): Promise<Record<string, number>> {
    const big = await tenant(BIG);
    const small = await tenant(SMALL);
    await startCampaign(big);
    await waitForArrivals(big, headStart);
    const smallFrom = await startCampaign(small);
    await waitForArrivals(small, SMALL);
    await waitForArrivals(big, BIG);
    return shares([big, small], smallFrom);
  }

  it('a campaign sent a moment after another project began its own gets at least half of an equal share', async () => {
    const measured = await race(1);
    console.log('shares, second campaign a moment later:', measured);
    for (const share of Object.values(measured)) expect(share).toBeGreaterThanOrEqual(0.25);
  }, 300_000);

  it('a campaign sent while another project has a deep backlog gets at least half of an equal share', async () => {
    const measured = await race(BIG / 3);
    console.log('shares, second campaign after a head start:', measured);
    for (const share of Object.values(measured)) expect(share).toBeGreaterThanOrEqual(0.25);
  }, 300_000);
});

/**
 * The same rule with the campaigns run by two worker processes (real `node
 * dist/main.js` children sharing the database and queue prefix; the API in
 * process with APP_ROLE=api) and three projects starting at different times.
 */
describe('campaign fairness across worker processes (e2e)', () => {
  let t: SendingTest;
  const { tenant, startCampaign, waitForArrivals, shares } = fairness(() => t);
  const cluster = new ServiceCluster(
    () => ({
      DATABASE_URL: t.db.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: t.prefix,
      SMTP_URL: t.smtp.url,
      DNS_SERVERS: t.dns.address,
      APP_SECRET: 'test-secret-test-secret-test-secret-0123456789',
      PUBLIC_URL: 'https://mail.example.test',
      EMAIL_RATE_PER_SECOND: String(RATE),
      MAIL_OUTBOX_DIR: join(mkdtempSync(join(tmpdir(), 'mw-fair-')), 'outbox'),
    }),
    ROOT,
  );

  beforeAll(async () => {
    t = await startSendingTest(
      'Fairness across workers',
      { APP_ROLE: 'api', EMAIL_RATE_PER_SECOND: String(RATE) },
      { parse: false, keepRaw: false },
    );
  }, 60_000);

  afterAll(async () => {
    await cluster.killAll();
    await t?.close();
  });

  it('three projects started at different times each get at least half of an equal share', async () => {
    await cluster.startWorker({}, 90_000);
    await cluster.startWorker({}, 90_000);
    const first = await tenant(BIG);
    const second = await tenant(LATER);
    const third = await tenant(LATER);
    await startCampaign(first);
    await waitForArrivals(first, 1);
    await startCampaign(second);
    // The third starts while the second still has most of its audience to send (waiting on the first
    // instead let the second finish first on some runs: no window with all three sending).
    await waitForArrivals(second, LATER / 4);
    const lastFrom = await startCampaign(third);
    await waitForArrivals(second, LATER);
    await waitForArrivals(third, LATER);
    await waitForArrivals(first, BIG);
    const measured = shares([first, second, third], lastFrom);
    console.log('shares, three projects on two workers:', measured);
    for (const share of Object.values(measured)) expect(share).toBeGreaterThanOrEqual(1 / 6);
  }, 400_000);
});
