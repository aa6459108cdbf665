import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { QUEUES } from '../src/queue/queue.constants';
import { freePort } from './support/processes';
import {
  createTestDatabase,
  flushPrefix,
  startTestApp,
  testConfig,
  TestApp,
  uniqueName,
} from './support/test-app';

describe('APP_ROLE decides what a process runs (e2e)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const prefix = uniqueName('mwt_roles');
  const apps: TestApp[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await flushPrefix(prefix);
    await db.drop();
  });

  const workersOn = (app: TestApp, name: string) =>
    app.app.get<Queue>(getQueueToken(name)).getWorkers();

  it('api runs no queue worker; worker runs one per queue; both share the queues', async () => {
    const api = await startTestApp(testConfig(db.url, prefix, { APP_ROLE: 'api' }));
    apps.push(api);
    for (const name of Object.values(QUEUES)) expect(await workersOn(api, name)).toHaveLength(0);

    const worker = await startTestApp(testConfig(db.url, prefix, { APP_ROLE: 'worker' }));
    apps.push(worker);
    // Seen from the api process: the worker process's consumers are on the shared queues.
    const delivery = await workersOn(api, QUEUES.DELIVERY);
    expect(delivery.length).toBeGreaterThanOrEqual(1);

    // The API still answers in api role; health needs no key.
    expect((await api.request({ method: 'GET', url: '/health/ready' })).status).toBe(200);
  });

  it('a worker-only process serves GET /metrics on WORKER_METRICS_PORT (METRICS_TOKEN applies); an api process does not open it', async () => {
    const token = 'worker-metrics-token-0123';
    const port = await freePort();
    const worker = await startTestApp(
      testConfig(db.url, prefix, {
        APP_ROLE: 'worker',
        WORKER_METRICS_PORT: String(port),
        METRICS_TOKEN: token,
        HOST: '127.0.0.1',
      }),
    );
    apps.push(worker);
    const url = `http://127.0.0.1:${port}/metrics`;
    expect((await fetch(url)).status).toBe(401);
    const ok = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await ok.text();
    expect(text).toContain('# TYPE mailwright_smtp_errors_total counter');
    // Queue depth and record counts are global: API processes export them, so a sum over processes counts each once.
    expect(text).not.toContain('mailwright_queue_jobs');
    expect(text).not.toContain('mailwright_emails');
    expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404);

    const apiPort = await freePort();
    const api = await startTestApp(
      testConfig(db.url, prefix, {
        APP_ROLE: 'api',
        WORKER_METRICS_PORT: String(apiPort),
        HOST: '127.0.0.1',
      }),
    );
    apps.push(api);
    await expect(fetch(`http://127.0.0.1:${apiPort}/metrics`)).rejects.toThrow();
  });
});
