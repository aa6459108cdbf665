import { Client } from 'pg';
import {
  createTestDatabase,
  flushPrefix,
  PG_ADMIN_URL,
  startTestApp,
  testConfig,
  TestApp,
  TestProject,
  uniqueName,
} from './support/test-app';

async function sql<T = Record<string, unknown>>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end();
  }
}

/**
 * DATABASE_READ_URL: the reads that tolerate lag come from it, everything else from the primary.
 * The "replica" is a copy of the primary (CREATE DATABASE … TEMPLATE) changed on purpose, so each
 * answer shows which database it came from: there every contact is on plan "pro", the templates
 * are renamed and one campaign is SENT with 7 recipients.
 */
describe('DATABASE_READ_URL (e2e)', () => {
  let primary: Awaited<ReturnType<typeof createTestDatabase>>;
  let replicaUrl: string;
  const replicaName = uniqueName('mw_test_replica');
  const prefix = uniqueName('mwread');
  let app: TestApp;
  let project: TestProject;
  let segmentId: string;
  let sentCampaign: string;
  let draftCampaign: string;
  let contactId: string;

  const request = (method: 'GET' | 'POST' | 'PATCH', url: string, body?: unknown) =>
    app.request({ method, url, key: project.secretKey, body });

  beforeAll(async () => {
    primary = await createTestDatabase();
    // Seed through the app on the primary alone, then copy the database.
    const seeder = await startTestApp(testConfig(primary.url, prefix));
    const seeded = await seeder.createProject('Replicated');
    const seed = (method: 'POST', url: string, body: unknown) =>
      seeder.request({ method, url, key: seeded.secretKey, body });
    for (const email of ['a@example.org', 'b@example.org', 'c@example.org']) {
      const res = await seed('POST', '/contacts', { email, data: { plan: 'free' } });
      expect(res.status).toBe(201);
      contactId = res.body.data.id;
    }
    await seed('POST', '/v1/track', { email: 'a@example.org', event: 'visited' });
    const template = await seed('POST', '/templates', {
      name: 'Welcome',
      subject: 'Hi',
      body: 'Hello',
      type: 'MARKETING',
    });
    expect(template.status).toBe(201);
    const segment = await seed('POST', '/segments', {
      name: 'Pro',
      condition: {
        logic: 'AND',
        conditions: [{ field: 'data.plan', operator: 'equals', value: 'pro' }],
      },
    });
    expect(segment.status).toBe(201);
    segmentId = segment.body.data.id;
    const campaign = () =>
      seed('POST', '/campaigns', {
        name: 'News',
        subject: 'News',
        body: 'Hello',
        from: 'news@acme.test',
        audienceType: 'ALL',
      });
    sentCampaign = (await campaign()).body.data.id;
    draftCampaign = (await campaign()).body.data.id;
    await seeder.close();
    await flushPrefix(prefix);

    await sql(PG_ADMIN_URL, `CREATE DATABASE "${replicaName}" TEMPLATE "${primary.name}"`);
    const replica = new URL(PG_ADMIN_URL);
    replica.pathname = `/${replicaName}`;
    replicaUrl = replica.toString();
    await sql(replicaUrl, `UPDATE contacts SET data = '{"plan": "pro"}'`);
    await sql(replicaUrl, `UPDATE templates SET name = 'Welcome (replica)'`);
    await sql(replicaUrl, `UPDATE segments SET member_count = NULL, member_count_at = NULL`);
    await sql(
      replicaUrl,
      `UPDATE campaigns SET status = 'SENT', recipient_count = 7, started_at = now(), finished_at = now()
        WHERE id = $1`,
      [sentCampaign],
    );

    app = await startTestApp(testConfig(primary.url, prefix, { DATABASE_READ_URL: replicaUrl }));
    project = { ...seeded };
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await flushPrefix(prefix);
    await primary?.drop();
    await sql(PG_ADMIN_URL, `DROP DATABASE IF EXISTS "${replicaName}" WITH (FORCE)`);
  });

  it('serves list pages from the read database', async () => {
    const contacts = await request('GET', '/contacts');
    expect(contacts.status).toBe(200);
    expect(contacts.body.data.items.map((c: { data: object }) => c.data)).toEqual([
      { plan: 'pro' },
      { plan: 'pro' },
      { plan: 'pro' },
    ]);
    const templates = await request('GET', '/templates');
    expect(templates.body.data.items.map((t: { name: string }) => t.name)).toEqual([
      'Welcome (replica)',
    ]);
    const campaigns = await request('GET', '/campaigns?status=SENT');
    expect(campaigns.body.data.items.map((c: { id: string }) => c.id)).toEqual([sentCampaign]);
    const events = await request('GET', '/events?name=visited');
    expect(events.body.data.items).toHaveLength(1);
  });

  it('counts, previews and pages segment members on the read database, and stores the count on the primary', async () => {
    const shown = await request('GET', `/segments/${segmentId}`);
    expect(shown.status).toBe(200);
    expect(shown.body.data.memberCount).toBe(3); // on the primary nobody is "pro"
    const members = await request('GET', `/segments/${segmentId}/contacts`);
    expect(members.body.data.items).toHaveLength(3);
    const preview = await request('POST', '/segments/preview', {
      condition: {
        logic: 'AND',
        conditions: [{ field: 'data.plan', operator: 'equals', value: 'pro' }],
      },
    });
    expect(preview.status).toBe(200);
    expect(preview.body.data.count).toBe(3);
    // The count is a write: stored on the primary, not on the read database.
    const [stored] = await sql<{ member_count: number | null }>(
      primary.url,
      `SELECT member_count FROM segments WHERE id = $1`,
      [segmentId],
    );
    expect(stored.member_count).toBe(3);
    const [copy] = await sql<{ member_count: number | null }>(
      replicaUrl,
      `SELECT member_count FROM segments WHERE id = $1`,
      [segmentId],
    );
    expect(copy.member_count).toBeNull();
  });

  it("reads a finished campaign's stats from the read database, a running one's from the primary", async () => {
    const sent = await request('GET', `/campaigns/${sentCampaign}/stats`);
    expect(sent.status).toBe(200);
    expect(sent.body.data).toMatchObject({ status: 'SENT', recipients: 7 });
    const draft = await request('GET', `/campaigns/${draftCampaign}/stats`);
    expect(draft.body.data).toMatchObject({ status: 'DRAFT', recipients: 0 });
    // The resource itself is not a lag-tolerant read: the primary's DRAFT.
    const shown = await request('GET', `/campaigns/${sentCampaign}`);
    expect(shown.body.data.status).toBe('DRAFT');
  });

  it('serves the /metrics status gauges from the read database', async () => {
    const metrics = await app.request({ method: 'GET', url: '/metrics' });
    expect(metrics.status).toBe(200);
    expect(metrics.raw).toMatch(/^mailwright_campaigns\{status="SENT"\} 1$/m);
  });

  it('keeps writes and reads of one resource on the primary', async () => {
    const one = await request('GET', `/contacts/${contactId}`);
    expect(one.body.data.data).toEqual({ plan: 'free' });
    const patched = await request('PATCH', `/contacts/${contactId}`, { data: { city: 'Oslo' } });
    expect(patched.status).toBe(200);
    expect(patched.body.data.data).toEqual({ plan: 'free', city: 'Oslo' });
    const created = await request('POST', '/contacts', { email: 'new@example.org' });
    expect(created.status).toBe(201);
    const inPrimary = await sql(
      primary.url,
      `SELECT 1 FROM contacts WHERE email = 'new@example.org'`,
    );
    const inReplica = await sql(
      replicaUrl,
      `SELECT 1 FROM contacts WHERE email = 'new@example.org'`,
    );
    expect([inPrimary.length, inReplica.length]).toEqual([1, 0]);
    const tracked = await request('POST', '/v1/track', {
      email: 'b@example.org',
      event: 'visited',
    });
    expect(tracked.status).toBe(200);
    const [{ n }] = await sql<{ n: number }>(
      primary.url,
      `SELECT count(*)::int AS n FROM events WHERE name = 'visited'`,
    );
    expect(n).toBe(2);
    // …and the events page, a lag-tolerant read, still shows the copy's one.
    const events = await request('GET', '/events?name=visited');
    expect(events.body.data.items).toHaveLength(1);
  });
});
