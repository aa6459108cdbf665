import { DataSource } from 'typeorm';
import { HttpReceiver, startHttpReceiver } from './support/http-receiver';
import { runCli } from './support/processes';
import { TEST_REDIS_URL } from './support/test-app';
import { pollUntil } from './support/poll';
import { SendingTest, startSendingTest, waitForEmailStatus } from './support/sending';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * The project's contacts, each campaign's audience. The thresholds apply from 100 sent on; the
 * bounces are reported from 150 sent, so the pause comes while most of the audience is still
 * queued. A larger audience only takes longer to send.
 */
const AUDIENCE = 500;
/** Hard bounces reported: 13% of the audience, past the 10% pause once all of it is sent. */
const BOUNCES = 65;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Sender health end to end: a campaign of 500 whose hard bounces (through
 * the policy, POST /bounces) pass 12% pauses the project and the campaign,
 * nothing more of it reaches SMTP, marketing mail is refused and
 * transactional mail still goes; the operator's resume and the campaign's
 * resume finish it. Then pause and resume by hand, and cancel from PAUSED.
 */
describe('sender health (e2e)', () => {
  let t: SendingTest;
  let db: DataSource;
  let receiver: HttpReceiver;
  const req = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) =>
    t.app.request({ method, url, key: t.project.secretKey, body });
  const campaign = async (id: string) => (await req('GET', `/campaigns/${id}`)).body.data as Json;
  const stats = async (id: string) =>
    (await req('GET', `/campaigns/${id}/stats`)).body.data as Json;
  const health = async () => (await req('GET', '/project/health')).body.data as Json;
  const waitForCampaign = (id: string, statuses: string[], timeoutMs = 60_000) =>
    pollUntil(
      () => campaign(id),
      (c) => statuses.includes(c.status),
      timeoutMs,
      100,
    );

  async function startCampaign(name: string): Promise<string> {
    const created = await req('POST', '/campaigns', {
      name,
      subject: 'News',
      body: '<p>News</p>',
      from: 'news@acme.test',
      audienceType: 'ALL',
    });
    expect(created.status).toBe(201);
    const sent = await req('POST', `/campaigns/${created.body.data.id}/send`, {});
    expect(sent.status).toBe(202);
    return created.body.data.id as string;
  }

  beforeAll(async () => {
    // 40 messages a second: the 500 take over 12 s, and the bounces (reported faster than mail
    // goes out: they catch up with 10% of it at more than 4 reports a second) pass the thresholds
    // in the middle.
    t = await startSendingTest('Sender health', {
      EMAIL_RATE_PER_SECOND: '40',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      RECOVERY_EVERY_MS: '1000',
    });
    db = t.app.app.get(DataSource);
    receiver = await startHttpReceiver();
    await db.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'r' || lpad(i::text, 4, '0') || '@example.org', true, '{}', now() - interval '1 minute', now()
         FROM generate_series(1, $2::int) AS i`,
      [t.project.id, AUDIENCE],
    );
  }, 60_000);

  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  it('12% hard bounces pause the project and its campaign; marketing 403, transactional 200; resume finishes it', async () => {
    const hook = await req('POST', '/webhooks', {
      url: `${receiver.url}/health`,
      events: ['project.*'],
    });
    expect(hook.status).toBe(201);
    expect(await health()).toMatchObject({ windowDays: 7, status: 'HEALTHY', reason: null });

    const id = await startCampaign('Big');
    // Enough accepted that the thresholds apply, well before the end.
    await pollUntil(
      () => stats(id),
      (s) => s.sent >= 150,
      30_000,
      100,
    );
    const sentIds: string[] = [];
    for (let cursor: string | null = null; sentIds.length < BOUNCES;) {
      const page = (
        await req(
          'GET',
          `/emails?campaignId=${id}&status=SENT&limit=100${cursor ? `&cursor=${cursor}` : ''}`,
        )
      ).body.data as Json;
      sentIds.push(...page.items.map((e: Json) => e.id as string));
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    expect(sentIds.length).toBeGreaterThanOrEqual(BOUNCES);
    const bounced = sentIds.slice(0, BOUNCES);
    for (let i = 0; i < bounced.length; i += 5) {
      const answers = await Promise.all(
        bounced
          .slice(i, i + 5)
          .map((emailId) => req('POST', '/bounces', { emailId, type: 'hard', status: '5.1.1' })),
      );
      for (const res of answers) expect(res.body.data.outcome).toBe('applied');
    }

    const paused = await health();
    expect(paused).toMatchObject({ status: 'PAUSED', bounced: BOUNCES });
    expect(paused.reason).toMatch(/^bounce rate/);
    expect(paused.pausedAt).not.toBeNull();
    expect(paused.bounceRate).toBeGreaterThanOrEqual(0.1);
    expect((await campaign(id)).status).toBe('PAUSED');

    // Nothing more of it reaches SMTP (what was in the SMTP session at the pause settles first).
    await sleep(1500);
    const settled = await stats(id);
    const accepted = t.smtp.accepted;
    await sleep(3000);
    expect(t.smtp.accepted).toBe(accepted);
    expect(await stats(id)).toEqual(settled);
    expect(settled.queued).toBeGreaterThan(0);
    expect(settled.sent + settled.queued).toBeLessThanOrEqual(AUDIENCE);

    // Events: a warning on the way up, then the pause; both to webhooks.
    for (const name of ['project.health_warning', 'project.sending_paused']) {
      const items = (await req('GET', `/events?name=${name}`)).body.data.items as Json[];
      expect({ name, count: items.length, contactId: items[0]?.contactId }).toEqual({
        name,
        count: 1,
        contactId: null,
      });
    }
    await pollUntil(
      async () => receiver.requests.map((r) => JSON.parse(r.body).type as string),
      (types) =>
        types.includes('project.sending_paused') && types.includes('project.health_warning'),
      15_000,
    );

    // Marketing refused, transactional goes.
    const template = await t.createTemplate({
      name: 'Promo',
      subject: 'Promo',
      body: '<p>Promo</p>',
      type: 'MARKETING',
      from: 'news@acme.test',
    });
    const marketing = await t.send({ to: 'r0001@example.org', template: template.body.data.id });
    expect(marketing.status).toBe(403);
    expect(marketing.body.error.code).toBe('SENDING_PAUSED');
    const transactional = await t.send({
      to: 'reset@example.org',
      from: 'hello@acme.test',
      subject: 'Reset your password',
      body: '<p>Reset</p>',
    });
    expect(transactional.status).toBe(200);
    await waitForEmailStatus(t.app, t.project.secretKey, transactional.body.data.emails[0].id, [
      'SENT',
    ]);
    // Campaign send and resume are refused while PAUSED.
    const other = await req('POST', '/campaigns', {
      name: 'Other',
      subject: 'x',
      body: '<p>x</p>',
      from: 'news@acme.test',
      audienceType: 'ALL',
    });
    const refused = await req('POST', `/campaigns/${other.body.data.id}/send`, {});
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('SENDING_PAUSED');
    expect((await req('POST', `/campaigns/${id}/resume`)).status).toBe(403);

    // The operator resumes: HEALTHY, the campaign stays PAUSED until resumed itself.
    const resumed = await req('POST', '/project/health/resume');
    expect(resumed.status).toBe(200);
    expect(resumed.body.data).toMatchObject({ status: 'HEALTHY', reason: null, pausedAt: null });
    expect((await campaign(id)).status).toBe('PAUSED');
    const after = (await req('GET', '/events?name=project.sending_resumed')).body.data.items;
    expect(after).toHaveLength(1);
    const again = await req('POST', `/campaigns/${id}/resume`);
    expect(again.status).toBe(200);
    expect(again.body.data.status).toBe('SENDING');
    await waitForCampaign(id, ['SENT']);
    const final = await stats(id);
    expect(final).toMatchObject({
      recipients: AUDIENCE,
      queued: 0,
      sending: 0,
      sent: AUDIENCE,
      bounced: BOUNCES,
    });
    expect(
      (await t.send({ to: 'r0002@example.org', template: template.body.data.id })).status,
    ).toBe(200);
  }, 180_000);

  it('pause and resume by hand; 409 from other statuses; cancel from PAUSED', async () => {
    expect((await req('POST', '/project/health/resume')).status).toBe(200);
    const id = await startCampaign('By hand');
    await pollUntil(
      () => stats(id),
      (s) => s.sent >= 50,
      30_000,
      50,
    );
    const paused = await req('POST', `/campaigns/${id}/pause`);
    expect(paused.status).toBe(200);
    expect(paused.body.data.status).toBe('PAUSED');
    expect((await req('POST', `/campaigns/${id}/pause`)).status).toBe(409);
    await sleep(1500);
    const settled = await stats(id);
    await sleep(2000);
    expect(await stats(id)).toEqual(settled);
    expect(settled.queued).toBeGreaterThan(0);
    expect((await req('POST', `/campaigns/${id}/resume`)).status).toBe(200);
    expect((await req('POST', `/campaigns/${id}/resume`)).status).toBe(409);
    await waitForCampaign(id, ['SENT']);
    expect((await req('POST', `/campaigns/${id}/pause`)).status).toBe(409);

    const draft = await req('POST', '/campaigns', {
      name: 'Draft',
      subject: 'x',
      body: '<p>x</p>',
      from: 'news@acme.test',
      audienceType: 'ALL',
    });
    expect((await req('POST', `/campaigns/${draft.body.data.id}/pause`)).status).toBe(409);
    expect((await req('POST', `/campaigns/${draft.body.data.id}/resume`)).status).toBe(409);

    const cancelled = await startCampaign('Cancelled');
    await pollUntil(
      () => stats(cancelled),
      (s) => s.sent >= 20,
      30_000,
      50,
    );
    expect((await req('POST', `/campaigns/${cancelled}/pause`)).status).toBe(200);
    const cancel = await req('POST', `/campaigns/${cancelled}/cancel`);
    expect(cancel.status).toBe(200);
    expect(cancel.body.data.status).toBe('CANCELLED');
    const s = await stats(cancelled);
    expect(s.cancelled).toBeGreaterThan(0);
    expect(s.queued).toBe(0);
  }, 120_000);

  it('CLI projects resume-sending sets HEALTHY and records project.sending_resumed', async () => {
    await db.query(
      `UPDATE projects SET sending_status = 'PAUSED', sending_reason = 'test', sending_paused_at = now() WHERE id = $1`,
      [t.project.id],
    );
    const before = (await req('GET', '/events?name=project.sending_resumed')).body.data.total;
    const env = { DATABASE_URL: t.db.url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: t.prefix };
    const run = runCli(['projects', 'resume-sending', t.project.id, '--json'], env);
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ id: t.project.id, sendingStatus: 'HEALTHY' });
    expect(await health()).toMatchObject({ status: 'HEALTHY', reason: null, pausedAt: null });
    expect((await req('GET', '/events?name=project.sending_resumed')).body.data.total).toBe(
      before + 1,
    );
    expect(runCli(['projects', 'resume-sending', 'nope'], env).status).not.toBe(0);
  });
});
