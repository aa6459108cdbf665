import { DataSource } from 'typeorm';
import { verifyDomainForTest } from './support/domains';
import { pollUntil } from './support/poll';
import { SendingTest, startSendingTest } from './support/sending';
import { TestProject } from './support/test-app';

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
const BIG = 800;
const SMALL = 200;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('campaign fairness between projects (e2e)', () => {
  let t: SendingTest;
  let db: DataSource;
  let run = 0;

  beforeAll(async () => {
    t = await startSendingTest(
      'Fairness',
      { EMAIL_RATE_PER_SECOND: String(RATE) },
      { parse: false, keepRaw: false },
    );
    db = t.app.app.get(DataSource);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  /** A project with a verified domain and `contacts` subscribed contacts at `@<tag>.example.org`. */
  async function tenant(
    tag: string,
    contacts: number,
  ): Promise<{ project: TestProject; tag: string }> {
    const project = await t.app.createProject(`Tenant ${tag}`);
    await verifyDomainForTest(t.app, project, `${tag}.test`, t.dns);
    await db.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'c' || i || '@' || $2 || '.example.org', true, '{}',
              now() - interval '1 minute', now() - interval '1 minute'
         FROM generate_series(1, $3::int) AS i`,
      [project.id, tag, contacts],
    );
    return { project, tag };
  }

  async function startCampaign(tenantOf: { project: TestProject; tag: string }): Promise<string> {
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
    const sent = await t.app.request({ method: 'POST', url: `/campaigns/${id}/send`, key });
    expect(sent.status).toBe(202);
    return id;
  }

  /** Arrival times at the sink of one tenant's messages, oldest first. */
  function arrivals(tag: string, since: number): number[] {
    return t.smtp.messages
      .filter((m) => m.receivedAt >= since && m.to[0]?.endsWith(`@${tag}.example.org`))
      .map((m) => m.receivedAt);
  }

  /**
   * Each project's share of the messages that arrived from `from` until the
   * first of them had no more to send.
   */
  function shares(tags: string[], from: number): Record<string, number> {
    const times = Object.fromEntries(tags.map((tag) => [tag, arrivals(tag, from)]));
    const until = Math.min(...tags.map((tag) => times[tag][times[tag].length - 1]));
    const counts = tags.map((tag) => times[tag].filter((at) => at <= until).length);
    const total = counts.reduce((a, b) => a + b, 0);
    return Object.fromEntries(tags.map((tag, i) => [tag, counts[i] / total]));
  }

  async function waitForArrivals(tag: string, since: number, count: number): Promise<void> {
    const got = await pollUntil(
      () => Promise.resolve(arrivals(tag, since).length),
      (n) => n >= count,
      240_000,
      100,
    );
    expect(got).toBeGreaterThanOrEqual(count);
  }

  async function race(headStart: number): Promise<Record<string, number>> {
    run++;
    const big = await tenant(`big${run}`, BIG);
    const small = await tenant(`small${run}`, SMALL);
    const began = Date.now();
    await startCampaign(big);
    await waitForArrivals(big.tag, began, headStart);
    const smallFrom = Date.now();
    await startCampaign(small);
    await waitForArrivals(small.tag, began, SMALL);
    await waitForArrivals(big.tag, began, BIG);
    return shares([big.tag, small.tag], smallFrom);
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
