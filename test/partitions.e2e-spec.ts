import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { PartitionEmailsEvents1795970000000 as PartitionMigration } from '../src/database/migrations/1795970000000-PartitionEmailsEvents';
import { EventNameStatsMonth1796100000000 as StatsMonthMigration } from '../src/database/migrations/1796100000000-EventNameStatsMonth';
import { PartitionMaintenance } from '../src/partitions/partition-maintenance';
import { PartitionsRepository } from '../src/partitions/partitions.repository';
import { PARTITION_JOBS, RECOVERY_SCHEDULERS } from '../src/queue/jobs';
import { QUEUES } from '../src/queue/queue.constants';
import { pollUntil } from './support/poll';
import { SENDER_DOMAIN, SendingTest, startSendingTest } from './support/sending';
import { flushPrefix, startTestApp, TestApp, testConfig, uniqueName } from './support/test-app';

/**
 * Partitions and retention (contract, "Scaling"; real Postgres, Redis, SMTP):
 * (a) emails and events are partitioned and the scheduled job keeps months
 * two ahead; (b) retention drops a past month while a campaign's stats, its
 * counters, the /metrics gauges and GET /events' total stay right; (c) a
 * contact's deletion erases its emails and events in every month; (d) one
 * email per campaign recipient and per workflow step across months, and
 * keyset pages across months.
 *
 * A second app on the same database (APP_ROLE=api: no scheduler of its own)
 * has both retentions at 30 days; the test runs its maintenance directly,
 * after making rows 70 days old with triggers off (session_replication_role),
 * which moves them into a past month without touching any counter.
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const METRICS_TOKEN = 'metrics-token-0123456789';
const FROM = `news@${SENDER_DOMAIN}`;

describe('partitions and retention (e2e)', () => {
  let t: SendingTest;
  let db: DataSource;
  let retention: TestApp;
  const retentionPrefix = uniqueName('mwt');
  const req = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) =>
    t.app.request({ method, url, key: t.project.secretKey, body });
  const ok = async (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) => {
    const res = await req(method, url, body);
    expect({ url, status: res.status < 300, body: res.status < 300 ? null : res.body }).toEqual({
      url,
      status: true,
      body: null,
    });
    return res.body.data as Json;
  };
  /** A table's partitions, oldest first; `lower` is null for the legacy one (MINVALUE). */
  const partitions = async (table: string) =>
    (await db.query(
      `SELECT name, NULLIF(lower, '-infinity') AS lower, upper FROM mw_partitions($1::regclass)`,
      [table],
    )) as { name: string; lower: Date | null; upper: Date }[];
  /** The status gauges of GET /metrics for emails and campaigns. */
  const gauges = async () =>
    (
      await t.app.request({
        method: 'GET',
        url: '/metrics',
        headers: { authorization: `Bearer ${METRICS_TOKEN}` },
      })
    ).raw
      .split('\n')
      .filter((line) => /^mailwright_(emails|campaigns)\{/.test(line))
      .sort();
  const monthStart = (monthsFromNow: number) => {
    const now = new Date();
    return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + monthsFromNow, 1));
  };

  /**
   * GET /events/names (every page), GET /events' total and its total by name, and the rows of
   * event_name_stats per month, each against what `events` holds for the project.
   */
  const expectEventStatsExact = async () => {
    const stored: { name: string; count: number; lastSeenAt: Date }[] = await db.query(
      `SELECT name, count(*)::int AS count, max(created_at) AS "lastSeenAt"
         FROM events WHERE project_id = $1 GROUP BY name ORDER BY name`,
      [t.project.id],
    );
    const names: Json[] = [];
    let cursor: string | null = null;
    do {
      const page: Json = await ok(
        'GET',
        `/events/names?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      names.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor);
    expect(names.sort((a, b) => (a.name < b.name ? -1 : 1))).toEqual(
      stored.map((n) => ({ ...n, lastSeenAt: n.lastSeenAt.toISOString() })),
    );
    const total = stored.reduce((sum, n) => sum + n.count, 0);
    expect((await ok('GET', '/events?limit=1')).total).toBe(total);
    for (const n of stored)
      expect([n.name, (await ok('GET', `/events?name=${n.name}&limit=1`)).total]).toEqual([
        n.name,
        n.count,
      ]);
    const byMonth = (sql: string) => db.query(sql, [t.project.id]);
    expect(
      await byMonth(
        `SELECT name, month::text AS month, sum(count)::int AS count FROM event_name_stats
          WHERE project_id = $1 GROUP BY 1, 2 HAVING sum(count) <> 0 ORDER BY 1, 2`,
      ),
    ).toEqual(
      await byMonth(
        `SELECT name, date_trunc('month', created_at AT TIME ZONE 'UTC')::date::text AS month, count(*)::int AS count
           FROM events WHERE project_id = $1 GROUP BY 1, 2 ORDER BY 1, 2`,
      ),
    );
  };

  beforeAll(async () => {
    t = await startSendingTest('Partitions', { METRICS_TOKEN });
    db = t.app.app.get(DataSource);
    retention = await startTestApp(
      testConfig(t.db.url, retentionPrefix, {
        APP_ROLE: 'api',
        EVENT_RETENTION_DAYS: '30',
        EMAIL_RETENTION_DAYS: '30',
      }),
    );
  }, 60_000);

  afterAll(async () => {
    await retention?.close();
    await flushPrefix(retentionPrefix);
    await t?.close();
  });

  it('partitions emails and events by month; the scheduled job creates months two ahead', async () => {
    const kinds: { relname: string; relkind: string }[] = await db.query(
      `SELECT relname, relkind FROM pg_class WHERE relname IN ('emails', 'events') ORDER BY 1`,
    );
    expect(kinds).toEqual([
      { relname: 'emails', relkind: 'p' },
      { relname: 'events', relkind: 'p' },
    ]);
    const queue = t.app.app.get<Queue>(getQueueToken(QUEUES.PARTITIONS));
    expect(
      await queue.getJobScheduler(RECOVERY_SCHEDULERS[QUEUES.PARTITIONS].id),
    ).not.toBeUndefined();

    // The furthest months gone, the job brings them back.
    for (const table of ['emails', 'events']) {
      const last = (await partitions(table)).at(-1)!;
      expect(last.upper.getTime()).toBe(monthStart(3).getTime());
      await db.query(`DROP TABLE "${last.name}"`);
    }
    await queue.add(PARTITION_JOBS.MAINTAIN, {});
    for (const table of ['emails', 'events']) {
      const months = await pollUntil(
        () => partitions(table),
        (ps) => ps.at(-1)!.upper.getTime() === monthStart(3).getTime(),
        10_000,
      );
      // This month and the two after it, each its own partition, with no gap.
      const ahead = months.filter((p) => p.lower && p.lower >= monthStart(0));
      expect(ahead.map((p) => [p.lower!.getTime(), p.upper.getTime()])).toEqual(
        [0, 1, 2].map((m) => [monthStart(m).getTime(), monthStart(m + 1).getTime()]),
      );
    }
  });

  it('drops months past the retention; campaign stats, counters, /metrics and GET /events stay right', async () => {
    for (const i of [1, 2, 3])
      await ok('POST', '/contacts', { email: `old-${i}@example.com`, subscribed: true });
    const campaign = await ok('POST', '/campaigns', {
      name: 'Old news',
      subject: 'Old news',
      body: '<p>Hi</p><a href="{{ unsubscribeUrl }}">Unsubscribe</a>',
      from: FROM,
      audienceType: 'ALL',
    });
    await ok('POST', `/campaigns/${campaign.id}/send`, {});
    const sent = await pollUntil(
      () => req('GET', `/campaigns/${campaign.id}`),
      (res) => res.body.data.status === 'SENT',
      30_000,
      100,
    );
    expect(sent.body.data.status).toBe('SENT');
    await ok('POST', '/v1/track', { email: 'old-1@example.com', event: 'purchase' });
    const stats = await ok('GET', `/campaigns/${campaign.id}/stats`);
    expect(stats).toMatchObject({ sent: 3 });
    const counters = async () =>
      db.query(`SELECT * FROM campaign_counters WHERE campaign_id = $1 ORDER BY slot`, [
        campaign.id,
      ]);
    const before = { stats, counters: await counters(), gauges: await gauges() };

    // The project's rows so far become 70 days old; one event stays recent.
    const aged = new Client({ connectionString: t.db.url });
    await aged.connect();
    try {
      await aged.query(`SET session_replication_role = replica`);
      await aged.query(
        `UPDATE emails SET created_at = created_at - interval '70 days' WHERE project_id = $1`,
        [t.project.id],
      );
      await aged.query(
        `UPDATE events SET created_at = created_at - interval '70 days' WHERE project_id = $1`,
        [t.project.id],
      );
      // The per-month statistics the triggers would have kept for events of that time.
      await aged.query(`DELETE FROM event_name_stats WHERE project_id = $1`, [t.project.id]);
      await aged.query(
        `INSERT INTO event_name_stats (project_id, name, month, shard, count, last_seen_at)
         SELECT project_id, name, date_trunc('month', created_at AT TIME ZONE 'UTC')::date, 0, count(*), max(created_at)
           FROM events WHERE project_id = $1 GROUP BY 1, 2, 3`,
        [t.project.id],
      );
    } finally {
      await aged.end();
    }
    await ok('POST', '/v1/track', { email: 'old-2@example.com', event: 'purchase' });
    const { dropped } = await retention.app.get(PartitionMaintenance).maintain();
    // The legacy partition (before the month before last) and whatever month holds the aged rows.
    expect(dropped).toEqual(expect.arrayContaining(['emails_legacy', 'events_legacy']));
    // Nothing of this month or later goes.
    const firstKept = (await partitions('emails'))[0];
    expect(firstKept.upper.getTime()).toBeGreaterThan(Date.now() - 30 * 24 * 3_600_000);
    const [left] = await db.query(
      `SELECT (SELECT count(*)::int FROM emails WHERE project_id = $1) AS emails,
              (SELECT count(*)::int FROM events WHERE project_id = $1) AS events`,
      [t.project.id],
    );
    expect(left).toEqual({ emails: 0, events: 1 });

    expect({
      stats: await ok('GET', `/campaigns/${campaign.id}/stats`),
      counters: await counters(),
      gauges: await gauges(),
    }).toEqual(before);
    // GET /events counts the stored events only (event_name_stats lost the dropped ones).
    const events = await ok('GET', '/events?limit=10');
    expect({ total: events.total, items: events.items.length }).toEqual({ total: 1, items: 1 });
    const purchase = await ok('GET', '/events?name=purchase&limit=10');
    expect(purchase.total).toBe(1);
  });

  it("erases a contact's emails and events in every month it has them", async () => {
    const contact = await ok('POST', '/contacts', { email: 'gone@example.com', subscribed: true });
    await ok('POST', '/v1/send', {
      to: [{ email: 'gone@example.com' }],
      from: FROM,
      subject: 'Hi',
      body: '<p>x</p>',
    });
    await ok('POST', '/v1/track', { email: 'gone@example.com', event: 'visit' });
    // Rows of last month and next month too (a month ahead exists; ten days back is kept by retention).
    for (const at of [
      `now() - interval '10 days'`,
      `date_trunc('month', now()) + interval '1 month 1 day'`,
    ]) {
      await db.query(
        `INSERT INTO events (id, project_id, contact_id, name, created_at) VALUES (gen_random_uuid(), $1, $2, 'visit', ${at})`,
        [t.project.id, contact.id],
      );
      await db.query(
        `INSERT INTO emails (id, project_id, contact_id, campaign_id, source, to_email, from_email, subject, priority, created_at)
         VALUES (gen_random_uuid(), $1, $2, gen_random_uuid(), 'CAMPAIGN', 'gone@example.com', $3, 's', 10, ${at})`,
        [t.project.id, contact.id, FROM],
      );
    }
    const count = async () =>
      (
        await db.query(
          `SELECT (SELECT count(DISTINCT tableoid)::int FROM emails WHERE contact_id = $1) AS "emailMonths",
                  (SELECT count(*)::int FROM emails WHERE contact_id = $1) AS emails,
                  (SELECT count(*)::int FROM events WHERE contact_id = $1) AS events,
                  (SELECT count(*)::int FROM campaign_recipients WHERE contact_id = $1) AS recipients`,
          [contact.id],
        )
      )[0];
    const before = await count();
    expect(before.emailMonths).toBeGreaterThanOrEqual(2);
    expect(before.events).toBeGreaterThanOrEqual(3);
    expect(before.recipients).toBe(2);
    await ok('DELETE', `/contacts/${contact.id}`);
    expect(await count()).toEqual({ emailMonths: 0, emails: 0, events: 0, recipients: 0 });
  });

  it('checks and cascades contact and content references as foreign keys would, also against concurrent writers', async () => {
    const insertEvent = (c: { query: DataSource['query'] | Client['query'] }, contact: string) =>
      (c.query as (sql: string, params: unknown[]) => Promise<unknown>)(
        `INSERT INTO events (id, project_id, contact_id, name) VALUES (gen_random_uuid(), $1, $2, 'ref')`,
        [t.project.id, contact],
      );
    const insertEmail = (contact: string, content: string | null) =>
      db.query(
        `INSERT INTO emails (id, project_id, contact_id, content_id, source, to_email, from_email, subject, priority)
         VALUES (gen_random_uuid(), $1, $2, $3, 'CAMPAIGN', 'ref@example.com', $4, 's', 10)`,
        [t.project.id, contact, content, FROM],
      );
    const contact = (await ok('POST', '/contacts', { email: 'ref@example.com' })).id as string;
    const nobody = '00000000-0000-7000-8000-000000000001';
    await expect(insertEvent(db, nobody)).rejects.toMatchObject({ code: '23503' });
    await expect(insertEmail(nobody, null)).rejects.toMatchObject({ code: '23503' });
    await expect(insertEmail(contact, nobody)).rejects.toMatchObject({ code: '23503' });
    await expect(
      db.query(`UPDATE events SET contact_id = $1 WHERE project_id = $2`, [nobody, t.project.id]),
    ).rejects.toMatchObject({ code: '23503' });
    const [{ id: content }] = await db.query(
      `INSERT INTO email_contents (id, project_id, subject, body, created_at) VALUES (gen_random_uuid(), $1, 's', 'b', now()) RETURNING id`,
      [t.project.id],
    );
    await insertEmail(contact, content);
    await expect(
      db.query(`DELETE FROM email_contents WHERE id = $1`, [content]),
    ).rejects.toMatchObject({ code: '23503' });

    const [a, b] = [
      new Client({ connectionString: t.db.url }),
      new Client({ connectionString: t.db.url }),
    ];
    await Promise.all([a.connect(), b.connect()]);
    const waiting = (client: Client) =>
      pollUntil(
        async () =>
          (
            await db.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid = $1`,
              [(client as unknown as { processID: number }).processID],
            )
          )[0].n,
        (n) => n === 1,
        5_000,
        20,
      );
    try {
      // A delete that waits for an uncommitted event of its contact erases that event too.
      await a.query('BEGIN');
      await insertEvent(a, contact);
      const deleting = b.query(`DELETE FROM contacts WHERE id = $1`, [contact]);
      await waiting(b);
      await a.query('COMMIT');
      await deleting;
      expect(
        (
          await db.query(`SELECT count(*)::int AS n FROM events WHERE contact_id = $1`, [contact])
        )[0].n,
      ).toBe(0);
      expect(
        (
          await db.query(`SELECT count(*)::int AS n FROM emails WHERE contact_id = $1`, [contact])
        )[0].n,
      ).toBe(0);
      // An event insert that waits for an uncommitted delete of its contact fails once it commits.
      const other = (await ok('POST', '/contacts', { email: 'ref2@example.com' })).id as string;
      await b.query('BEGIN');
      await b.query(`DELETE FROM contacts WHERE id = $1`, [other]);
      const inserting = insertEvent(a, other).then(
        () => null,
        (error: { code?: string }) => error.code,
      );
      await waiting(a);
      await b.query('COMMIT');
      expect(await inserting).toBe('23503');
    } finally {
      await Promise.all([a.end(), b.end()]);
    }
  });

  it('keeps one email per campaign recipient and per workflow step across months, and pages across months', async () => {
    const contact = await ok('POST', '/contacts', { email: 'once@example.com', subscribed: true });
    const insertCampaignEmail = (campaignId: string, at: string) =>
      db.query(
        `INSERT INTO emails (id, project_id, contact_id, campaign_id, source, to_email, from_email, subject, priority, created_at)
         VALUES (gen_random_uuid(), $1, $2, $3, 'CAMPAIGN', 'once@example.com', $4, 's', 10, ${at}) RETURNING id`,
        [t.project.id, contact.id, campaignId, FROM],
      );
    const campaignId = '01234567-89ab-7def-8123-456789abcdef';
    const nextMonth = `date_trunc('month', now()) + interval '1 month 1 day'`;
    const [ahead] = await insertCampaignEmail(campaignId, nextMonth);
    expect(ahead).toBeDefined();
    // Found by id alone in whichever month holds it.
    expect((await ok('GET', `/emails/${ahead.id}`)).id).toBe(ahead.id);
    // Same recipient this month: refused, as the old unique index did.
    await expect(insertCampaignEmail(campaignId, 'now()')).rejects.toMatchObject({ code: '23505' });

    const template = await ok('POST', '/templates', {
      name: 'Step',
      from: FROM,
      type: 'TRANSACTIONAL',
      subject: 'Step',
      body: '<p>Step</p>',
    });
    const workflow = await ok('POST', '/workflows', {
      name: 'Once',
      enabled: true,
      trigger: { type: 'MANUAL' },
      steps: [{ id: 'mail', type: 'SEND_EMAIL', templateId: template.id }],
    });
    await ok('POST', `/workflows/${workflow.id}/executions`, { email: 'once@example.com' });
    const [stepEmail] = await pollUntil(
      () =>
        db.query(
          `SELECT workflow_execution_id AS "executionId" FROM emails WHERE workflow_step_id = 'mail' AND contact_id = $1`,
          [contact.id],
        ),
      (rows: Json[]) => rows.length === 1,
      20_000,
      100,
    );
    expect(stepEmail).toBeDefined();
    const duplicate = db.query(
      `INSERT INTO emails (id, project_id, contact_id, workflow_execution_id, workflow_step_id, source, to_email, from_email, subject, priority, created_at)
       VALUES (gen_random_uuid(), $1, $2, $3, 'mail', 'WORKFLOW', 'once@example.com', $4, 's', 5, ${nextMonth})`,
      [t.project.id, contact.id, stepEmail.executionId, FROM],
    );
    await expect(duplicate).rejects.toMatchObject({ code: '23505' });

    // GET /emails one row a page: every email of the project once, whatever its month.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Json = await ok(
        'GET',
        `/emails?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      seen.push(...page.items.map((e: Json) => e.id as string));
      cursor = page.nextCursor;
    } while (cursor);
    const stored: { id: string }[] = await db.query(
      `SELECT id FROM emails WHERE project_id = $1 ORDER BY id DESC`,
      [t.project.id],
    );
    expect(seen).toEqual(stored.map((e) => e.id));
    expect(new Set(seen).size).toBe(seen.length);
  });

  describe('retention drops without blocking', () => {
    const DAY_MS = 24 * 3_600_000;
    let contactId: string;
    /** Creates `table`'s month of `monthsAgo` months back (far past the 30 days), as the job names them. */
    const oldMonth = async (table: 'emails' | 'events', monthsAgo: number) => {
      const lower = monthStart(-monthsAgo);
      const name = `${table}_p${lower.toISOString().slice(0, 7).replace('-', '')}`;
      await db.query(
        `CREATE TABLE "${name}" PARTITION OF "${table}" FOR VALUES FROM ('${lower.toISOString()}') TO ('${monthStart(1 - monthsAgo).toISOString()}')`,
      );
      return { name, at: new Date(lower.getTime() + DAY_MS).toISOString() };
    };
    const insertEmail = async (at: string, status: string) =>
      (
        await db.query(
          `INSERT INTO emails (id, project_id, contact_id, campaign_id, source, to_email, from_email, subject, priority, status, created_at)
           VALUES (gen_random_uuid(), $1, $2, gen_random_uuid(), 'CAMPAIGN', 'keep@example.com', $3, 's', 10, $4, $5) RETURNING id`,
          [t.project.id, contactId, FROM, status, at],
        )
      )[0].id as string;
    const exists = async (name: string) =>
      (await db.query(`SELECT to_regclass($1) IS NOT NULL AS e`, [`"${name}"`]))[0].e as boolean;
    const maintain = () => retention.app.get(PartitionMaintenance).maintain();

    beforeAll(async () => {
      contactId = (await ok('POST', '/contacts', { email: 'keep@example.com', subscribed: true }))
        .id;
    });

    it('drops a month while emails are updated by id alone, with no deadlock or error', async () => {
      const month = await oldMonth('emails', 12);
      await insertEmail(month.at, 'SENT');
      const ids = await Promise.all([0, 1, 2, 3].map(() => insertEmail('now()', 'SENT')));
      // Updates by id alone (as emails.repository.ts does) lock the parent and every month.
      const clients = ids.map(() => new Client({ connectionString: t.db.url }));
      await Promise.all(clients.map((c) => c.connect()));
      let running = true;
      let updates = 0;
      const errors: string[] = [];
      const loops = clients.map(async (c, i) => {
        while (running) {
          try {
            await c.query(`UPDATE emails SET updated_at = now() WHERE id = $1`, [ids[i]]);
            updates++;
          } catch (error) {
            errors.push((error as Error).message);
          }
        }
      });
      try {
        await pollUntil(
          async () => updates,
          (n) => n >= 20,
          5_000,
          10,
        );
        const { dropped } = await maintain();
        expect(dropped).toContain(month.name);
      } finally {
        running = false;
        await Promise.all(loops);
        await Promise.all(clients.map((c) => c.end()));
      }
      expect(errors).toEqual([]);
      expect(await exists(month.name)).toBe(false);
    });

    it('keeps a month with QUEUED or SENDING emails until they are done; finishes what an interrupted run left', async () => {
      const open = await oldMonth('emails', 11);
      const queued = await insertEmail(open.at, 'QUEUED');
      const sending = await insertEmail(open.at, 'SENDING');
      // An events month whose DETACH CONCURRENTLY is cancelled while a transaction still uses it.
      const pending = await oldMonth('events', 11);
      const blocker = new Client({ connectionString: t.db.url });
      const detacher = new Client({ connectionString: t.db.url });
      await Promise.all([blocker.connect(), detacher.connect()]);
      try {
        await blocker.query(`BEGIN`);
        await blocker.query(`SELECT count(*) FROM events WHERE id = gen_random_uuid()`);
        await detacher.query(`SET lock_timeout = '300ms'`);
        await expect(
          detacher.query(`ALTER TABLE events DETACH PARTITION "${pending.name}" CONCURRENTLY`),
        ).rejects.toMatchObject({ code: '55P03' });
        await blocker.query(`COMMIT`);
      } finally {
        await Promise.all([blocker.end(), detacher.end()]);
      }
      const detachPending = async () =>
        (
          await db.query(
            `SELECT inhdetachpending AS p FROM pg_inherits WHERE inhrelid = to_regclass($1)`,
            [`"${pending.name}"`],
          )
        )[0]?.p;
      expect(await detachPending()).toBe(true);
      // And one detached but not dropped (a run that failed between the two).
      const leftover = await oldMonth('events', 9);
      await db.query(`ALTER TABLE events DETACH PARTITION "${leftover.name}"`);

      const first = await maintain();
      expect(first.dropped).toEqual(expect.arrayContaining([pending.name, leftover.name]));
      expect(first.dropped).not.toContain(open.name);
      expect(await exists(pending.name)).toBe(false);
      expect(await exists(open.name)).toBe(true);

      await db.query(`UPDATE emails SET status = 'SENT' WHERE id = $1`, [queued]);
      expect((await maintain()).dropped).not.toContain(open.name);
      await db.query(`UPDATE emails SET status = 'FAILED' WHERE id = $1`, [sending]);
      expect((await maintain()).dropped).toContain(open.name);
      expect(await exists(open.name)).toBe(false);
    });

    it("creates both tables' months first: a failing drop of one table stops neither", async () => {
      // DETACH CONCURRENTLY is refused while the parent has a DEFAULT partition: events' drop fails.
      const events = await oldMonth('events', 10);
      const emails = await oldMonth('emails', 10);
      await db.query(`CREATE TABLE events_default_test PARTITION OF events DEFAULT`);
      try {
        const last = (await partitions('emails')).at(-1)!;
        await db.query(`DROP TABLE "${last.name}"`);
        const { created, dropped } = await maintain();
        expect(created).toEqual([last.name]);
        expect(dropped).toEqual([emails.name]);
        expect(await exists(events.name)).toBe(true);
      } finally {
        await db.query(`DROP TABLE events_default_test`);
      }
      expect((await maintain()).dropped).toEqual([events.name]);
    });

    it('drops a month of each table while a writer holds contacts and email_contents: it waits for neither', async () => {
      const events = await oldMonth('events', 7);
      const emails = await oldMonth('emails', 7);
      await insertEmail(emails.at, 'SENT');
      // An open transaction as a track or a campaign start leaves them: ROW EXCLUSIVE and a row lock.
      const writer = new Client({ connectionString: t.db.url });
      await writer.connect();
      try {
        await writer.query(`BEGIN`);
        await writer.query(`UPDATE contacts SET updated_at = now() WHERE id = $1`, [contactId]);
        await writer.query(
          `INSERT INTO email_contents (id, project_id, subject, body, created_at) VALUES (gen_random_uuid(), $1, 's', 'b', now())`,
          [t.project.id],
        );
        // A foreign key to either table would make DETACH wait for this writer (60 s of attempts, then fail).
        expect((await maintain()).dropped).toEqual(
          expect.arrayContaining([events.name, emails.name]),
        );
        await writer.query(`COMMIT`);
      } finally {
        await writer.end();
      }
      expect(await exists(events.name)).toBe(false);
      expect(await exists(emails.name)).toBe(false);
    }, 30_000);

    it('keeps GET /events/names and the events total exact when a month goes, and the DROP locks no other table', async () => {
      const month = await oldMonth('events', 8);
      const other = (
        await ok('POST', '/contacts', { email: 'months@example.com', subscribed: true })
      ).id as string;
      const insert = (name: string, at: string, contact = contactId) =>
        db.query(
          `INSERT INTO events (id, project_id, contact_id, name, created_at) VALUES (gen_random_uuid(), $1, $2, $3, $4)`,
          [t.project.id, contact, name, at],
        );
      // `gone` only in the old month, `both` in it and now, `erased` partly erased with a contact.
      const recent = new Date(Date.now() - 60_000).toISOString();
      for (const name of ['gone', 'gone', 'both', 'erased']) await insert(name, month.at);
      await insert('erased', recent);
      await insert('erased', month.at, other);
      await insert('erased', recent, other);
      await ok('POST', '/v1/track', { email: 'keep@example.com', event: 'both' });
      await ok('DELETE', `/contacts/${other}`);
      await expectEventStatsExact();
      const names = async () =>
        ((await ok('GET', '/events/names?limit=100')).items as Json[]).map((n) => n.name);
      expect(await names()).toEqual(expect.arrayContaining(['gone', 'both', 'erased']));

      // What the maintenance's DROP TABLE holds before it commits: the month's own relations only.
      const own: { oid: number }[] = await db.query(
        `SELECT c.oid::int AS oid FROM pg_class c WHERE c.oid = $1::regclass
          UNION SELECT i.indexrelid::int FROM pg_index i WHERE i.indrelid = $1::regclass
          UNION SELECT c.reltoastrelid::int FROM pg_class c WHERE c.oid = $1::regclass AND c.reltoastrelid <> 0
          UNION SELECT i.indexrelid::int FROM pg_class c JOIN pg_index i ON i.indrelid = c.reltoastrelid WHERE c.oid = $1::regclass`,
        [`"${month.name}"`],
      );
      const locked: { name: string; mode: string }[] = [];
      const repository = retention.app.get(PartitionsRepository);
      const dropDetached = repository.dropDetached.bind(repository);
      const spy = jest
        .spyOn(repository, 'dropDetached')
        .mockImplementation(async (manager, table, partition) => {
          await dropDetached(manager, table, partition);
          locked.push(
            ...((await manager.query(
              `SELECT relation::regclass::text AS name, mode FROM pg_locks
                WHERE pid = pg_backend_pid() AND locktype = 'relation' AND relation <> 'pg_locks'::regclass
                  AND NOT (relation::int = ANY($1::int[]))
                  AND mode IN ('ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock')`,
              [own.map((r) => r.oid)],
            )) as { name: string; mode: string }[]),
          );
        });
      try {
        expect((await maintain()).dropped).toEqual([month.name]);
      } finally {
        spy.mockRestore();
      }
      expect(locked).toEqual([]);
      await expectEventStatsExact();
      expect(await names()).not.toContain('gone');
      expect(await names()).toEqual(expect.arrayContaining(['both', 'erased']));
    });
  });

  it('the migration to monthly event_name_stats keeps every count exact on a populated database, while events are written', async () => {
    const contact = (
      await ok('POST', '/contacts', { email: 'migrate@example.com', subscribed: true })
    ).id as string;
    const months = [
      `date_trunc('month', now()) - interval '10 days'`,
      `now()`,
      `date_trunc('month', now()) + interval '1 month 1 day'`,
    ];
    const runner = db.createQueryRunner();
    const writers = [0, 1, 2].map(() => new Client({ connectionString: t.db.url }));
    await Promise.all(writers.map((c) => c.connect()));
    try {
      // The shape before the migration, with its triggers, then events of three months, some erased.
      await new StatsMonthMigration().down(runner);
      for (const [i, at] of months.entries())
        await db.query(
          `INSERT INTO events (id, project_id, contact_id, name, created_at)
           SELECT gen_random_uuid(), $1, $2, 'm-' || (n % 3), ${at} FROM generate_series(1, ${100 + i}) n`,
          [t.project.id, contact],
        );
      await db.query(
        `DELETE FROM events WHERE id IN (SELECT id FROM events WHERE contact_id = $1 AND name = 'm-1' LIMIT 7)`,
        [contact],
      );
      const [old] = await db.query(
        `SELECT (SELECT sum(count)::int FROM event_name_stats WHERE project_id = $1) AS stats,
                (SELECT count(*)::int FROM events WHERE project_id = $1) AS events`,
        [t.project.id],
      );
      expect(old.stats).toBe(old.events);

      // Writers insert and erase events of every month meanwhile, one statement each.
      let running = true;
      let writes = 0;
      const errors: string[] = [];
      const loops = writers.map(async (c, w) => {
        for (let i = 0; running; i++) {
          try {
            if (i % 5 === 4)
              await c.query(
                `DELETE FROM events WHERE id IN (SELECT id FROM events WHERE contact_id = $1 AND name = 'm-2' LIMIT 1)`,
                [contact],
              );
            else
              await c.query(
                `INSERT INTO events (id, project_id, contact_id, name, created_at)
                 VALUES (gen_random_uuid(), $1, $2, 'm-' || $3::int, ${months[(w + i) % 3]})`,
                [t.project.id, contact, i % 4],
              );
            writes++;
          } catch (error) {
            errors.push((error as Error).message);
          }
        }
      });
      try {
        await pollUntil(
          async () => writes,
          (n) => n >= 30,
          5_000,
          10,
        );
        const before = writes;
        await new StatsMonthMigration().up(runner);
        expect(writes).toBeGreaterThan(before);
        await pollUntil(
          async () => writes,
          (n) => n >= before + 60,
          5_000,
          10,
        );
      } finally {
        running = false;
        await Promise.all(loops);
      }
      expect(errors).toEqual([]);
    } finally {
      await Promise.all(writers.map((c) => c.end()));
      await runner.release();
    }
    await expectEventStatsExact();
    // Every project, every month: no bucket of the old totals left, nothing counted twice.
    expect(
      await db.query(
        `SELECT project_id, name, month::text AS month, sum(count)::int AS count FROM event_name_stats
          GROUP BY 1, 2, 3 HAVING sum(count) <> 0 ORDER BY 1, 2, 3`,
      ),
    ).toEqual(
      await db.query(
        `SELECT project_id, name, date_trunc('month', created_at AT TIME ZONE 'UTC')::date::text AS month, count(*)::int AS count
           FROM events GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
      ),
    );
  });

  it('the migration drops an INVALID index an interrupted build left, so that its next run builds it again', async () => {
    await db.query(`CREATE TABLE mw_test_invalid (id int)`);
    try {
      await db.query(`INSERT INTO mw_test_invalid VALUES (1), (1)`);
      // A failed CREATE INDEX CONCURRENTLY (here: duplicates) leaves the index behind, INVALID.
      const build = `CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS mw_test_invalid_idx ON mw_test_invalid (id)`;
      await expect(db.query(build)).rejects.toMatchObject({ code: '23505' });
      const valid = async () =>
        (
          await db.query(
            `SELECT indisvalid AS v FROM pg_index WHERE indexrelid = to_regclass('mw_test_invalid_idx')`,
          )
        )[0]?.v;
      expect(await valid()).toBe(false);
      await db.query(
        `DELETE FROM mw_test_invalid WHERE ctid = (SELECT min(ctid) FROM mw_test_invalid)`,
      );
      const runner = db.createQueryRunner();
      try {
        await PartitionMigration.dropInvalidIndex(runner, 'mw_test_invalid_idx');
        await PartitionMigration.dropInvalidIndex(runner, 'mw_test_invalid_idx'); // gone: nothing to do
      } finally {
        await runner.release();
      }
      await db.query(build);
      expect(await valid()).toBe(true);
    } finally {
      await db.query(`DROP TABLE mw_test_invalid`);
    }
  });
});
