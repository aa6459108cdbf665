import { Client } from 'pg';
import { BACKGROUND_RECOUNTS } from '../src/segments/segments.service';
import { pollUntil } from './support/poll';
import { setupTestApp, TestApp } from './support/test-app';

/**
 * GET /segments serves stale counts and leaves the recounts to a bounded background runner:
 * listing many stale segments cannot fill the connection pool every tenant shares.
 */
describe('segment list recounts are bounded (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let pg: Client;

  beforeAll(async () => {
    ctx = await setupTestApp();
    app = ctx.app;
    pg = new Client({ connectionString: ctx.db.url });
    await pg.connect();
  });
  afterAll(async () => {
    await pg.end();
    await ctx.close();
  });

  it(`runs at most ${BACKGROUND_RECOUNTS} recounts at once however many stale segments a page shows`, async () => {
    const { secretKey: key, id: projectId } = await app.createProject('Recounts');
    for (let i = 0; i < 3; i++) {
      await app.request({
        method: 'POST',
        url: '/contacts',
        key,
        body: { email: `c${i}@example.org`, data: { n: i } },
      });
    }
    for (let i = 0; i < 12; i++) {
      const res = await app.request({
        method: 'POST',
        url: '/segments',
        key,
        body: {
          name: `S${i}`,
          condition: {
            logic: 'AND',
            conditions: [{ field: 'data.n', operator: 'greaterThanOrEqual', value: i % 3 }],
          },
        },
      });
      expect(res.status).toBe(201);
    }
    await pg.query(
      `UPDATE segments SET member_count_at = now() - interval '1 hour' WHERE project_id = $1`,
      [projectId],
    );

    // Every count must wait for this lock, so the counts in flight stay visible in pg_stat_activity.
    const blocker = new Client({ connectionString: ctx.db.url });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE contacts IN ACCESS EXCLUSIVE MODE');
    const waitingCounts = async (): Promise<number> =>
      Number(
        (
          await pg.query(
            `SELECT count(*) AS n FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> $1 AND query ILIKE '%contacts%'`,
            [(blocker as unknown as { processID: number }).processID],
          )
        ).rows[0].n,
      );
    try {
      const list = await app.request({ method: 'GET', url: '/segments?limit=20', key });
      expect(list.status).toBe(200);
      expect(list.body.data.items).toHaveLength(12);
      expect(await pollUntil(waitingCounts, (n) => n >= BACKGROUND_RECOUNTS, 10_000)).toBe(
        BACKGROUND_RECOUNTS,
      );
      // A second list while they run schedules nothing twice and starts nothing more.
      expect((await app.request({ method: 'GET', url: '/segments?limit=20', key })).status).toBe(
        200,
      );
      // Asserts that nothing more starts: a pause, then the same count.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(await waitingCounts()).toBe(BACKGROUND_RECOUNTS);
    } finally {
      await blocker.query('COMMIT');
      await blocker.end();
    }
    // Once the lock is gone every stale segment is recounted.
    const recounted = await pollUntil(
      async () =>
        Number(
          (
            await pg.query(
              `SELECT count(*) AS n FROM segments WHERE project_id = $1 AND member_count_at > now() - interval '1 minute'`,
              [projectId],
            )
          ).rows[0].n,
        ),
      (n) => n === 12,
      20_000,
    );
    expect(recounted).toBe(12);
  });
});
