import { Queue } from 'bullmq';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { campaignJobId } from '../src/queue/jobs';
import { QUEUES } from '../src/queue/queue.constants';
import { redisConnectionOptions } from '../src/queue/redis';
import { startTestDnsServer, TestDnsServer } from './support/dns-server';
import { pollUntil } from './support/poll';
import { DIST_CLI, DIST_MAIN } from './support/processes';
import {
  callApi,
  deploymentEnv,
  mailEnv,
  ServiceCluster,
  verifyDomainOverHttp,
} from './support/services';
import { startTestSmtpServer, TestSmtpServer } from './support/smtp-server';
import { createTestDatabase, flushPrefix, TEST_REDIS_URL, uniqueName } from './support/test-app';

/**
 * A worker SIGKILLed during an email's last delivery attempt, with real
 * processes only (`node dist/main.js` as api and worker, Postgres, Redis,
 * loopback SMTP and DNS). The SMTP server answers 450 to every attempt but
 * the last, which it holds open; the worker is killed while it waits, and a
 * new worker is started. Every email ends in a final state, the campaign
 * reaches SENT, and while the last email is open the campaign's RUN job
 * waits in the queue (delayed) instead of holding a worker slot.
 *
 * Needs the build (npm test builds first).
 */
const ATTEMPTS = 3;
const RECIPIENTS = 5;

describe('campaign whose worker dies during an email last attempt (e2e)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let pg: Client;
  let dns: TestDnsServer;
  let smtp: TestSmtpServer;
  let campaigns: Queue;
  const prefix = uniqueName('mwt_camplast');
  const cwd = mkdtempSync(join(tmpdir(), 'mw-camplast-'));
  const cluster = new ServiceCluster(
    () => ({
      ...deploymentEnv(db.url, prefix),
      ...mailEnv(smtp, dns, join(cwd, 'outbox')),
      DELIVERY_ATTEMPTS: String(ATTEMPTS),
      DELIVERY_BACKOFF_MS: '200',
      RECOVERY_EVERY_MS: '1000',
    }),
    cwd,
  );

  const emailsOf = async (
    campaignId: string,
  ): Promise<Array<{ toEmail: string; status: string; attempts: number }>> =>
    (
      await pg.query(
        'SELECT to_email AS "toEmail", status, attempts FROM emails WHERE campaign_id = $1 ORDER BY to_email',
        [campaignId],
      )
    ).rows;

  beforeAll(async () => {
    if (!existsSync(DIST_MAIN) || !existsSync(DIST_CLI))
      throw new Error('dist/ is missing: run npm run build (npm test does)');
    db = await createTestDatabase();
    pg = new Client({ connectionString: db.url });
    await pg.connect();
    dns = await startTestDnsServer();
    smtp = await startTestSmtpServer();
    campaigns = new Queue(QUEUES.CAMPAIGNS, {
      connection: redisConnectionOptions(TEST_REDIS_URL),
      prefix,
    });
  }, 60_000);

  afterEach(() => cluster.killAll(), 30_000);

  afterAll(async () => {
    await cluster.killAll();
    await campaigns?.close();
    await pg?.end();
    await smtp?.close();
    await dns?.stop();
    await flushPrefix(prefix);
    await db?.drop();
  }, 60_000);

  /**
   * A campaign to RECIPIENTS contacts on its own domain, one of which (`stuck`)
   * gets 450 on every attempt but the last, which the relay holds at DATA; the
   * worker is SIGKILLed during it. Answers once the worker is dead, the relay
   * answering at once again (and 450 to `stuck` for good: its email can only fail).
   */
  const killDuringLastAttempt = async (
    name: string,
  ): Promise<{ base: string; key: string; campaignId: string; stuck: string }> => {
    smtp.reset();
    const project = cluster.createProject(name);
    const key = project.secretKey;
    const api = await cluster.startApi();
    const domain = `${name.toLowerCase().replace(/[^a-z]/g, '')}.test`;
    await verifyDomainOverHttp(api.base, key, domain, dns);
    const stuck = `stuck@${domain}`;
    for (let i = 0; i < RECIPIENTS - 1; i++) {
      expect(
        (
          await callApi(api.base, key, 'POST', '/contacts', {
            email: `ok${i}@${domain}`,
            subscribed: true,
          })
        ).status,
      ).toBe(201);
    }
    expect(
      (await callApi(api.base, key, 'POST', '/contacts', { email: stuck, subscribed: true }))
        .status,
    ).toBe(201);
    const created = await callApi(api.base, key, 'POST', '/campaigns', {
      name,
      subject: 'Hello {{ contact.email }}',
      body: '<p>Hello</p><a href="{{ unsubscribeUrl }}">Unsubscribe</a>',
      from: `news@${domain}`,
      audienceType: 'ALL',
    });
    expect(created.status).toBe(201);
    const campaignId = created.body.data.id as string;

    smtp.fail({ stage: 'RCPT', code: 450, recipient: stuck, times: ATTEMPTS - 1 });
    smtp.dataDelayMs = 30_000;
    const first = await cluster.startWorker();
    expect((await callApi(api.base, key, 'POST', `/campaigns/${campaignId}/send`, {})).status).toBe(
      202,
    );
    // Killed once the RUN job waits delayed for the end of delivery (its first second, waiting for
    // a first answer from SMTP, it is active): the last attempt is held open for 30 s.
    const inLastAttempt = await pollUntil(
      async () => ({
        email: (await emailsOf(campaignId)).find((e) => e.toEmail === stuck),
        run: await campaigns.getJobState(campaignJobId(campaignId)),
      }),
      ({ email, run }) =>
        email?.status === 'SENDING' &&
        email.attempts === ATTEMPTS &&
        smtp.refusals.length === ATTEMPTS - 1 &&
        run === 'delayed',
      30_000,
    );
    expect(inLastAttempt).toMatchObject({
      email: { status: 'SENDING', attempts: ATTEMPTS },
      run: 'delayed',
    });
    expect(await cluster.stop(first, 'SIGKILL')).toBe('SIGKILL');
    smtp.dataDelayMs = 0;
    smtp.fail({ stage: 'RCPT', code: 450, recipient: stuck });
    return { base: api.base, key, campaignId, stuck };
  };

  it('SIGKILL during the last attempt: the email ends final, the campaign reaches SENT, the RUN job waits without a slot', async () => {
    const { base, key, campaignId, stuck } = await killDuringLastAttempt('Last attempt');

    // While an email is open the RUN job waits delayed (no worker slot), and is never seen active
    // for long. Sampled from before the new worker starts: it may end the email during its boot.
    const jobId = campaignJobId(campaignId);
    const samples: Array<{ state: string; open: boolean }> = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        samples.push({
          state: await campaigns.getJobState(jobId),
          open: (await emailsOf(campaignId)).some(
            (e) => e.status === 'QUEUED' || e.status === 'SENDING',
          ),
        });
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const second = await cluster.startWorker();
    const waiting = await pollUntil(
      async () =>
        samples.find((s) => s.open && s.state === 'delayed') ??
        samples.find((s) => !s.open) ??
        null,
      (s) => s !== null,
      30_000,
      20,
    );
    sampling = false;
    await sampler;
    expect(waiting).toEqual({ state: 'delayed', open: true });

    const done = await pollUntil(
      async () => (await callApi(base, key, 'GET', `/campaigns/${campaignId}`)).body.data,
      (c) => c.status === 'SENT',
      60_000,
      200,
    );
    const emails = await emailsOf(campaignId);
    if (done.status !== 'SENT') console.error(JSON.stringify(emails), second.output().slice(-4000));
    expect(done.status).toBe('SENT');
    expect(emails.find((e) => e.toEmail === stuck)?.status).toBe('FAILED');
    expect(emails.filter((e) => e.status === 'SENT')).toHaveLength(RECIPIENTS - 1);
    expect(emails).toHaveLength(RECIPIENTS);
  }, 180_000);

  it('SIGKILL during the last attempt and the delivery job lost with Redis: the recovery fails the email, the campaign reaches SENT', async () => {
    const { base, key, campaignId, stuck } = await killDuringLastAttempt('Lost job');
    // Redis lost the delivery queue (the dead worker's job with it), and the row has been open past the recovery's 5 minutes.
    const delivery = new Queue(QUEUES.DELIVERY, {
      connection: redisConnectionOptions(TEST_REDIS_URL),
      prefix,
    });
    try {
      await delivery.obliterate({ force: true });
    } finally {
      await delivery.close();
    }
    await pg.query(
      `UPDATE emails SET updated_at = now() - interval '6 minutes' WHERE campaign_id = $1 AND status = 'SENDING'`,
      [campaignId],
    );
    const second = await cluster.startWorker();
    const done = await pollUntil(
      async () => (await callApi(base, key, 'GET', `/campaigns/${campaignId}`)).body.data,
      (c) => c.status === 'SENT',
      60_000,
      200,
    );
    const emails = await emailsOf(campaignId);
    if (done.status !== 'SENT') console.error(JSON.stringify(emails), second.output().slice(-4000));
    expect(done.status).toBe('SENT');
    expect(emails.find((e) => e.toEmail === stuck)).toMatchObject({
      status: 'FAILED',
      attempts: ATTEMPTS,
    });
    expect(emails.filter((e) => e.status === 'SENT')).toHaveLength(RECIPIENTS - 1);
    const [failed] = (
      await pg.query(`SELECT error FROM emails WHERE campaign_id = $1 AND to_email = $2`, [
        campaignId,
        stuck,
      ])
    ).rows;
    expect(failed.error).toMatch(/interrupted during its last attempt/);
  }, 180_000);
});
