import { DataSource } from 'typeorm';
import { pollUntil } from './support/poll';
import { SendingTest, startSendingTest, waitForEmailStatus } from './support/sending';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * POST /bounces (source api) and the suppressions (GET/POST/DELETE
 * /suppressions) end to end, and the campaign stats the policy feeds:
 * complained, complaintRate, late hard bounces in bounced.
 */
describe('POST /bounces, suppressions and campaign stats (e2e)', () => {
  let t: SendingTest;
  let db: DataSource;
  const req = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown, key?: string) =>
    t.app.request({ method, url, key: key ?? t.project.secretKey, body });
  const email = async (id: string) => (await req('GET', `/emails/${id}`)).body.data as Json;

  async function delivered(to: string): Promise<Json> {
    const res = await t.send({ to, from: 'hello@acme.test', subject: 'Hi', body: '<p>Hi</p>' });
    return waitForEmailStatus(t.app, t.project.secretKey, res.body.data.emails[0].id, ['SENT']);
  }

  beforeAll(async () => {
    t = await startSendingTest('Bounces API');
    db = t.app.app.get(DataSource);
  });

  afterAll(async () => t?.close());

  it('hard by emailId: BOUNCED with source api, shown by GET /emails/{id} and GET /contacts/{id}', async () => {
    const sent = await delivered('api-hard@example.org');
    const res = await req('POST', '/bounces', {
      emailId: sent.id,
      type: 'hard',
      status: '5.1.1',
      diagnostic: 'mailbox gone',
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ outcome: 'applied', emailId: sent.id });
    expect(await email(sent.id)).toMatchObject({
      status: 'BOUNCED',
      bounce: { type: 'hard', status: '5.1.1', diagnostic: 'mailbox gone', source: 'api' },
    });
    expect(await t.contact(sent.contactId)).toMatchObject({ suppressed: true, subscribed: false });
  });

  it('complaint and soft by address: the latest email to that address', async () => {
    await delivered('api-two@example.org');
    const latest = await delivered('api-two@example.org');
    const soft = await req('POST', '/bounces', { email: ' API-Two@example.org ', type: 'soft' });
    expect(soft.body.data).toEqual({ outcome: 'applied', emailId: latest.id });
    expect(await email(latest.id)).toMatchObject({
      status: 'SENT',
      bounce: { type: 'soft', source: 'api' },
    });
    const complaint = await req('POST', '/bounces', {
      email: 'api-two@example.org',
      type: 'complaint',
    });
    expect(complaint.body.data).toEqual({ outcome: 'applied', emailId: latest.id });
    const after = await email(latest.id);
    expect(after.status).toBe('COMPLAINED');
    expect(after.complainedAt).not.toBeNull();
    expect(await t.contact(latest.contactId)).toMatchObject({
      suppressed: true,
      subscribed: false,
    });
    const events = await req('GET', `/events?contactId=${latest.contactId}&name=email.complained`);
    expect(events.body.data.items[0].data).toEqual({ feedbackType: 'abuse', source: 'api' });
  });

  it('another project’s email id, or an address never mailed: unmatched, nothing changes', async () => {
    const sent = await delivered('api-mine@example.org');
    const other = await t.app.createProject('Bounces API other');
    const foreign = await req(
      'POST',
      '/bounces',
      { emailId: sent.id, type: 'hard' },
      other.secretKey,
    );
    expect(foreign.status).toBe(200);
    expect(foreign.body.data).toEqual({ outcome: 'unmatched', emailId: null });
    expect((await email(sent.id)).status).toBe('SENT');
    const unknown = await req('POST', '/bounces', { email: 'never@example.org', type: 'hard' });
    expect(unknown.body.data).toEqual({ outcome: 'unmatched', emailId: null });
    const [{ n }] = await db.query(
      `SELECT count(*)::int AS n FROM bounce_reports WHERE outcome = 'unmatched' AND project_id IN ($1, $2)`,
      [t.project.id, other.id],
    );
    expect(n).toBe(2);
  });

  it('validation: 422 in the contract’s envelope (neither or both of emailId/email, bad type, unknown field)', async () => {
    const neither = await req('POST', '/bounces', { type: 'hard' });
    expect(neither.status).toBe(422);
    expect(neither.body.error).toMatchObject({
      code: 'VALIDATION_ERROR',
      errors: [{ field: 'emailId', code: 'required' }],
    });
    const both = await req('POST', '/bounces', {
      emailId: '01900000-0000-7000-8000-000000000000',
      email: 'a@example.org',
      type: 'hard',
    });
    expect(both.status).toBe(422);
    const badType = await req('POST', '/bounces', { email: 'a@example.org', type: 'delayed' });
    expect(badType.status).toBe(422);
    expect(badType.body.error.errors[0]).toMatchObject({
      field: 'type',
      code: 'invalid_enum_value',
    });
    const unknown = await req('POST', '/bounces', {
      email: 'a@example.org',
      type: 'hard',
      reason: 'x',
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.errors[0]).toMatchObject({
      field: 'reason',
      code: 'unrecognized_keys',
    });
    const pk = await req(
      'POST',
      '/bounces',
      { email: 'a@example.org', type: 'hard' },
      t.project.publicKey,
    );
    expect(pk.status).toBe(403);
  });

  it('suppressions: listed with reason and time, filtered, added by hand, lifted (the contact stays unsubscribed)', async () => {
    const list = async (query = '') =>
      (await req('GET', `/suppressions${query}`)).body.data as Json;
    const all = await list();
    expect(all.items.map((i: Json) => i.email)).toEqual(
      expect.arrayContaining(['api-hard@example.org', 'api-two@example.org']),
    );
    const complaints = await list('?reason=complaint');
    expect(complaints.items.map((i: Json) => [i.email, i.reason])).toEqual([
      ['api-two@example.org', 'complaint'],
    ]);
    expect(complaints.items[0].suppressedAt).toMatch(/^\d{4}-/);
    expect((await list('?reason=bounce')).items.map((i: Json) => i.email)).toContain(
      'api-hard@example.org',
    );

    const created = await req('POST', '/suppressions', { email: 'Manual@Example.org' });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({
      email: 'manual@example.org',
      reason: 'manual',
      subscribed: false,
    });
    const contactId = created.body.data.contactId as string;
    expect(await t.contact(contactId)).toMatchObject({ suppressed: true, subscribed: false });

    const page = await list('?limit=1');
    expect(page).toMatchObject({ hasMore: true, total: all.total + 1 });
    const next = await list(`?limit=1&cursor=${page.nextCursor}`);
    expect(next.items[0].contactId).not.toBe(page.items[0].contactId);
    expect((await req('GET', '/suppressions?reason=spam')).status).toBe(400);

    const lifted = await req('DELETE', `/suppressions/${contactId}`);
    expect(lifted.status).toBe(200);
    expect(lifted.body.data).toEqual({ id: contactId, deleted: true });
    expect(await t.contact(contactId)).toMatchObject({ suppressed: false, subscribed: false });
    expect((await req('DELETE', `/suppressions/${contactId}`)).status).toBe(404);
    expect((await list('?reason=manual')).items).toEqual([]);
    // A lifted contact is sent to again (transactional mail needs no subscription).
    const again = await delivered('manual@example.org');
    expect(again.status).toBe('SENT');
  });

  it('suppressions: newest suppression first whatever the contacts’ age, and the cursor walks them in that order', async () => {
    const ids: Record<string, string> = {};
    for (const name of ['o1', 'o2', 'o3']) {
      const res = await req('POST', '/contacts', { email: `${name}@order.example` });
      ids[name] = res.body.data.id;
    }
    // Suppressed in another order than created (and ids are time-ordered).
    for (const name of ['o3', 'o1', 'o2'])
      expect((await req('POST', '/suppressions', { email: `${name}@order.example` })).status).toBe(
        201,
      );
    const all = (await req('GET', '/suppressions?reason=manual')).body.data as Json;
    expect(all.items.map((i: Json) => i.contactId)).toEqual([ids.o2, ids.o1, ids.o3]);
    const walked: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await req(
        'GET',
        `/suppressions?reason=manual&limit=1${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(res.status).toBe(200);
      walked.push(...res.body.data.items.map((i: Json) => i.contactId as string));
      cursor = res.body.data.nextCursor;
    } while (cursor);
    expect(walked).toEqual([ids.o2, ids.o1, ids.o3]);
    expect((await req('GET', '/suppressions?cursor=bm9wZQ')).status).toBe(400);
  });

  it('late bounces and complaints are events of the contact: engagement rules and workflow triggers see them', async () => {
    const created = await req('POST', '/workflows', {
      name: 'On complaint',
      enabled: true,
      trigger: { type: 'EVENT', event: 'email.complained' },
      steps: [{ id: 'note', type: 'UPDATE_CONTACT', data: { complainedFlow: true } }],
    });
    expect(created.status).toBe(201);
    const workflowId = created.body.data.id as string;
    const complained = await delivered('engaged-complaint@example.org');
    const bounced = await delivered('engaged-bounce@example.org');
    const delayed = await delivered('engaged-delay@example.org');
    for (const [emailId, type] of [
      [complained.id, 'complaint'],
      [bounced.id, 'hard'],
    ])
      expect((await req('POST', '/bounces', { emailId, type })).body.data.outcome).toBe('applied');
    // A delay comes only from a DSN or a provider: recorded as the policy records it.
    await db.query(
      `INSERT INTO events (id, project_id, contact_id, email_id, name, data, created_at)
       VALUES (gen_random_uuid(), $1, $2, $3, 'email.delayed', '{}', now())`,
      [t.project.id, delayed.contactId, delayed.id],
    );
    const members = async (field: string, operator = 'triggered') => {
      const res = await req('POST', '/segments/preview', {
        condition: { logic: 'AND', conditions: [{ field, operator }] },
      });
      expect(res.status).toBe(200);
      // This test's contacts only (earlier tests bounced and complained too).
      return (res.body.data.sample as Json[])
        .map((c) => c.email as string)
        .filter((email) => email.startsWith('engaged-'))
        .sort();
    };
    expect(await members('email.complained')).toEqual(['engaged-complaint@example.org']);
    expect(await members('email.bounced')).toEqual(['engaged-bounce@example.org']);
    expect(await members('email.delayed')).toEqual(['engaged-delay@example.org']);
    // The complaint started the workflow for its contact, and only for it.
    const runs = await pollUntil(
      async () =>
        (await req('GET', `/workflows/${workflowId}/executions`)).body.data.items as Json[],
      (items) => items.length > 0 && items.every((x) => x.status === 'COMPLETED'),
      15_000,
    );
    expect(runs.map((x) => x.contactId)).toEqual([complained.contactId]);
    expect(await t.contact(complained.contactId)).toMatchObject({
      data: { complainedFlow: true },
    });
  });

  it('campaign stats: complained and complaintRate over sent; bounced counts late hard bounces; sent keeps them', async () => {
    for (const name of ['s1', 's2', 's3', 's4'])
      await req('POST', '/contacts', { email: `${name}@stats.example`, data: { tag: 'stats' } });
    const created = await req('POST', '/campaigns', {
      name: 'Stats',
      subject: 'Hi',
      body: '<p>Hi</p>',
      from: 'news@acme.test',
      audienceType: 'FILTERED',
      audienceFilter: {
        logic: 'AND',
        conditions: [{ field: 'data.tag', operator: 'equals', value: 'stats' }],
      },
    });
    const id = created.body.data.id as string;
    expect((await req('POST', `/campaigns/${id}/send`, {})).status).toBe(202);
    await pollUntil(
      async () => (await req('GET', `/campaigns/${id}`)).body.data.status,
      (s) => s === 'SENT',
      20_000,
    );
    const emails = (await req('GET', `/emails?campaignId=${id}`)).body.data.items as Json[];
    expect(emails).toHaveLength(4);
    await req('POST', '/bounces', { emailId: emails[0].id, type: 'hard' });
    await req('POST', '/bounces', { emailId: emails[1].id, type: 'complaint' });
    await req('POST', '/bounces', { emailId: emails[2].id, type: 'soft' });
    const stats = (await req('GET', `/campaigns/${id}/stats`)).body.data as Json;
    expect(stats).toMatchObject({
      recipients: 4,
      sent: 4,
      bounced: 1,
      complained: 1,
      bounceRate: 0.25,
      complaintRate: 0.25,
    });
    // The same report twice: the counts do not move.
    await req('POST', '/bounces', { emailId: emails[1].id, type: 'complaint' });
    expect((await req('GET', `/campaigns/${id}/stats`)).body.data).toEqual(stats);
    const [direct] = await db.query(
      `SELECT count(*) FILTER (WHERE status = 'BOUNCED')::int AS bounced,
              count(*) FILTER (WHERE status::text = 'COMPLAINED')::int AS complained,
              count(*) FILTER (WHERE sent_at IS NOT NULL)::int AS sent
         FROM emails WHERE campaign_id = $1`,
      [id],
    );
    expect(direct).toEqual({ bounced: 1, complained: 1, sent: 4 });
  });
});
