import { Client } from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../src/database/data-source-options';
import { idTimeRange, newId } from '../src/database/id';
import { EmailHitsRepository } from '../src/engagement/email-hits.repository';
import { EventsRepository } from '../src/events/events.repository';
import { EmailsRepository } from '../src/sending/emails.repository';
import { createTestDatabase } from './support/test-app';

/**
 * Lookups by id on the month-partitioned `emails` and `events` read the
 * month the id's UUIDv7 time names (migration IdTimeRange), not every month
 * kept (real Postgres, a migrated database: six partitions each). A row
 * whose id is no UUIDv7 (old rows, rows written by hand) is still found.
 */
describe('partition pruning by id (e2e)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let ds: DataSource;
  const emails = new EmailsRepository();
  const events = new EventsRepository();
  let projectId: string;
  // Rows (and their ids' times) in the middle of this month and of the month before last, so
  // that the day of margin never reaches into a neighbouring month; a v4 id on the older row.
  const midMonth = (monthsFromNow: number) => {
    const today = new Date();
    return new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth() + monthsFromNow, 15, 12));
  };
  const now = uuidv7({ msecs: midMonth(0).getTime() });
  const old = uuidv7({ msecs: midMonth(-2).getTime() });
  let v4: string;
  const eventNow = newId();
  let eventV4: string;

  /** The partitions of `table` a plan reads (EXPLAIN's JSON), by name. */
  const scanned = (plan: unknown, table: string): string[] => {
    const found: string[] = [];
    const walk = (node: Record<string, unknown>) => {
      const name = node['Relation Name'];
      if (typeof name === 'string' && name.startsWith(`${table}_`)) found.push(name);
      for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
    };
    walk((plan as Array<{ Plan: Record<string, unknown> }>)[0].Plan);
    return found.sort();
  };
  const partitionOf = async (table: string, id: string): Promise<string> => {
    const [row] = (await ds.query(
      `SELECT tableoid::regclass::text AS name FROM ${table} WHERE id = $1`,
      [id],
    )) as Array<{ name: string }>;
    return row.name;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = await new DataSource(dataSourceOptions(db.url, 2)).initialize();
    projectId = newId();
    const contactId = newId();
    await ds.query(`INSERT INTO projects (id, name) VALUES ($1, 'pruning')`, [projectId]);
    await ds.query(
      `INSERT INTO contacts (id, project_id, email) VALUES ($1, $2, 'p@example.com')`,
      [contactId, projectId],
    );
    const [{ id }] = (await ds.query(`SELECT gen_random_uuid() AS id`)) as Array<{ id: string }>;
    v4 = id;
    await ds.query(
      `INSERT INTO emails (id, created_at, project_id, contact_id, source, to_email, from_email, subject, priority)
       SELECT x.id, x.at, $1, $2, 'TRANSACTIONAL', 'p@example.com', 'me@example.com', 's', 1
         FROM unnest($3::uuid[], $4::timestamptz[]) AS x(id, at)`,
      [projectId, contactId, [now, old, v4], [midMonth(0), midMonth(-2), midMonth(-2)]],
    );
    eventV4 = (
      (await ds.query(
        `INSERT INTO events (id, project_id, contact_id, name, data, created_at)
         VALUES (gen_random_uuid(), $1, $2, 'old', '{}', now() - interval '45 days'),
                ($3, $1, $2, 'new', '{}', now())
         RETURNING id, name`,
        [projectId, contactId, eventNow],
      )) as Array<{ id: string; name: string }>
    ).find((e) => e.name === 'old')!.id;
  });

  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('plans a lookup by id on the one month its id names (custom plan)', async () => {
    const partitions = (await ds.query(
      `SELECT count(*)::int AS n FROM mw_partitions('emails')`,
    )) as Array<{ n: number }>;
    expect(partitions[0].n).toBeGreaterThanOrEqual(5);
    for (const id of [now, old]) {
      const [{ 'QUERY PLAN': plan }] = (await ds.query(
        `EXPLAIN (FORMAT JSON) SELECT id FROM emails WHERE id = $1 AND ${idTimeRange('created_at', '$1')}`,
        [id],
      )) as Array<{ 'QUERY PLAN': unknown }>;
      expect(scanned(plan, 'emails')).toEqual([await partitionOf('emails', id)]);
    }
  });

  it('prunes a generic prepared plan when it runs (Subplans Removed)', async () => {
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query(`SET plan_cache_mode = force_generic_plan`);
      await client.query(
        `PREPARE by_id(uuid) AS SELECT id FROM emails WHERE id = $1 AND ${idTimeRange('created_at', '$1')}`,
      );
      const { rows } = await client.query<{
        'QUERY PLAN': Array<{ Plan: Record<string, unknown> }>;
      }>(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE by_id('${now}')`);
      const plan = rows[0]['QUERY PLAN'];
      const [{ n }] = (await ds.query(
        `SELECT count(*)::int AS n FROM mw_partitions('emails')`,
      )) as Array<{ n: number }>;
      expect({ removed: plan[0].Plan['Subplans Removed'], read: scanned(plan, 'emails') }).toEqual({
        removed: n - 1,
        read: [await partitionOf('emails', now)],
      });
    } finally {
      await client.end();
    }
  });

  it("locks only the row's partition in the repositories' lookups, and finds v4 ids everywhere", async () => {
    const lockedPartitions = await ds.transaction(async (m) => {
      expect(await emails.findForBounce(m, now)).toMatchObject({ id: now });
      expect((await emails.findById(m, projectId, now))?.id).toBe(now);
      await emails.markUnsubscribed(m, now);
      expect([...(await emails.messageIdsOf(m, [now, now])).keys()]).toEqual([now]);
      await new EmailHitsRepository().recordHits(m, [
        { emailId: now, opens: 1, clicks: 0, openedAt: new Date().toISOString(), clickedAt: null },
      ]);
      const rows = (await m.query(
        `SELECT c.relname FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
          WHERE l.pid = pg_backend_pid() AND c.relkind = 'r' AND c.relname LIKE 'emails\\_%'`,
      )) as Array<{ relname: string }>;
      return [...new Set(rows.map((r) => r.relname))];
    });
    expect(lockedPartitions).toEqual([await partitionOf('emails', now)]);

    // No range ever hides a row: a v4 id reads every month and finds its own.
    expect(await emails.findForBounce(ds.manager, v4)).toMatchObject({ id: v4 });
    expect((await emails.findById(ds.manager, projectId, v4))?.id).toBe(v4);
    expect(
      [...(await emails.findManyForBounce(ds.manager, [now, old, v4, v4])).keys()].sort(),
    ).toEqual([now, old, v4].sort());
    expect(await emails.failIfOpen(ds.manager, v4, 'gone')).toMatchObject({ projectId });
    expect(await events.namesOf(ds.manager, [eventNow, eventV4])).toEqual(
      new Map([
        [eventNow, 'new'],
        [eventV4, 'old'],
      ]),
    );
  });
});
