import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ServiceProcess, startService } from './support/processes';
import { SendingTest, startSendingTest } from './support/sending';
import { TEST_REDIS_URL } from './support/test-app';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const APP_SECRET = 'test-secret-test-secret-test-secret-0123456789';

/**
 * Worker processes are real `node dist/main.js` children (APP_ROLE=worker)
 * sharing the test's database and queue prefix; the API runs in-process with
 * APP_ROLE=api, so every delivery here happens in a child.
 */
describe('Delivery across worker processes', () => {
  let t: SendingTest;
  const workers: ServiceProcess[] = [];

  const workerEnv = (rate: number): Record<string, string> => ({
    APP_ROLE: 'worker',
    DATABASE_URL: t.db.url,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: t.prefix,
    SMTP_URL: t.smtp.url,
    // Workers also run the domain re-checks: they must see the same (test) DNS.
    DNS_SERVERS: t.dns.address,
    APP_SECRET,
    LOG_LEVEL: 'silent',
    EMAIL_RATE_PER_SECOND: String(rate),
    DELIVERY_BACKOFF_MS: '200',
    MAIL_OUTBOX_DIR: join(mkdtempSync(join(tmpdir(), 'mw-worker-')), 'outbox'),
  });

  const startWorker = (rate: number) => {
    const worker = startService(workerEnv(rate));
    workers.push(worker);
    return worker;
  };

  const stopWorker = async (worker: ServiceProcess, signal: NodeJS.Signals = 'SIGTERM') => {
    if (worker.child.exitCode === null && worker.child.signalCode === null)
      worker.child.kill(signal);
    await worker.exited;
  };

  const countByStatus = async (status: string): Promise<number> => {
    const res = await t.app.request({
      method: 'GET',
      url: `/emails?status=${status}&limit=1`,
      key: t.project.secretKey,
    });
    return res.body.data.total as number;
  };

  const sendBatch = async (recipients: string[], subject: string) => {
    for (let i = 0; i < recipients.length; i += 50) {
      const res = await t.app.request({
        method: 'POST',
        url: '/v1/send',
        key: t.project.secretKey,
        body: {
          to: recipients.slice(i, i + 50),
          from: 'hello@acme.test',
          subject,
          body: '<p>{{ email }}</p>',
        },
      });
      if (res.status !== 200) throw new Error(`send answered ${res.status}: ${res.raw}`);
    }
  };

  beforeAll(async () => {
    t = await startSendingTest('Workers', { APP_ROLE: 'api' }, { parse: false, keepRaw: false });
  });

  afterAll(async () => {
    for (const worker of workers) await stopWorker(worker, 'SIGKILL');
    await t?.close();
  });

  it('holds EMAIL_RATE_PER_SECOND across two worker processes: 50 emails at 5/s take at least 9 s', async () => {
    const a = startWorker(5);
    const b = startWorker(5);
    await sleep(3000); // both workers booted and polling
    t.smtp.reset();
    const started = Date.now();
    await sendBatch(
      Array.from({ length: 50 }, (_, i) => `rate${i}@example.org`),
      'Rate',
    );
    await t.smtp.waitForMessages(50, 40_000);
    const elapsed = t.smtp.messages[49].receivedAt - started;
    expect(elapsed).toBeGreaterThanOrEqual(9000);
    // Not stuck either: 10 windows of one second, plus start-up slack.
    expect(elapsed).toBeLessThan(16_000);
    // The limiter is a fixed one-second window: any 11 consecutive acceptances span more than
    // a second (two windows' worth can sit either side of a boundary), minus SMTP jitter.
    const times = t.smtp.messages.map((m) => m.receivedAt).sort((x, y) => x - y);
    for (let i = 0; i + 10 < times.length; i++)
      expect(times[i + 10] - times[i]).toBeGreaterThan(800);
    await stopWorker(a);
    await stopWorker(b);
  }, 90_000);

  it('a SIGTERMed worker finishes what it has in flight: nothing left SENDING, nothing sent twice', async () => {
    t.smtp.reset();
    t.smtp.dataDelayMs = 50;
    const sentBefore = await countByStatus('SENT');
    const recipients = Array.from({ length: 60 }, (_, i) => `term${i}@example.org`);
    const worker = startWorker(20);
    await sleep(2500);
    await sendBatch(recipients, 'Term');
    await t.smtp.waitForMessages(10, 40_000);
    await stopWorker(worker);
    // Every message the server accepted is recorded SENT; the rest waits, QUEUED, for the next worker.
    expect(await countByStatus('SENDING')).toBe(0);
    expect((await countByStatus('SENT')) - sentBefore).toBe(t.smtp.accepted);
    expect(t.smtp.accepted).toBeLessThan(60);

    const next = startWorker(100);
    const deadline = Date.now() + 60_000;
    while ((await countByStatus('SENT')) - sentBefore < 60 && Date.now() < deadline)
      await sleep(250);
    expect((await countByStatus('SENT')) - sentBefore).toBe(60);
    const perRecipient = new Map<string, number>();
    for (const m of t.smtp.messages)
      for (const to of m.to) perRecipient.set(to, (perRecipient.get(to) ?? 0) + 1);
    expect(recipients.map((r) => perRecipient.get(r) ?? 0)).toEqual(recipients.map(() => 1));
    await stopWorker(next);
    t.smtp.dataDelayMs = 0;
  }, 120_000);

  it('a SIGKILLed worker loses nothing: every email ends SENT, duplicates at most the worker concurrency', async () => {
    t.smtp.reset();
    t.smtp.dataDelayMs = 20;
    const recipients = Array.from({ length: 500 }, (_, i) => `kill${i}@example.org`);
    const sentBefore = await countByStatus('SENT');
    const first = startWorker(150);
    await sleep(2500);
    await sendBatch(recipients, 'Crash');

    await t.smtp.waitForMessages(120, 60_000);
    first.child.kill('SIGKILL');
    await first.exited;
    const acceptedAtKill = t.smtp.accepted;
    const sentAtKill = (await countByStatus('SENT')) - sentBefore;
    expect(sentAtKill).toBeLessThan(500);
    expect(acceptedAtKill).toBeLessThan(500);

    startWorker(150);
    const deadline = Date.now() + 90_000;
    while ((await countByStatus('SENT')) - sentBefore < 500 && Date.now() < deadline)
      await sleep(500);
    expect((await countByStatus('SENT')) - sentBefore).toBe(500);
    expect(await countByStatus('QUEUED')).toBe(0);
    expect(await countByStatus('SENDING')).toBe(0);
    expect(await countByStatus('FAILED')).toBe(0);

    const perRecipient = new Map<string, number>();
    for (const m of t.smtp.messages)
      for (const to of m.to) perRecipient.set(to, (perRecipient.get(to) ?? 0) + 1);
    for (const r of recipients) expect(perRecipient.get(r) ?? 0).toBeGreaterThanOrEqual(1);
    const duplicates = [...perRecipient.values()].reduce((sum, n) => sum + (n - 1), 0);
    // Only messages accepted in the instant between the server's 250 and the SENT update can repeat.
    expect(duplicates).toBeLessThanOrEqual(20);
  }, 180_000);
});
