import { existsSync } from 'node:fs';
import { DataSource } from 'typeorm';
import { DIST_MAIN, ROOT, ServiceProcess } from './support/processes';
import { ServiceCluster } from './support/services';
import { setupTestApp, TEST_REDIS_URL, TestApp, TestProject } from './support/test-app';

/**
 * An API process is SIGKILLed while 32 clients track as fast as it answers
 * (so group-commit batches are in flight). Every answered track must be in the
 * database exactly once, and a restarted process takes tracks again. Needs the
 * build (npm test builds first).
 */
describe('POST /v1/track survives a crash of the API process', () => {
  let env: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let project: TestProject;
  let dataSource: DataSource;
  let service: ServiceProcess | null = null;
  const cluster = new ServiceCluster(
    () => ({
      DATABASE_URL: env.db.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: env.prefix,
      LOG_LEVEL: 'silent',
      APP_SECRET: 'test-secret-test-secret-test-secret-0123456789',
      API_RATE_LIMIT_PER_MINUTE: '1000000',
    }),
    ROOT,
  );

  beforeAll(async () => {
    if (!existsSync(DIST_MAIN))
      throw new Error('dist/main.js is missing: run npm run build (npm test does)');
    env = await setupTestApp({ APP_ROLE: 'api' });
    app = env.app;
    dataSource = app.app.get(DataSource);
    project = await app.createProject('Crash while tracking');
  });
  afterAll(async () => {
    await cluster.killAll();
    await env?.close();
  });

  async function start(): Promise<string> {
    const api = await cluster.startApi();
    service = api.proc;
    return api.base;
  }

  const track = (base: string, seq: number) =>
    fetch(`${base}/v1/track`, {
      method: 'POST',
      headers: { authorization: `Bearer ${project.secretKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        email: `crash${seq % 200}@example.com`,
        event: 'crash',
        data: { seq },
      }),
    });

  it('keeps every answered track exactly once, and takes tracks again after a restart', async () => {
    const base = await start();
    const acked = new Map<number, string>(); // seq → event id
    let seq = 0;
    let stop = false;
    let alive = 32;
    const clients = Array.from({ length: 32 }, async () => {
      while (!stop) {
        const mine = seq++;
        try {
          const res = await track(base, mine);
          if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
          acked.set(mine, ((await res.json()) as { data: { event: string } }).data.event);
        } catch {
          alive--;
          return; // the process is gone (or answers errors: the count below then stays short)
        }
      }
      alive--;
    });
    // Kill it mid-stream, once plenty of tracks have been answered.
    while (acked.size < 1500 && alive > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(acked.size).toBeGreaterThanOrEqual(1500);
    expect(await cluster.stop(service as ServiceProcess, 'SIGKILL')).toBe('SIGKILL');
    stop = true;
    await Promise.all(clients);

    const rows: Array<{ id: string; seq: number }> = await dataSource.query(
      `SELECT id, (data->>'seq')::int AS seq FROM events WHERE project_id = $1 AND name = 'crash'`,
      [project.id],
    );
    const stored = new Map(rows.map((row) => [row.seq, row.id]));
    expect(stored.size).toBe(rows.length); // no track written twice
    for (const [mine, eventId] of acked) expect(stored.get(mine)).toBe(eventId); // answered ⇒ committed
    // Committed but never answered: at most the requests that were in flight.
    expect(rows.length - acked.size).toBeLessThanOrEqual(32);
    expect(rows.length - acked.size).toBeGreaterThanOrEqual(0);
    const [{ contacts }] = await dataSource.query(
      `SELECT count(*)::int AS contacts FROM contacts WHERE project_id = $1`,
      [project.id],
    );
    expect(contacts).toBe(200);

    const again = await start();
    const res = await track(again, seq + 1);
    expect(res.status).toBe(200);
    // Nest closes HTTP and the pools, then re-raises the signal it caught.
    expect([0, 'SIGTERM']).toContain(await cluster.stop(service as ServiceProcess, 'SIGTERM'));
  }, 120_000);
});
