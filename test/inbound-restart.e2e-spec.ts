import { Queue } from 'bullmq';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { INBOUND_JOBS } from '../src/queue/jobs';
import { QUEUES } from '../src/queue/queue.constants';
import { redisConnectionOptions } from '../src/queue/redis';
import { dsnMessage, sendInbound, TEST_TOKENS } from './support/inbound';
import { pollUntil } from './support/poll';
import { freePort } from './support/processes';
import { callApi, deploymentEnv, ServiceCluster } from './support/services';
import { createTestDatabase, flushPrefix, TEST_REDIS_URL, uniqueName } from './support/test-app';

/**
 * The listener's promise across crashes, with real processes (node
 * dist/main.js): 250 DSNs are answered 250 by a worker's listener while the
 * inbound queue is paused (so none is parsed), the worker is SIGKILLed, a
 * fifth of the jobs are removed from Redis (an enqueue lost between the
 * commit and Redis), and a new worker is killed again mid-way through them.
 * The last worker applies every one of the 250 reports, once: 250 emails
 * BOUNCED with one email.bounced event each. The count only sets how long it
 * takes: the kills come after the answers and after 50 applied.
 *
 * Needs the build (npm test builds first).
 */
const REPORTS = 250;
const DOMAIN = 'bounces.example.test';

describe('inbound reports survive a killed worker (e2e)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let pg: Client;
  let queue: Queue;
  const prefix = uniqueName('mwt_inbound');
  const cwd = mkdtempSync(join(tmpdir(), 'mw-inbound-'));
  const cluster = new ServiceCluster(
    () => ({
      ...deploymentEnv(db.url, prefix),
      MAIL_OUTBOX_DIR: join(cwd, 'outbox'),
      EMAIL_RATE_PER_SECOND: '1000',
      RETURN_PATH_DOMAIN: DOMAIN,
      RECOVERY_EVERY_MS: '1000',
      REQUIRE_VERIFIED_SENDER: 'false',
    }),
    cwd,
  );

  const count = async (sql: string, params: unknown[] = []): Promise<number> =>
    (await pg.query<{ n: number }>(sql, params)).rows[0].n;

  beforeAll(async () => {
    db = await createTestDatabase();
    pg = new Client({ connectionString: db.url });
    await pg.connect();
    queue = new Queue(QUEUES.INBOUND, {
      connection: redisConnectionOptions(TEST_REDIS_URL),
      prefix,
    });
  });

  afterEach(() => cluster.killAll());

  afterAll(async () => {
    await queue?.close();
    await pg?.end();
    await flushPrefix(prefix);
    await db?.drop();
  });

  it('250 reports answered 250 and not yet parsed are all applied once after SIGKILLs', async () => {
    // 250 emails delivered (to the outbox): the reports' subjects.
    const { base } = await cluster.startApi();
    const project = cluster.createProject('Inbound crash');
    const delivering = await cluster.startWorker();
    for (let batch = 0; batch < REPORTS / 50; batch++) {
      const to = Array.from({ length: 50 }, (_, i) => `r${batch * 50 + i}@example.net`);
      const res = await callApi(base, project.secretKey, 'POST', '/v1/send', {
        to,
        from: 'hello@acme.test',
        subject: 'Hi',
        body: '<p>hi</p>',
      });
      expect(res.status).toBe(200);
    }
    const sent = await pollUntil(
      () => count(`SELECT count(*)::int AS n FROM emails WHERE status = 'SENT'`),
      (n) => n === REPORTS,
      60_000,
      250,
    );
    expect(sent).toBe(REPORTS);
    await cluster.stop(delivering, 'SIGTERM');
    const emails = (
      await pg.query<{ id: string; to_email: string }>('SELECT id, to_email FROM emails')
    ).rows;

    // A worker that listens, with nothing parsed: its queue is paused.
    await queue.pause();
    const port = await freePort();
    const listening = await cluster.startWorker({
      INBOUND_SMTP_PORT: String(port),
      INBOUND_SMTP_HOST: '127.0.0.1',
    });
    const answers: number[] = [];
    for (let i = 0; i < emails.length; i += 10) {
      const chunk = emails.slice(i, i + 10);
      answers.push(
        ...(await Promise.all(
          chunk.map(async (email) => {
            const to = TEST_TOKENS.address(email.id, DOMAIN);
            const answer = await sendInbound(
              port,
              { from: '', to: [to] },
              dsnMessage({ to, recipient: email.to_email, tag: email.id }),
            );
            return answer.code;
          }),
        )),
      );
    }
    expect(answers.filter((code) => code === 250)).toHaveLength(REPORTS);
    expect(
      await count(`SELECT count(*)::int AS n FROM inbound_messages WHERE status = 'RECEIVED'`),
    ).toBe(REPORTS);
    // The listener's jobs (each for the group commits of a short window) follow the 250s:
    // together they name every message once.
    const pending = async () =>
      (await queue.getJobs(['paused', 'waiting'])).filter(
        (job) => job.name === INBOUND_JOBS.PROCESS,
      );
    const namedBy = (jobs: Awaited<ReturnType<typeof pending>>) =>
      jobs.flatMap((job) => job.data.inboundMessageIds ?? [job.data.inboundMessageId]);
    const jobs = await pollUntil(pending, (found) => namedBy(found).length >= REPORTS, 5_000, 20);
    expect(await cluster.stop(listening, 'SIGKILL')).toBe('SIGKILL');
    const named = namedBy(jobs);
    expect(named).toHaveLength(REPORTS);
    expect(new Set(named).size).toBe(REPORTS);
    // A fifth of the jobs never made it to Redis; the recovery must find their rows.
    await Promise.all(jobs.slice(0, Math.ceil(jobs.length / 5)).map((job) => job.remove()));
    await queue.resume();

    // Killed again while it works through them.
    const interrupted = await cluster.startWorker();
    await pollUntil(
      () => count(`SELECT count(*)::int AS n FROM inbound_messages WHERE status <> 'RECEIVED'`),
      (n) => n >= 50,
      30_000,
      20,
    );
    expect(await cluster.stop(interrupted, 'SIGKILL')).toBe('SIGKILL');
    const doneAtKill = await count(
      `SELECT count(*)::int AS n FROM inbound_messages WHERE status <> 'RECEIVED'`,
    );
    expect(doneAtKill).toBeLessThan(REPORTS);

    await cluster.startWorker();
    const processed = await pollUntil(
      () => count(`SELECT count(*)::int AS n FROM inbound_messages WHERE status = 'PROCESSED'`),
      (n) => n === REPORTS,
      90_000,
      250,
    );
    expect(processed).toBe(REPORTS);
    expect(await count(`SELECT count(*)::int AS n FROM emails WHERE status = 'BOUNCED'`)).toBe(
      REPORTS,
    );
    // Once: one email.bounced event per email, one stored report per DSN.
    const events = await pg.query<{ n: number; emails: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT email_id)::int AS emails FROM events WHERE name = 'email.bounced'`,
    );
    expect(events.rows[0]).toEqual({ n: REPORTS, emails: REPORTS });
    expect(await count(`SELECT count(*)::int AS n FROM bounce_reports`)).toBe(REPORTS);
  }, 240_000);
});
