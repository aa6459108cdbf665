import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { existsSync } from 'node:fs';
import { Client } from 'pg';
import { QUEUES } from '../src/queue/queue.constants';
import { postImport } from './support/imports';
import { pollUntil } from './support/poll';
import { DIST_MAIN as MAIN, ROOT } from './support/processes';
import { ServiceCluster } from './support/services';
import {
  setupTestApp,
  startTestApp,
  testConfig,
  TestApp,
  TEST_REDIS_URL,
} from './support/test-app';

/** Every worker here runs the imports recovery each second (queue/recovery.ts), not each minute. */
const RECOVERY_EVERY_MS = '1000';

/**
 * A worker process is SIGKILLed in the middle of an import; another worker
 * finishes it. Needs the build (npm test builds first).
 */
describe('Contact import survives a worker crash', () => {
  let env: Awaited<ReturnType<typeof setupTestApp>>;
  let api: TestApp;
  let worker: TestApp | null = null;
  let db: Client;
  const cluster = new ServiceCluster(
    () => ({
      DATABASE_URL: env.db.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: env.prefix,
      LOG_LEVEL: 'silent',
      APP_SECRET: 'test-secret-test-secret-test-secret-0123456789',
    }),
    ROOT,
  );

  beforeAll(async () => {
    if (!existsSync(MAIN))
      throw new Error('dist/main.js is missing: run npm run build (npm test does)');
    // The API process enqueues but runs no processor.
    env = await setupTestApp({ APP_ROLE: 'api', IMPORT_BATCH_SIZE: '100' });
    api = env.app;
    db = new Client({ connectionString: env.db.url });
    await db.connect();
  });
  afterAll(async () => {
    await cluster.killAll();
    await worker?.close();
    await db?.end();
    await env?.close();
  });

  async function progress(
    id: string,
  ): Promise<{ status: string; processed: number; next_chunk: number }> {
    const { rows } = await db.query(
      'SELECT status, processed, next_chunk FROM contact_imports WHERE id = $1',
      [id],
    );
    return rows[0];
  }

  it('ends with 4,997 contacts, exact counters and no duplicates', async () => {
    const p = await api.createProject('Crash');
    const contacts = Array.from({ length: 5000 }, (_, i) =>
      [17, 1800, 4321].includes(i + 1)
        ? { email: `bad-${i + 1}` }
        : { email: `crash${i + 1}@example.com`, data: { i } },
    );
    const res = await postImport(api, p.secretKey, { contacts });
    expect(res.status).toBe(202);
    const id = res.body.data.id;
    expect((await progress(id)).status).toBe('QUEUED');

    const child = await cluster.startWorker({
      // Small chunks: 50 resume points, so the kill lands mid-import.
      IMPORT_BATCH_SIZE: '100',
      RECOVERY_EVERY_MS,
    });
    // Kill it once some chunks are committed and most are not.
    await pollUntil(
      () => progress(id),
      (state) => state.processed >= 1000,
      30_000,
      5,
    );
    expect(await cluster.stop(child, 'SIGKILL')).toBe('SIGKILL');
    const atKill = await progress(id);
    expect(atKill.processed).toBeGreaterThanOrEqual(1000);
    expect(atKill.processed).toBeLessThan(5000);
    expect(atKill.status).toBe('PROCESSING');
    // Committed progress and committed contacts agree at the moment of the crash.
    const { rows: before } = await db.query(
      'SELECT count(*)::int AS n FROM contacts WHERE project_id = $1',
      [p.id],
    );
    expect(before[0].n).toBeLessThanOrEqual(atKill.processed);
    expect(before[0].n).toBeGreaterThanOrEqual(atKill.processed - 3);

    // A new worker picks the stalled job up and resumes after the last committed chunk.
    worker = await startTestApp(
      testConfig(env.db.url, env.prefix, {
        APP_ROLE: 'worker',
        IMPORT_BATCH_SIZE: '100',
        RECOVERY_EVERY_MS,
      }),
    );
    await pollUntil(
      () => progress(id),
      (state) => state.status === 'COMPLETED',
      60_000,
      200,
    );
    const view = (
      await api.request({ method: 'GET', url: `/contacts/imports/${id}`, key: p.secretKey })
    ).body.data;
    expect(view).toMatchObject({
      status: 'COMPLETED',
      total: 5000,
      processed: 5000,
      created: 4997,
      updated: 0,
      failed: 3,
    });
    expect(view.errors.map((e: { row: number }) => e.row)).toEqual([17, 1800, 4321]);
    const { rows } = await db.query(
      'SELECT count(*)::int AS n, count(DISTINCT email)::int AS d FROM contacts WHERE project_id = $1',
      [p.id],
    );
    expect(rows[0]).toEqual({ n: 4997, d: 4997 });
    // The raw rows are gone once the import is done.
    const { rows: chunks } = await db.query(
      'SELECT count(*)::int AS n FROM contact_import_chunks WHERE import_id = $1',
      [id],
    );
    expect(chunks[0].n).toBe(0);
    await worker.close();
    worker = null;
  }, 120_000);

  it('finishes an import whose job was lost, once a worker runs (the imports recovery scheduler)', async () => {
    const p = await api.createProject('Lost job');
    const res = await postImport(api, p.secretKey, {
      contacts: [{ email: 'lost1@example.com' }, { email: 'lost2@example.com' }],
    });
    const id = res.body.data.id;
    // As if Redis had lost the job between the commit and the enqueue.
    const queue = api.app.get<Queue>(getQueueToken(QUEUES.IMPORTS));
    await queue.remove(id);
    expect(await queue.getJob(id)).toBeUndefined();
    worker = await startTestApp(
      testConfig(env.db.url, env.prefix, { APP_ROLE: 'worker', RECOVERY_EVERY_MS }),
    );
    const state = await pollUntil(
      () => progress(id),
      (s) => s.status === 'COMPLETED',
      30_000,
      100,
    );
    expect(state).toMatchObject({ status: 'COMPLETED', processed: 2 });
  }, 60_000);
});
