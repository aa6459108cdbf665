import { DataSource } from 'typeorm';
import { holdContactLocks, lockWaiters } from './support/locks';
import {
  flushPrefix,
  setupTestApp,
  startTestApp,
  testConfig,
  TestApp,
  TestProject,
} from './support/test-app';

const API_MS = 1000;
const BACKGROUND_MS = 250_000;

/** The statement_timeout, in ms, that a statement run through `dataSource` outside a request gets. */
async function backgroundBound(dataSource: DataSource): Promise<number> {
  const [{ setting }] = await dataSource.query(
    `SELECT setting FROM pg_settings WHERE name = 'statement_timeout'`,
  );
  return Number(setting);
}

/**
 * A request's statements stop after API_STATEMENT_TIMEOUT_MS: 503 TIMEOUT with Retry-After, the
 * transaction rolled back, other tenants unaffected. Jobs and sweeps keep the background bound, in
 * a worker-only process and beside requests in a process with both roles (the tests' default).
 * The slow statement is a real wait: a row lock held by another session, which statement_timeout
 * ends the same way it ends a slow query.
 */
describe('statement timeouts (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let dataSource: DataSource;
  let slow: TestProject;
  let other: TestProject;

  beforeAll(async () => {
    ctx = await setupTestApp({
      API_STATEMENT_TIMEOUT_MS: String(API_MS),
      BACKGROUND_STATEMENT_TIMEOUT_MS: String(BACKGROUND_MS),
    });
    app = ctx.app;
    dataSource = app.app.get(DataSource);
    slow = await app.createProject('Slow tenant');
    other = await app.createProject('Other tenant');
  });
  afterAll(async () => ctx?.close());

  async function contactsOf(projectId: string): Promise<Array<{ email: string; data: unknown }>> {
    return dataSource.query(
      `SELECT email, data FROM contacts WHERE project_id = $1 ORDER BY email COLLATE "C"`,
      [projectId],
    );
  }

  it('answers 503 TIMEOUT with Retry-After when a send waits too long, and leaves nothing half done', async () => {
    const seeded = await app.request({
      method: 'POST',
      url: '/contacts',
      key: slow.secretKey,
      body: { email: 'zoe@example.org', data: { plan: 'free' } },
    });
    expect(seeded.status).toBe(201);
    const contactsBefore = await contactsOf(slow.id);
    const [{ n: emailsBefore }] = await dataSource.query(
      `SELECT count(*)::int AS n FROM emails WHERE project_id = $1`,
      [slow.id],
    );

    const locks = await holdContactLocks(dataSource, slow.id, ['zoe@example.org']);
    try {
      // ann@ is created first (email order), then the upsert of zoe@ waits for the lock.
      const sending = app.request({
        method: 'POST',
        url: '/v1/send',
        key: slow.secretKey,
        body: {
          to: ['ann@example.org', 'zoe@example.org'],
          from: 'hello@acme.test',
          subject: 'Hi',
          body: 'Hello {{ email }}',
          data: { plan: 'pro' },
        },
      });
      await lockWaiters(dataSource, 1);
      // Another tenant is served while the first request waits.
      const meanwhile = await app.request({
        method: 'POST',
        url: '/contacts',
        key: other.secretKey,
        body: { email: 'ok@example.org' },
      });
      expect(meanwhile.status).toBe(201);

      const res = await sending;
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
      expect(res.body).toMatchObject({
        success: false,
        error: { code: 'TIMEOUT', statusCode: 503, requestId: res.headers['x-request-id'] },
      });
      expect(res.body.error.suggestion).toEqual(expect.any(String));
      expect(res.body.error.suggestion.length).toBeGreaterThan(0);
      expect(res.body.message).toBe(res.body.error.message);
      expect(res.raw).not.toMatch(/SELECT|INSERT|statement timeout/i);
    } finally {
      await locks.rollback();
    }

    // Rolled back: no ann@, zoe@'s data as it was, no email.
    expect(await contactsOf(slow.id)).toEqual(contactsBefore);
    const [{ n: emailsAfter }] = await dataSource.query(
      `SELECT count(*)::int AS n FROM emails WHERE project_id = $1`,
      [slow.id],
    );
    expect(emailsAfter).toBe(emailsBefore);

    // The bound is per statement, not a broken connection: the same send now goes through.
    const again = await app.request({
      method: 'POST',
      url: '/v1/send',
      key: slow.secretKey,
      body: {
        to: ['ann@example.org', 'zoe@example.org'],
        from: 'hello@acme.test',
        subject: 'Hi',
        body: 'Hello {{ email }}',
        data: { plan: 'pro' },
      },
    });
    expect(again.status).toBe(200);
  });

  it('answers 503 TIMEOUT for an update that waits on a locked contact; the contact is unchanged', async () => {
    const created = await app.request({
      method: 'POST',
      url: '/contacts',
      key: slow.secretKey,
      body: { email: 'max@example.org', data: { plan: 'free' } },
    });
    const locks = await holdContactLocks(dataSource, slow.id, ['max@example.org']);
    let res;
    try {
      res = await app.request({
        method: 'PATCH',
        url: `/contacts/${created.body.data.id}`,
        key: slow.secretKey,
        body: { data: { plan: 'pro' }, subscribed: false },
      });
    } finally {
      await locks.rollback();
    }
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('TIMEOUT');
    const after = await app.request({
      method: 'GET',
      url: `/contacts/${created.body.data.id}`,
      key: slow.secretKey,
    });
    expect(after.body.data).toMatchObject({ subscribed: true, data: { plan: 'free' } });
  });

  it('answers 503 TIMEOUT to a segment preview whose condition is too expensive, instead of stalling', async () => {
    const heavy = await app.createProject('Heavy tenant');
    // Seeded outside any request (the background bound), without the contacts' row triggers: they
    // keep segment memberships, and this project has no segment; with them seeding takes a minute.
    await dataSource.transaction(async (manager) => {
      await manager.query('SET LOCAL session_replication_role = replica');
      await manager.query(
        `INSERT INTO contacts (id, project_id, email, subscribed, suppressed, data, created_at, updated_at)
         SELECT gen_random_uuid(), $1, 'c' || g || '@example.org', true, false,
                jsonb_build_object('city', repeat(md5(g::text), 20), 'n', g), now(), now()
           FROM generate_series(1, 200000) AS g`,
        [heavy.id],
      );
    });
    await dataSource.query('ANALYZE contacts');
    // 50 substring rules that match nobody: each of 200,000 addresses' 640-character city is searched
    // 50 times, seconds of work however fast the machine.
    const condition = {
      logic: 'OR',
      conditions: Array.from({ length: 50 }, (_, i) => ({
        field: 'data.city',
        operator: 'contains',
        value: `zz${i}zz`,
      })),
    };
    const res = await app.request({
      method: 'POST',
      url: '/segments/preview',
      key: heavy.secretKey,
      body: { condition },
    });
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('TIMEOUT');
    expect(res.headers['retry-after']).toMatch(/^\d+$/);

    // The same tenant's cheap requests still work.
    const cheap = await app.request({
      method: 'POST',
      url: '/segments/preview',
      key: slow.secretKey,
      body: { condition: { logic: 'AND', conditions: [condition.conditions[0]] } },
    });
    expect(cheap.status).toBe(200);
  }, 180_000);

  it('gives statements outside requests the background bound, also on connections requests used', async () => {
    // Requests switch pooled connections to the API bound; work outside them must not inherit it.
    for (let i = 0; i < 5; i++) {
      const res = await app.request({ method: 'GET', url: '/contacts', key: slow.secretKey });
      expect(res.status).toBe(200);
    }
    const bounds = await Promise.all(Array.from({ length: 5 }, () => backgroundBound(dataSource)));
    expect(bounds).toEqual(Array(5).fill(BACKGROUND_MS));
  });

  it('gives a worker-only process the background bound', async () => {
    const worker = await startTestApp(
      testConfig(ctx.db.url, `${ctx.prefix}w`, {
        APP_ROLE: 'worker',
        API_STATEMENT_TIMEOUT_MS: String(API_MS),
        BACKGROUND_STATEMENT_TIMEOUT_MS: String(BACKGROUND_MS),
      }),
    );
    try {
      expect(await backgroundBound(worker.app.get(DataSource))).toBe(BACKGROUND_MS);
    } finally {
      await worker.close();
      await flushPrefix(`${ctx.prefix}w`);
    }
  });
});
