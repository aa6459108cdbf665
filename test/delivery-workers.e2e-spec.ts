import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, ServiceProcess } from './support/processes';
import { ServiceCluster } from './support/services';
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
  const cluster = new ServiceCluster(
    () => ({
      DATABASE_URL: t.db.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: t.prefix,
      SMTP_URL: t.smtp.url,
      // Workers also run the domain re-checks: they must see the same (test) DNS.
      DNS_SERVERS: t.dns.address,
      APP_SECRET,
      DELIVERY_BACKOFF_MS: '200',
      MAIL_OUTBOX_DIR: join(mkdtempSync(join(tmpdir(), 'mw-worker-')), 'outbox'),
    }),
    ROOT,
  );

  /** A worker process whose queue workers run (it logged that it started; boots are slow on a loaded machine). */
  const startWorker = (rate: number) =>
    cluster.startWorker({ EMAIL_RATE_PER_SECOND: String(rate) }, 90_000);

  const stopWorker = async (worker: ServiceProcess, signal: NodeJS.Signals = 'SIGTERM') => {
    await cluster.stop(worker, signal);
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

  afterEach(async () => {
    // No worker outlives its test: a leftover one would deliver the next test's mail.
    await cluster.killAll();
  });

  afterAll(async () => {
    await cluster.killAll();
    await t?.close();
  });

  it('holds EMAIL_RATE_PER_SECOND across two worker processes: 50 emails at 5/s take at least 9 s', async () => {
    const [a, b] = await Promise.all([startWorker(5), startWorker(5)]);
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
  }, 180_000);

  it('a SIGTERMed worker finishes what it has in flight: nothing left SENDING, nothing sent twice', async () => {
    t.smtp.reset();
    t.smtp.dataDelayMs = 50;
    const sentBefore = await countByStatus('SENT');
    const recipients = Array.from({ length: 60 }, (_, i) => `term${i}@example.org`);
    const worker = await startWorker(20);
    await sendBatch(recipients, 'Term');
    await t.smtp.waitForMessages(10, 40_000);
    await stopWorker(worker);
    // Every message the server accepted is recorded SENT; the rest waits, QUEUED, for the next worker.
    expect(await countByStatus('SENDING')).toBe(0);
    expect((await countByStatus('SENT')) - sentBefore).toBe(t.smtp.accepted);
    expect(t.smtp.accepted).toBeLessThan(60);

    const next = await startWorker(100);
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
  }, 240_000);

  it('a SIGKILLed worker loses nothing: every email ends SENT, duplicates at most the worker concurrency', async () => {
    t.smtp.reset();
    t.smtp.dataDelayMs = 20;
    const recipients = Array.from({ length: 500 }, (_, i) => `kill${i}@example.org`);
    const sentBefore = await countByStatus('SENT');
    const first = await startWorker(150);
    await sendBatch(recipients, 'Crash');

    await t.smtp.waitForMessages(120, 60_000);
    first.child.kill('SIGKILL');
    await first.exited;
    const acceptedAtKill = t.smtp.accepted;
    const sentAtKill = (await countByStatus('SENT')) - sentBefore;
    expect(sentAtKill).toBeLessThan(500);
    expect(acceptedAtKill).toBeLessThan(500);

    await startWorker(150);
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
  }, 300_000);
});
