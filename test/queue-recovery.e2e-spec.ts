import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { Client } from 'pg';
import { ContactImportsRecovery } from '../src/contacts/contact-imports.recovery';
import { DOMAIN_SWEEP_SCHEDULER_ID, RECOVERY_SCHEDULERS } from '../src/queue/jobs';
import { QUEUES } from '../src/queue/queue.constants';
import { DeliveryRecovery } from '../src/delivery/delivery-recovery';
import { EmailSource } from '../src/sending/email.entity';
import { postImport, waitForImport } from './support/imports';
import { pollUntil } from './support/poll';
import {
  insertEmailsWithoutJobs,
  SendingTest,
  startSendingTest,
  waitForEmailStatus,
} from './support/sending';
import { flushPrefix, startTestApp, TestApp, testConfig } from './support/test-app';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Committed rows whose job was never added, or was lost, come back through the
 * queues' recovery schedulers (src/queue/recovery.ts). The API runs in-process
 * with APP_ROLE=api (it registers no scheduler and runs no job); the workers
 * are in-process APP_ROLE=worker apps on the same database and queue prefix.
 */
describe('Queue recovery through BullMQ job schedulers (e2e)', () => {
  let t: SendingTest;
  let db: Client;
  const workers: TestApp[] = [];
  const queue = (name: string) => t.app.app.get<Queue>(getQueueToken(name));

  const startWorker = async (recoveryEveryMs: number): Promise<TestApp> => {
    const worker = await startTestApp(
      testConfig(t.db.url, t.prefix, {
        APP_ROLE: 'worker',
        SMTP_URL: t.smtp.url,
        DNS_SERVERS: t.dns.address,
        PUBLIC_URL: 'https://mail.example.test',
        EMAIL_RATE_PER_SECOND: '1000',
        RECOVERY_EVERY_MS: String(recoveryEveryMs),
      }),
    );
    workers.push(worker);
    return worker;
  };

  const stopWorkers = async () => {
    while (workers.length > 0) await workers.pop()!.close();
  };

  /** An email committed without its job, open for ten minutes (the recovery leaves younger ones to their producer). */
  const orphanEmail = async (to: string): Promise<string> => {
    const [email] = await insertEmailsWithoutJobs(t, to, [EmailSource.TRANSACTIONAL]);
    await db.query(`UPDATE emails SET queued_at = now() - interval '10 minutes' WHERE id = $1`, [
      email.id,
    ]);
    expect(await queue(QUEUES.DELIVERY).getJob(email.id)).toBeUndefined();
    return email.id;
  };

  /** An import committed by the API whose job Redis then lost. Pausing keeps a running worker from taking it first. */
  const orphanImport = async (emails: string[]): Promise<string> => {
    const imports = queue(QUEUES.IMPORTS);
    await imports.pause();
    try {
      const res = await postImport(t.app, t.project.secretKey, {
        contacts: emails.map((email) => ({ email })),
      });
      expect(res.status).toBe(202);
      const id: string = res.body.data.id;
      await imports.remove(id);
      expect(await imports.getJob(id)).toBeUndefined();
      return id;
    } finally {
      await imports.resume();
    }
  };

  const schedulersOf = async (name: string) =>
    (await queue(name).getJobSchedulers()).map((s) => ({
      key: s.key,
      every: s.every,
      name: s.name,
    }));

  beforeAll(async () => {
    t = await startSendingTest('Recovery', { APP_ROLE: 'api' });
    db = new Client({ connectionString: t.db.url });
    await db.connect();
  });

  afterEach(stopWorkers);

  afterAll(async () => {
    await stopWorkers();
    await db?.end();
    await t?.close();
  });

  it('an api process registers no scheduler; the first worker on a fresh Redis recovers at its boot', async () => {
    await flushPrefix(t.prefix);
    const emailId = await orphanEmail('boot@example.org');
    const importId = await orphanImport(['boot1@example.org', 'boot2@example.org']);
    for (const name of [QUEUES.DELIVERY, QUEUES.IMPORTS, QUEUES.DOMAINS])
      expect(await schedulersOf(name)).toEqual([]);

    // A minute between runs: only the run a new scheduler makes at once can deliver within seconds.
    await startWorker(60_000);
    const email = await waitForEmailStatus(t.app, t.project.secretKey, emailId, ['SENT'], 15_000);
    expect(email.attempts).toBe(1);
    expect(t.smtp.messagesTo('boot@example.org')).toHaveLength(1);
    const view = await waitForImport(t.app, t.project.secretKey, importId, 15_000);
    expect(view).toMatchObject({ status: 'COMPLETED', processed: 2, created: 2 });

    expect(await schedulersOf(QUEUES.DELIVERY)).toEqual([
      {
        key: RECOVERY_SCHEDULERS[QUEUES.DELIVERY].id,
        every: 60_000,
        name: RECOVERY_SCHEDULERS[QUEUES.DELIVERY].jobName,
      },
    ]);
    expect(await schedulersOf(QUEUES.IMPORTS)).toEqual([
      {
        key: RECOVERY_SCHEDULERS[QUEUES.IMPORTS].id,
        every: 60_000,
        name: RECOVERY_SCHEDULERS[QUEUES.IMPORTS].jobName,
      },
    ]);
    expect((await schedulersOf(QUEUES.DOMAINS)).map((s) => s.key)).toEqual([
      DOMAIN_SWEEP_SCHEDULER_ID,
    ]);
  }, 60_000);

  it('picks up rows committed without a job while the workers run, with no restart', async () => {
    await startWorker(500);
    // Let the worker's own first run pass: what follows is found by later runs.
    await sleep(1000);

    const queuedId = await orphanEmail('later@example.org');
    // A SENDING row whose job was lost mid-attempt (Redis restarted empty): untouched for ten minutes.
    const [sending] = await insertEmailsWithoutJobs(t, 'mid-attempt@example.org', [
      EmailSource.TRANSACTIONAL,
    ]);
    await db.query(
      `UPDATE emails SET status = 'SENDING', attempts = 1, updated_at = now() - interval '10 minutes' WHERE id = $1`,
      [sending.id],
    );
    // A SENDING row whose attempts are used up and whose job is gone: its last attempt may have been accepted, so it
    // is not re-sent, but it does not stay open either: FAILED, saying the attempt was interrupted.
    const [spent] = await insertEmailsWithoutJobs(t, 'spent@example.org', [
      EmailSource.TRANSACTIONAL,
    ]);
    await db.query(
      `UPDATE emails SET status = 'SENDING', attempts = 100, updated_at = now() - interval '10 minutes' WHERE id = $1`,
      [spent.id],
    );
    // A row committed a moment ago is its producer's to enqueue: the recovery leaves it alone.
    const [fresh] = await insertEmailsWithoutJobs(t, 'fresh@example.org', [
      EmailSource.TRANSACTIONAL,
    ]);
    const importId = await orphanImport([
      'later1@example.org',
      'later2@example.org',
      'later3@example.org',
    ]);

    expect(
      await waitForEmailStatus(t.app, t.project.secretKey, queuedId, ['SENT'], 10_000),
    ).toMatchObject({ attempts: 1 });
    expect(
      await waitForEmailStatus(t.app, t.project.secretKey, sending.id, ['SENT'], 10_000),
    ).toMatchObject({ attempts: 2 });
    expect(await waitForImport(t.app, t.project.secretKey, importId, 10_000)).toMatchObject({
      status: 'COMPLETED',
      processed: 3,
      created: 3,
    });
    expect(t.smtp.messagesTo('later@example.org')).toHaveLength(1);
    expect(t.smtp.messagesTo('mid-attempt@example.org')).toHaveLength(1);

    const untouched = await t.app.request({
      method: 'GET',
      url: `/emails/${fresh.id}`,
      key: t.project.secretKey,
    });
    expect(untouched.body.data.status).toBe('QUEUED');
    expect(t.smtp.messagesTo('fresh@example.org')).toHaveLength(0);
    const ended = await waitForEmailStatus(
      t.app,
      t.project.secretKey,
      spent.id,
      ['FAILED'],
      10_000,
    );
    expect(ended).toMatchObject({
      status: 'FAILED',
      attempts: 100,
      error: 'delivery was interrupted during its last attempt',
    });
    expect(t.smtp.messagesTo('spent@example.org')).toHaveLength(0);
    // The delivery scheduler moved to the new interval: one scheduler still.
    expect(await schedulersOf(QUEUES.DELIVERY)).toEqual([
      {
        key: RECOVERY_SCHEDULERS[QUEUES.DELIVERY].id,
        every: 500,
        name: RECOVERY_SCHEDULERS[QUEUES.DELIVERY].jobName,
      },
    ]);
  }, 60_000);

  it('runs each recovery once per interval however many workers run, booted at once', async () => {
    // Before: a deployment with another interval, redeployed with this one, then no worker for a few
    // intervals (runs to catch up on; bullmq kept the old interval's phase and put them off by up to a minute).
    await startWorker(60_000);
    await stopWorkers();
    await startWorker(500);
    await stopWorkers();
    await sleep(1500);
    await Promise.all([startWorker(500), startWorker(500)]);
    const delivery = workers.map((w) => jest.spyOn(w.app.get(DeliveryRecovery), 'recover'));
    const imports = workers.map((w) => jest.spyOn(w.app.get(ContactImportsRecovery), 'recover'));
    const windowMs = 5000;
    // A measuring window, not a wait for a condition: the runs in it are counted.
    await sleep(windowMs);
    const runs = (spies: jest.SpyInstance[]) =>
      spies.reduce((sum, spy) => sum + spy.mock.calls.length, 0);
    // One run per 500 ms slot between both workers, about 10 in 5 s; a recovery per worker would make about 20.
    for (const total of [runs(delivery), runs(imports)]) {
      expect(total).toBeGreaterThanOrEqual(4);
      expect(total).toBeLessThanOrEqual(windowMs / 500 + 2);
    }
    expect(await schedulersOf(QUEUES.DELIVERY)).toHaveLength(1);
    expect(await schedulersOf(QUEUES.IMPORTS)).toHaveLength(1);
    for (const spy of [...delivery, ...imports]) spy.mockRestore();
  }, 60_000);

  it('re-creates the schedulers when Redis loses everything under running workers', async () => {
    await startWorker(500);
    // As if Redis restarted empty: every queue, job and scheduler of this deployment is gone.
    await flushPrefix(t.prefix);
    expect(await schedulersOf(QUEUES.DELIVERY)).toEqual([]);
    const emailId = await orphanEmail('after-flush@example.org');

    const email = await waitForEmailStatus(t.app, t.project.secretKey, emailId, ['SENT'], 15_000);
    expect(email.attempts).toBe(1);
    // The email may have gone out through a recovery job that outlived the flush (the flush is not
    // atomic) before the worker's next check re-created the schedulers, so wait for that check.
    const recreated = (name: string) =>
      pollUntil(
        async () => (await schedulersOf(name)).map((s) => s.key),
        (keys) => keys.length > 0,
        5000,
      );
    expect(await recreated(QUEUES.DELIVERY)).toHaveLength(1);
    expect(await recreated(QUEUES.IMPORTS)).toHaveLength(1);
    expect(await recreated(QUEUES.DOMAINS)).toEqual([DOMAIN_SWEEP_SCHEDULER_ID]);
  }, 60_000);
});
