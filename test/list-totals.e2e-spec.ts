import { DataSource } from 'typeorm';
import { EXACT_TOTAL_CAP } from '../src/database/capped-count';
import { setupTestApp, TestApp, TestProject } from './support/test-app';

/**
 * List totals at scale: GET /contacts and GET /emails count exactly up to EXACT_TOTAL_CAP and
 * answer the planner's estimate past it, flagged `totalEstimated` (an exact count of a million
 * contacts is a full scan on every page). Rows are written with SQL: 10,000 through the API
 * would take minutes.
 */
describe('list totals past the exact-count cap (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let db: DataSource;
  let big: TestProject;
  let small: TestProject;
  const MANY = EXACT_TOTAL_CAP + 50;

  beforeAll(async () => {
    ctx = await setupTestApp();
    app = ctx.app;
    db = app.app.get(DataSource);
    big = await app.createProject('Big');
    small = await app.createProject('Small');
    // Every 1,000th contact unsubscribed: a filter that selects a few of the many.
    await db.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, suppressed, data)
       SELECT gen_random_uuid(), $1, 'c' || i || '@example.com', i % 1000 <> 0, false, '{}'
         FROM generate_series(1, $2::int) AS i`,
      [big.id, MANY],
    );
    const [{ id: contactId }] = await db.query(
      `SELECT id FROM contacts WHERE project_id = $1 LIMIT 1`,
      [big.id],
    );
    await db.query(
      `INSERT INTO emails (id, project_id, contact_id, source, to_email, from_email, subject, html, text, status, priority, attempts)
       SELECT gen_random_uuid(), $1, $2, 'TRANSACTIONAL', 'x@example.org', 'h@example.com', 'S', 'B', 'B',
              CASE WHEN i <= 3 THEN 'FAILED' ELSE 'QUEUED' END::email_status, 1, 0
         FROM generate_series(1, $3::int) AS i`,
      [big.id, contactId, MANY],
    );
    // The planner's estimate comes from the tables' statistics, as autovacuum keeps them.
    await db.query('ANALYZE contacts');
    await db.query('ANALYZE emails');
    await app.request({
      method: 'POST',
      url: '/contacts',
      key: small.secretKey,
      body: { email: 'one@example.com' },
    });
  }, 60_000);

  afterAll(async () => {
    await ctx?.close();
  });

  const get = (url: string, key: string) => app.request({ method: 'GET', url, key });

  it('estimates the total of a large contact list and says so; counts a small one exactly', async () => {
    const all = (await get('/contacts?limit=5', big.secretKey)).body.data;
    expect(all.items).toHaveLength(5);
    expect(all.hasMore).toBe(true);
    expect(all.totalEstimated).toBe(true);
    expect(all.total).toBeGreaterThan(EXACT_TOTAL_CAP);
    // An estimate, but from fresh statistics a close one.
    expect(Math.abs(all.total - MANY) / MANY).toBeLessThan(0.25);

    const few = (await get('/contacts?subscribed=false', big.secretKey)).body.data;
    expect(few).toMatchObject({ total: 10, totalEstimated: false });
    expect(few.items).toHaveLength(10);

    const mine = (await get('/contacts', small.secretKey)).body.data;
    expect(mine).toMatchObject({ total: 1, totalEstimated: false, hasMore: false });
  });

  it('does the same for emails, and every other list says its total is exact', async () => {
    const all = (await get('/emails?limit=1', big.secretKey)).body.data;
    expect(all.totalEstimated).toBe(true);
    expect(all.total).toBeGreaterThan(EXACT_TOTAL_CAP);
    const failed = (await get('/emails?status=FAILED', big.secretKey)).body.data;
    expect(failed).toMatchObject({ total: 3, totalEstimated: false });
    expect(failed.items).toHaveLength(3);

    const templates = (await get('/templates', big.secretKey)).body.data;
    expect(templates).toMatchObject({ total: 0, totalEstimated: false });
  });
});
