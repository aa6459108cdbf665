import { Client } from 'pg';
import { setupTestApp, TestApp, TestProject } from './support/test-app';

/** A body the render pool stops at RENDER_TIMEOUT_MS: it keeps a render thread busy until then. */
const SLOW = '{% assign a = (1..3000000) %}{{ a | where_exp: "i", "i > 0" | size }}';

/**
 * POST /v1/send renders every message before its transaction: no connection sits idle in a
 * transaction (holding the idempotency key and contact locks) while the render pool works, and a
 * render that fails leaves nothing behind. The process is API-only so that any transaction seen
 * in the database is the request's.
 */
describe('POST /v1/send renders outside its transaction (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let project: TestProject;
  let observer: Client;

  beforeAll(async () => {
    ctx = await setupTestApp({
      APP_ROLE: 'api',
      REQUIRE_VERIFIED_SENDER: 'false',
      RENDER_TIMEOUT_MS: '2000',
    });
    app = ctx.app;
    project = await app.createProject('Slow renders');
    observer = new Client({ connectionString: ctx.db.url });
    await observer.connect();
  });
  afterAll(async () => {
    await observer?.end();
    await ctx?.close();
  });

  /**
   * Sessions holding a transaction open between statements, as a transaction that waits for a
   * render does. A statement that happens to be running (the request's own reads, each its own
   * transaction) is not one of them.
   */
  async function transactionsOpen(): Promise<number> {
    const { rows } = await observer.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid()
          AND state LIKE 'idle in transaction%'`,
    );
    return rows[0].n;
  }

  it('holds no transaction while a slow render runs, and a failed render creates nothing', async () => {
    const seeded = await app.request({
      method: 'POST',
      url: '/contacts',
      key: project.secretKey,
      body: { email: 'old@example.org', data: { plan: 'free' } },
    });
    expect(seeded.status).toBe(201);

    let answered = false;
    const sending = app
      .request({
        method: 'POST',
        url: '/v1/send',
        key: project.secretKey,
        headers: { 'idempotency-key': 'slow-render-1' },
        body: {
          to: ['old@example.org', 'new@example.org'],
          from: 'hello@acme.test',
          subject: 'Hi',
          body: SLOW,
          data: { plan: 'pro' },
        },
      })
      .finally(() => {
        answered = true;
      });
    // Sampled for as long as the request runs: the render alone takes RENDER_TIMEOUT_MS.
    const samples: number[] = [];
    while (!answered) {
      samples.push(await transactionsOpen());
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const res = await sending;

    expect(res.status).toBe(422);
    expect(res.body.error.errors[0]).toMatchObject({ field: 'body', code: 'invalid_template' });
    expect(samples.length).toBeGreaterThan(10);
    expect(Math.max(...samples)).toBe(0);

    const contacts = await observer.query(
      `SELECT email, data FROM contacts WHERE project_id = $1 ORDER BY email`,
      [project.id],
    );
    expect(contacts.rows).toEqual([{ email: 'old@example.org', data: { plan: 'free' } }]);
    const left = await observer.query<{ emails: number; keys: number; attachments: number }>(
      `SELECT (SELECT count(*)::int FROM emails WHERE project_id = $1) AS emails,
              (SELECT count(*)::int FROM idempotency_keys WHERE project_id = $1) AS keys,
              (SELECT count(*)::int FROM email_attachments WHERE project_id = $1) AS attachments`,
      [project.id],
    );
    expect(left.rows[0]).toEqual({ emails: 0, keys: 0, attachments: 0 });
  });

  it("renders with the contact's data as the send leaves it, for new and existing contacts", async () => {
    await app.request({
      method: 'POST',
      url: '/contacts',
      key: project.secretKey,
      body: { email: 'kim@example.org', data: { plan: 'free', city: 'Oslo' } },
    });
    const res = await app.request({
      method: 'POST',
      url: '/v1/send',
      key: project.secretKey,
      body: {
        to: ['kim@example.org', 'lee@example.org'],
        from: 'hello@acme.test',
        subject: '{{ contact.data.plan }} {{ contact.data.city | default: "-" }}',
        body: '<a href="{{ unsubscribeUrl }}">{{ contact.id }}</a>',
        data: { plan: 'pro', city: null },
      },
    });
    expect(res.status).toBe(200);
    const rows = await observer.query<{
      to_email: string;
      subject: string;
      html: string;
      contact_id: string;
      data: unknown;
    }>(
      `SELECT e.to_email, e.subject, e.html, e.contact_id, c.data
         FROM emails e JOIN contacts c ON c.id = e.contact_id
        WHERE e.project_id = $1 AND e.to_email IN ('kim@example.org', 'lee@example.org')
        ORDER BY e.to_email`,
      [project.id],
    );
    expect(rows.rows.map((r) => [r.to_email, r.subject, r.data])).toEqual([
      ['kim@example.org', 'pro -', { plan: 'pro' }],
      ['lee@example.org', 'pro -', { plan: 'pro' }],
    ]);
    // The ids rendered are the ids stored: the new contact was created with the id it was rendered for.
    for (const row of rows.rows) expect(row.html).toContain(`>${row.contact_id}</a>`);
  });

  it("a campaign's test send renders outside its transaction too", async () => {
    // Fast with the save-time trial's empty data, slow with this contact's: only the test send is slow.
    const body = '{% assign a = (1..contact.data.n) %}{{ a | where_exp: "i", "i > 0" | size }}';
    const contact = await app.request({
      method: 'POST',
      url: '/contacts',
      key: project.secretKey,
      body: { email: 'tester@example.org', data: { n: 3000000 } },
    });
    expect(contact.status).toBe(201);
    const created = await app.request({
      method: 'POST',
      url: '/campaigns',
      key: project.secretKey,
      body: { name: 'Slow test', subject: 'Hi', body, from: 'news@acme.test', audienceType: 'ALL' },
    });
    expect(created.status).toBe(201);
    let answered = false;
    const testing = app
      .request({
        method: 'POST',
        url: `/campaigns/${created.body.data.id}/test`,
        key: project.secretKey,
        body: { emails: ['tester@example.org'] },
      })
      .finally(() => {
        answered = true;
      });
    const samples: number[] = [];
    while (!answered) {
      samples.push(await transactionsOpen());
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const res = await testing;
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0]).toMatchObject({ code: 'invalid_template' });
    expect(samples.length).toBeGreaterThan(10);
    expect(Math.max(...samples)).toBe(0);
    const left = await observer.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM emails WHERE project_id = $1 AND to_email = 'tester@example.org'`,
      [project.id],
    );
    expect(left.rows[0].n).toBe(0);
  });
});
