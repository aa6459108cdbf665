import { DataSource } from 'typeorm';
import { PinoNestLogger } from '../src/common/logging/logger';
import { pollUntil } from './support/poll';
import { SendingTest, startSendingTest } from './support/sending';

/**
 * Campaigns end to end (real Postgres, Redis, SMTP server): the resource and
 * its validation, the status machine (every illegal transition 409 and no
 * change), ALL/SEGMENT/FILTERED audiences compared with an independent
 * query, per-recipient rendering at delivery with List-Unsubscribe, exact
 * statistics, test sends, scheduling, cancel mid-send, and open/click/
 * unsubscribe counted per campaign.
 */
const BODY =
  '<html><body><p>Hello {{ firstName | default: "friend" }} ({{ contact.email }})</p>' +
  '<a href="https://shop.example/deal">Deal</a> <a href="{{ unsubscribeUrl }}">Unsubscribe</a></body></html>';

/** One header's unfolded value from the raw message. */
function rawHeader(raw: Buffer, name: string): string | undefined {
  const head = raw
    .toString('utf8')
    .split(/\r?\n\r?\n/)[0]
    .replace(/\r?\n[ \t]+/g, ' ');
  const line = head
    .split(/\r?\n/)
    .find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line?.slice(name.length + 1).trim();
}

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('campaigns (e2e)', () => {
  let t: SendingTest;
  let db: DataSource;
  let segmentId: string;
  const key = () => t.project.secretKey;
  const req = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
    t.app.request({ method, url, key: key(), body });
  const create = (body: Json = {}) =>
    req('POST', '/campaigns', {
      name: 'News',
      subject: 'News for {{ firstName | default: "you" }}',
      body: BODY,
      from: 'news@acme.test',
      audienceType: 'ALL',
      ...body,
    });
  const campaign = async (id: string) => (await req('GET', `/campaigns/${id}`)).body.data as Json;
  const stats = async (id: string) =>
    (await req('GET', `/campaigns/${id}/stats`)).body.data as Json;
  const waitForStatus = (id: string, statuses: string[], timeoutMs = 30_000) =>
    pollUntil(
      () => campaign(id),
      (c) => statuses.includes(c.status),
      timeoutMs,
      100,
    );

  /** The independent count: the campaign's email records by status, straight from the table. */
  async function directCounts(id: string): Promise<Record<string, number>> {
    const rows: Array<{ status: string; n: number }> = await db.query(
      'SELECT status, count(*)::int AS n FROM emails WHERE campaign_id = $1 GROUP BY status',
      [id],
    );
    return Object.fromEntries(rows.map((r) => [r.status.toLowerCase(), r.n]));
  }

  async function seedContact(
    email: string,
    fields: { subscribed: boolean; data?: Json; suppressed?: boolean },
  ) {
    const res = await req('POST', '/contacts', {
      email,
      subscribed: fields.subscribed,
      data: fields.data ?? {},
    });
    expect(res.status).toBe(201);
    if (fields.suppressed)
      await db.query('UPDATE contacts SET suppressed = true WHERE id = $1', [res.body.data.id]);
    return res.body.data.id as string;
  }

  beforeAll(async () => {
    t = await startSendingTest('Campaigns');
    db = t.app.app.get(DataSource);
    // 30 contacts: plan pro/free alternating, every 5th unsubscribed, every 7th suppressed.
    for (let i = 0; i < 30; i++) {
      await seedContact(`c${String(i).padStart(2, '0')}@example.org`, {
        subscribed: i % 5 !== 0,
        suppressed: i % 7 === 3,
        data: { firstName: `Name${i}`, plan: i % 2 === 0 ? 'pro' : 'free', score: i },
      });
    }
    const segment = await req('POST', '/segments', {
      name: 'Pro',
      condition: {
        logic: 'AND',
        conditions: [{ field: 'data.plan', operator: 'equals', value: 'pro' }],
      },
    });
    expect(segment.status).toBe(201);
    segmentId = segment.body.data.id;
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  describe('resource', () => {
    it('creates a DRAFT with the contract fields and defaults', async () => {
      const res = await create({
        description: 'Monthly',
        fromName: 'Acme',
        replyTo: 'Help@Acme.test',
      });
      expect(res.status).toBe(201);
      const c = res.body.data;
      expect(c).toMatchObject({
        name: 'News',
        description: 'Monthly',
        from: 'news@acme.test',
        fromName: 'Acme',
        replyTo: 'help@acme.test',
        audienceType: 'ALL',
        type: 'ALL',
        segmentId: null,
        audienceFilter: null,
        trackOpens: true,
        trackClicks: true,
        status: 'DRAFT',
        scheduledAt: null,
        startedAt: null,
        finishedAt: null,
        cancelledAt: null,
        recipientCount: null,
      });
    });

    it('validates the audience by type, the Liquid and the sender', async () => {
      const cases: Array<[Json, number, string]> = [
        [{ audienceType: 'SEGMENT' }, 422, 'segmentId'],
        [
          { audienceType: 'SEGMENT', segmentId: '0190d6b0-0000-7000-8000-000000000000' },
          422,
          'segmentId',
        ],
        [{ audienceType: 'FILTERED' }, 422, 'audienceFilter'],
        [
          {
            audienceType: 'FILTERED',
            audienceFilter: { logic: 'AND', conditions: [{ field: 'data.x', operator: 'nope' }] },
          },
          422,
          'audienceFilter.conditions[0].operator',
        ],
        [{ audienceType: 'ALL', segmentId }, 422, 'segmentId'],
        [{ subject: '{{ unclosed' }, 422, 'subject'],
        [{ body: '{% if %}' }, 422, 'body'],
        [{ audienceType: 'EVERYONE' }, 422, 'audienceType'],
      ];
      for (const [body, status, field] of cases) {
        const res = await create(body);
        expect({ body, status: res.status }).toEqual({ body, status });
        expect(res.body.error.errors.map((e: Json) => e.field)).toContain(field);
      }
      const unverified = await create({ from: 'news@elsewhere.test' });
      expect(unverified.status).toBe(403);
      expect(unverified.body.error.code).toBe('DOMAIN_NOT_VERIFIED');
      const invalidLiquid = await create({ subject: '{{ unclosed' });
      expect(invalidLiquid.body.error.errors[0].code).toBe('invalid_template');
    });

    it('lists with status and search filters; PATCH and DELETE a draft', async () => {
      const a = (await create({ name: 'Zeta launch' })).body.data;
      const list = await req('GET', '/campaigns?search=zeta&status=DRAFT');
      expect(list.status).toBe(200);
      expect(list.body.data.items.map((c: Json) => c.id)).toEqual([a.id]);
      const patched = await req('PATCH', `/campaigns/${a.id}`, {
        audienceType: 'SEGMENT',
        segmentId,
        trackOpens: false,
      });
      expect(patched.status).toBe(200);
      expect(patched.body.data).toMatchObject({
        audienceType: 'SEGMENT',
        segmentId,
        trackOpens: false,
        name: 'Zeta launch',
      });
      const back = await req('PATCH', `/campaigns/${a.id}`, { audienceType: 'ALL' });
      expect(back.body.data).toMatchObject({ audienceType: 'ALL', segmentId: null });
      expect((await req('PATCH', `/campaigns/${a.id}`, { name: null })).status).toBe(422);
      const deleted = await req('DELETE', `/campaigns/${a.id}`);
      expect(deleted.body.data).toEqual({ id: a.id, deleted: true });
      expect((await req('GET', `/campaigns/${a.id}`)).status).toBe(404);
    });

    it("another project's campaign is not found", async () => {
      const mine = (await create()).body.data;
      const other = await t.app.createProject('Other');
      const res = await t.app.request({
        method: 'GET',
        url: `/campaigns/${mine.id}`,
        key: other.secretKey,
      });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('CAMPAIGN_NOT_FOUND');
      const send = await t.app.request({
        method: 'POST',
        url: `/campaigns/${mine.id}/send`,
        key: other.secretKey,
        body: {},
      });
      expect(send.status).toBe(404);
      expect((await campaign(mine.id)).status).toBe('DRAFT');
    });
  });

  describe('sending', () => {
    const audiences: Array<[string, () => Json, string]> = [
      ['ALL', () => ({ audienceType: 'ALL' }), 'TRUE'],
      ['SEGMENT', () => ({ audienceType: 'SEGMENT', segmentId }), `c.data->>'plan' = 'pro'`],
      [
        'FILTERED',
        () => ({
          audienceType: 'FILTERED',
          audienceFilter: {
            logic: 'AND',
            conditions: [{ field: 'data.score', operator: 'greaterThanOrEqual', value: 12 }],
          },
        }),
        `(c.data->>'score')::int >= 12`,
      ],
    ];

    it.each(audiences)(
      '%s reaches exactly the subscribed, non-suppressed matching contacts, each rendered for them',
      async (_name, audience, where) => {
        const created = (await create({ name: `Send ${_name}`, ...audience() })).body.data;
        const before = t.smtp.accepted;
        const sent = await req('POST', `/campaigns/${created.id}/send`, {});
        expect(sent.status).toBe(202);
        expect(sent.body.data.status).toBe('SENDING');
        const done = await waitForStatus(created.id, ['SENT']);
        const expected: Array<{ id: string; email: string; first: string }> = await db.query(
          `SELECT c.id, c.email, c.data->>'firstName' AS first FROM contacts c
          WHERE c.project_id = $1 AND c.subscribed AND NOT c.suppressed AND ${where} ORDER BY c.email`,
          [t.project.id],
        );
        expect(expected.length).toBeGreaterThan(3);
        expect(done.recipientCount).toBe(expected.length);
        const records: Array<{
          id: string;
          contact_id: string;
          status: string;
          html: string | null;
          content_id: string | null;
          subject: string;
        }> = await db.query(
          'SELECT id, contact_id, status, html, content_id, subject FROM emails WHERE campaign_id = $1',
          [created.id],
        );
        expect(records.map((r) => r.contact_id).sort()).toEqual(expected.map((e) => e.id).sort());
        expect(
          records.every((r) => r.status === 'SENT' && r.html === null && r.content_id !== null),
        ).toBe(true);
        await t.smtp.waitForMessages(before + expected.length);
        const ids = new Set(records.map((r) => r.id));
        const mine = t.smtp.messages.filter((m) =>
          ids.has(/<([^@]+)@/.exec(m.parsed?.messageId ?? '')?.[1] ?? ''),
        );
        expect(mine).toHaveLength(expected.length);
        for (const contact of expected) {
          const messages = mine.filter((m) => m.to.includes(contact.email));
          expect({ email: contact.email, count: messages.length }).toEqual({
            email: contact.email,
            count: 1,
          });
          const parsed = messages[0].parsed!;
          expect(parsed.subject).toBe(`News for ${contact.first}`);
          expect(String(parsed.html)).toContain(`Hello ${contact.first} (${contact.email})`);
          expect(rawHeader(messages[0].raw, 'List-Unsubscribe')).toMatch(
            /^<https:\/\/mail\.example\.test\/unsubscribe\/[A-Za-z0-9_-]+>, <mailto:u-[a-z0-9]{53}@.+>$/,
          );
          expect(rawHeader(messages[0].raw, 'List-Unsubscribe-Post')).toBe(
            'List-Unsubscribe=One-Click',
          );
        }
        // The record shows the subject as rendered once delivered.
        const subjects = new Set(records.map((r) => r.subject));
        expect(subjects.has(`News for ${expected[0].first}`)).toBe(true);
        const s = await stats(created.id);
        expect(s).toMatchObject({
          status: 'SENT',
          recipients: expected.length,
          sent: expected.length,
          queued: 0,
          sending: 0,
          cancelled: 0,
          opened: 0,
        });
        expect(done.finishedAt).not.toBeNull();
        const events = await req('GET', '/events?name=campaign.sent&limit=50');
        expect(
          events.body.data.items.some(
            (e: Json) => e.data.campaignId === created.id && e.contactId === null,
          ),
        ).toBe(true);
      },
    );

    it('a message that fails to render is logged as an error with its email id; a campaign whose every message failed logs an error with its counts and its stats show them', async () => {
      // Valid Liquid that breaks the render's memory budget for these recipients' data (score >= 20).
      const created = (
        await create({
          name: 'Render failures',
          body: '{% assign n = score | times: 1000000 %}{% for i in (1..n) %}x{% endfor %}',
          audienceType: 'FILTERED',
          audienceFilter: {
            logic: 'AND',
            conditions: [{ field: 'data.score', operator: 'greaterThanOrEqual', value: 20 }],
          },
        })
      ).body.data;
      const lines: Array<{ level: string; fields: Json; message: unknown }> = [];
      const spies = (['error', 'warn', 'log'] as const).map((level) =>
        jest.spyOn(PinoNestLogger.prototype, level).mockImplementation((...args: unknown[]) => {
          const [fields, message] = args;
          lines.push({ level, fields: (typeof fields === 'object' && fields) || {}, message });
        }),
      );
      try {
        expect((await req('POST', `/campaigns/${created.id}/send`, {})).status).toBe(202);
        const done = await waitForStatus(created.id, ['SENT']);
        const records: Array<{ id: string; status: string; error: string }> = await db.query(
          'SELECT id, status, error FROM emails WHERE campaign_id = $1',
          [created.id],
        );
        expect(records.length).toBeGreaterThan(2);
        expect(done.recipientCount).toBe(records.length);
        expect(records.every((r) => r.status === 'FAILED' && /memory/i.test(r.error))).toBe(true);
        expect(await stats(created.id)).toMatchObject({
          status: 'SENT',
          recipients: records.length,
          sent: 0,
          failed: records.length,
          queued: 0,
          sending: 0,
        });
        for (const record of records) {
          expect(lines.filter((l) => l.fields.emailId === record.id).map((l) => l.level)).toEqual([
            'error',
          ]);
        }
        const finished = await pollUntil(
          () => Promise.resolve(lines.filter((l) => l.fields.campaignId === created.id)),
          (xs) => xs.length > 0,
          5000,
        );
        expect(finished).toEqual([
          expect.objectContaining({
            level: 'error',
            fields: expect.objectContaining({ sent: 0, failed: records.length }),
          }),
        ]);
      } finally {
        for (const spy of spies) spy.mockRestore();
      }
    });

    it('every illegal transition is 409 and changes nothing', async () => {
      const sentCampaign = (await req('GET', '/campaigns?status=SENT&limit=1')).body.data.items[0];
      const draft = (await create({ name: 'Draft' })).body.data;
      const attempts: Array<[string, string, unknown]> = [
        ['POST', `/campaigns/${sentCampaign.id}/send`, {}],
        ['POST', `/campaigns/${sentCampaign.id}/cancel`, undefined],
        ['PATCH', `/campaigns/${sentCampaign.id}`, { name: 'x' }],
        ['DELETE', `/campaigns/${sentCampaign.id}`, undefined],
        ['POST', `/campaigns/${draft.id}/cancel`, undefined],
        [
          'PATCH',
          `/campaigns/${draft.id}`,
          { scheduledAt: new Date(Date.now() + 3600_000).toISOString() },
        ],
      ];
      const statsBefore = await stats(sentCampaign.id);
      for (const [method, url, body] of attempts) {
        const res = await req(method as 'POST', url, body);
        expect({ url, method, status: res.status, code: res.body.error?.code }).toEqual({
          url,
          method,
          status: 409,
          code: 'CONFLICT',
        });
      }
      expect(await campaign(sentCampaign.id)).toEqual(sentCampaign);
      expect(await campaign(draft.id)).toEqual(draft);
      expect(await stats(sentCampaign.id)).toEqual(statsBefore);
    });

    it('a test send goes out as [TEST] rendered for the contact and changes no status or stats', async () => {
      const created = (await create({ name: 'Tested' })).body.data;
      const before = t.smtp.accepted;
      const res = await req('POST', `/campaigns/${created.id}/test`, {
        emails: ['c01@example.org', 'Someone.New@Example.org'],
      });
      expect(res.status).toBe(202);
      expect(res.body.data.emails).toHaveLength(2);
      await t.smtp.waitForMessages(before + 2);
      const known = t.smtp
        .messagesTo('c01@example.org')
        .find((m) => m.parsed?.subject === '[TEST] News for Name1');
      expect(known).toBeDefined();
      const stranger = t.smtp
        .messagesTo('someone.new@example.org')
        .find((m) => m.parsed?.subject === '[TEST] News for you');
      expect(String(stranger?.parsed?.html)).toContain('Hello friend');
      expect(await campaign(created.id)).toEqual(created);
      expect(await stats(created.id)).toMatchObject({
        status: 'DRAFT',
        recipients: 0,
        sent: 0,
        queued: 0,
      });
      for (const bad of [
        { emails: [] },
        { emails: ['a@b.co', 'b@b.co', 'c@b.co', 'd@b.co', 'e@b.co', 'f@b.co'] },
        { emails: ['nope'] },
        {},
      ]) {
        expect((await req('POST', `/campaigns/${created.id}/test`, bad)).status).toBe(422);
      }
    });

    it('opens, clicks and unsubscribes through campaign mail count in its stats', async () => {
      const created = (await create({ name: 'Tracked', audienceType: 'SEGMENT', segmentId })).body
        .data;
      await req('POST', `/campaigns/${created.id}/send`, {});
      await waitForStatus(created.id, ['SENT']);
      const [row]: Array<{ id: string; to_email: string }> = await db.query(
        'SELECT id, to_email FROM emails WHERE campaign_id = $1 ORDER BY to_email LIMIT 1',
        [created.id],
      );
      const message = t.smtp
        .messagesTo(row.to_email)
        .filter((m) => m.parsed?.messageId?.includes(row.id))
        .pop()!;
      const html = String(message.parsed!.html);
      const pixel = /<img[^>]+src="https:\/\/mail\.example\.test(\/t\/o\/[^"]+)"/.exec(html)![1];
      const click = /href="https:\/\/mail\.example\.test(\/t\/c\/[^"]+)"/.exec(html)![1];
      const unsubscribe = /href="https:\/\/mail\.example\.test(\/unsubscribe\/[^"]+)"/.exec(
        html,
      )![1];
      for (let i = 0; i < 3; i++)
        expect((await t.app.request({ method: 'GET', url: pixel })).status).toBe(200);
      const redirect = await t.app.request({ method: 'GET', url: click });
      expect(redirect.status).toBe(302);
      expect(redirect.headers.location).toBe('https://shop.example/deal');
      expect((await t.app.request({ method: 'POST', url: unsubscribe })).status).toBe(200);
      expect((await t.app.request({ method: 'POST', url: unsubscribe })).status).toBe(200);
      const s = await pollUntil(
        () => stats(created.id),
        (v) => v.opened === 1 && v.clicked === 1,
        5000,
      );
      expect(s).toMatchObject({ opened: 1, clicked: 1, unsubscribed: 1 });
      expect(s.openRate).toBeCloseTo(1 / s.sent);
      expect(s.unsubscribeRate).toBeCloseTo(1 / s.sent);
      const email = (await req('GET', `/emails/${row.id}`)).body.data;
      expect(email).toMatchObject({
        opens: 3,
        clicks: 1,
        campaignId: created.id,
        source: 'CAMPAIGN',
      });
      // Campaign mail is rendered again for its contact: the words delivered, no tracking, a preview unsubscribe link.
      const content = (await req('GET', `/emails/${row.id}/content`)).body.data;
      expect(content.origin).toBe('RENDERED');
      expect(content.subject).toBe(message.parsed!.subject);
      expect(content.html).toContain('href="https://shop.example/deal"');
      expect(content.html).not.toContain('/t/o/');
      expect(content.html).toContain('/unsubscribe/preview');
      // Resubscribe for the tests after this one.
      await db.query('UPDATE contacts SET subscribed = true WHERE email = $1 AND project_id = $2', [
        row.to_email,
        t.project.id,
      ]);
    });
  });

  describe('scheduling', () => {
    it('a campaign scheduled 3 s ahead starts on time', async () => {
      const created = (await create({ name: 'Later' })).body.data;
      const at = new Date(Date.now() + 3000);
      const res = await req('POST', `/campaigns/${created.id}/send`, {
        scheduledFor: at.toISOString(),
      });
      expect(res.status).toBe(202);
      expect(res.body.data).toMatchObject({ status: 'SCHEDULED', scheduledAt: at.toISOString() });
      expect((await campaign(created.id)).status).toBe('SCHEDULED');
      const started = await waitForStatus(created.id, ['SENDING', 'SENT'], 15_000);
      const lag = new Date(started.startedAt).getTime() - at.getTime();
      expect(lag).toBeGreaterThanOrEqual(-1000);
      expect(lag).toBeLessThan(5000);
      await waitForStatus(created.id, ['SENT']);
    });

    it('PATCH scheduledAt:null returns it to DRAFT and a cancelled schedule never sends', async () => {
      const back = (await create({ name: 'Unscheduled' })).body.data;
      const gone = (await create({ name: 'Cancelled' })).body.data;
      const at = new Date(Date.now() + 2000).toISOString();
      await req('POST', `/campaigns/${back.id}/send`, { scheduledFor: at });
      await req('POST', `/campaigns/${gone.id}/send`, { scheduledFor: at });
      const drafted = await req('PATCH', `/campaigns/${back.id}`, { scheduledAt: null });
      expect(drafted.body.data).toMatchObject({ status: 'DRAFT', scheduledAt: null });
      const cancelled = await req('POST', `/campaigns/${gone.id}/cancel`);
      expect(cancelled.status).toBe(200);
      expect(cancelled.body.data).toMatchObject({ status: 'CANCELLED' });
      expect(cancelled.body.data.cancelledAt).not.toBeNull();
      // Past both schedules: a fixed wait on purpose, it asserts that neither campaign starts.
      await new Promise((r) => setTimeout(r, 4000));
      expect((await campaign(back.id)).status).toBe('DRAFT');
      expect((await campaign(gone.id)).status).toBe('CANCELLED');
      expect(await directCounts(back.id)).toEqual({});
      expect(await directCounts(gone.id)).toEqual({});
    });

    it('refuses a time more than a year ahead', async () => {
      const created = (await create({ name: 'Far' })).body.data;
      const res = await req('POST', `/campaigns/${created.id}/send`, {
        scheduledFor: new Date(Date.now() + 400 * 86400_000).toISOString(),
      });
      expect(res.status).toBe(422);
      expect((await campaign(created.id)).status).toBe('DRAFT');
    });
  });
});

describe('campaign cancel while sending (e2e)', () => {
  let t: SendingTest;
  let db: DataSource;

  beforeAll(async () => {
    t = await startSendingTest('Campaign cancel', { EMAIL_RATE_PER_SECOND: '5' });
    db = t.app.app.get(DataSource);
    await db.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'r' || lpad(i::text, 3, '0') || '@example.org', true, '{}', now() - interval '1 minute', now()
         FROM generate_series(1, 200) AS i`,
      [t.project.id],
    );
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  it('stops: nothing more reaches SMTP after the cancel settles, the rest are CANCELLED, stats add up; stats always equal a direct count', async () => {
    const key = t.project.secretKey;
    const created = await t.app.request({
      method: 'POST',
      url: '/campaigns',
      key,
      body: {
        name: 'Big',
        subject: 'Hi',
        body: '<p>Hi</p>',
        from: 'news@acme.test',
        audienceType: 'ALL',
      },
    });
    const id = created.body.data.id as string;
    await t.app.request({ method: 'POST', url: `/campaigns/${id}/send`, key, body: {} });
    // Stats read in one snapshot equal a count of the records in the same snapshot, while sending.
    for (let i = 0; i < 10; i++) {
      const [counters, counted] = await db.transaction('REPEATABLE READ', async (m) => [
        (
          await m.query(
            'SELECT sum(queued)::int AS queued, sum(sending)::int AS sending, sum(sent)::int AS sent FROM campaign_counters WHERE campaign_id = $1',
            [id],
          )
        )[0],
        (
          await m.query(
            `SELECT count(*) FILTER (WHERE status = 'QUEUED')::int AS queued, count(*) FILTER (WHERE status = 'SENDING')::int AS sending,
                  count(*) FILTER (WHERE status = 'SENT')::int AS sent FROM emails WHERE campaign_id = $1`,
            [id],
          )
        )[0],
      ]);
      expect(counters).toEqual(counted);
      // Spaces the samples out over the send; nothing is waited for.
      await new Promise((r) => setTimeout(r, 150));
    }
    await pollUntil(
      () => Promise.resolve(t.smtp.accepted),
      (n) => n >= 5,
      10_000,
    );
    const cancel = await t.app.request({ method: 'POST', url: `/campaigns/${id}/cancel`, key });
    expect(cancel.status).toBe(200);
    expect(cancel.body.data.status).toBe('CANCELLED');
    // Settled: nothing SENDING any more.
    await pollUntil(
      async () =>
        (
          await db.query(
            `SELECT count(*)::int AS n FROM emails WHERE campaign_id = $1 AND status IN ('SENDING', 'QUEUED')`,
            [id],
          )
        )[0].n,
      (n) => n === 0,
      10_000,
    );
    const settled = t.smtp.accepted;
    // A fixed wait on purpose: it asserts that nothing more reaches SMTP in two seconds.
    await new Promise((r) => setTimeout(r, 2000));
    expect(t.smtp.accepted).toBe(settled);
    const stats = (await t.app.request({ method: 'GET', url: `/campaigns/${id}/stats`, key })).body
      .data;
    expect(stats.status).toBe('CANCELLED');
    expect(stats.recipients).toBe(200);
    expect(stats.sent + stats.cancelled + stats.failed + stats.bounced + stats.suppressed).toBe(
      200,
    );
    expect(stats.cancelled).toBeGreaterThan(100);
    expect(stats.sent).toBe(settled);
    const [direct] = await db.query(
      `SELECT count(*) FILTER (WHERE status = 'SENT')::int AS sent, count(*) FILTER (WHERE status = 'CANCELLED')::int AS cancelled FROM emails WHERE campaign_id = $1`,
      [id],
    );
    expect({ sent: stats.sent, cancelled: stats.cancelled }).toEqual(direct);
  });
});
