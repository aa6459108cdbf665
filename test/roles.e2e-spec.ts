import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { QUEUES } from '../src/queue/queue.constants';
import { createTestDatabase, flushPrefix, startTestApp, testConfig, TestApp, uniqueName } from './support/test-app';

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

  const workersOn = (app: TestApp, name: string) => app.app.get<Queue>(getQueueToken(name)).getWorkers();

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
});
