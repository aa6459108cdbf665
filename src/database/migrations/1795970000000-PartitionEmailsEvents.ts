import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `emails` and `events` become tables partitioned by month of created_at
 * (docs/scaling.md, "Partitions and retention"), without holding an
 * exclusive lock on a populated table for longer than catalog changes take:
 *
 * 1. Outside any transaction: the unique index (id, created_at) the new
 *    primary key needs is built CONCURRENTLY on today's table, and a CHECK
 *    (created_at < bound) is added NOT VALID and then validated (a scan under
 *    SHARE UPDATE EXCLUSIVE: writes go on).
 * 2. One short transaction per table: today's table is renamed to
 *    `<table>_legacy`, its primary key swapped for the new index, its
 *    triggers moved to a partitioned parent created under the old name with
 *    the same columns, indexes and foreign keys, and it is ATTACHed as the
 *    parent's partition FROM (MINVALUE) TO (bound). The validated CHECK
 *    proves the range and its indexes and foreign keys match the parent's,
 *    so nothing is scanned or built under the lock. Monthly partitions
 *    follow from the bound up to two months ahead (mw_ensure_partitions).
 * 3. The unique rules that cannot stay global on a partitioned table (one
 *    email per campaign recipient, one per workflow step) move into small
 *    tables kept by a statement trigger; the old rows are copied there,
 *    then the old unique indexes go (the legacy partition enforced them
 *    meanwhile).
 *
 * The bound is the start of next month (of the month after, on a month's
 * last day: a row written while this runs must still fit), or, on an empty
 * table, the start of the month before last: a new installation gets six
 * partitions (the legacy one takes anything older, back-dated rows
 * included), each of which every test database pays for.
 */
export class PartitionEmailsEvents1795970000000 implements MigrationInterface {
  name = 'PartitionEmailsEvents1795970000000';
  // CREATE INDEX CONCURRENTLY and VALIDATE outside a long transaction (see above).
  transaction = false as const;

  public async up(queryRunner: QueryRunner): Promise<void> {
    await this.functions(queryRunner);
    await this.keyTables(queryRunner);
    for (const table of ['events', 'emails'] as const) {
      if (await this.isPartitioned(queryRunner, table)) continue;
      const bound = await this.bound(queryRunner, table);
      // A build that failed or was cancelled leaves an INVALID index, which IF NOT EXISTS would keep.
      await PartitionEmailsEvents1795970000000.dropInvalidIndex(
        queryRunner,
        `${table}_legacy_id_created_at`,
      );
      await queryRunner.query(
        `CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "${table}_legacy_id_created_at" ON "${table}" ("id", "created_at")`,
      );
      // A statement waiting for a lock makes every later one wait behind it: wait briefly, retry.
      await queryRunner.query(`SET lock_timeout = '2s'`);
      await retryOnLockTimeout(async () => {
        await queryRunner.query(
          `ALTER TABLE "${table}" DROP CONSTRAINT IF EXISTS "${table}_legacy_bound"`,
        );
        await queryRunner.query(
          `ALTER TABLE "${table}" ADD CONSTRAINT "${table}_legacy_bound" CHECK ("created_at" < '${bound}') NOT VALID`,
        );
      });
      await retryOnLockTimeout(() =>
        queryRunner.query(`ALTER TABLE "${table}" VALIDATE CONSTRAINT "${table}_legacy_bound"`),
      );
      await retryOnLockTimeout(() => this.switchTable(queryRunner, table, bound));
      await queryRunner.query(`RESET lock_timeout`);
    }
    await this.moveUniqueRules(queryRunner);
    await queryRunner.query(`ANALYZE "events"`);
    await queryRunner.query(`ANALYZE "emails"`);
  }

  /**
   * Drops the index if a CREATE INDEX CONCURRENTLY left it INVALID (it failed
   * or was cancelled midway): PRIMARY KEY USING INDEX refuses an invalid one,
   * so an interrupted run would otherwise fail at every boot after it.
   * Static (TypeORM takes every export of this file for a migration).
   */
  static async dropInvalidIndex(queryRunner: QueryRunner, name: string): Promise<void> {
    const [row] = (await queryRunner.query(
      `SELECT i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass($1)`,
      [`"${name}"`],
    )) as Array<{ valid: boolean }>;
    if (row && !row.valid) await queryRunner.query(`DROP INDEX CONCURRENTLY "${name}"`);
  }

  private async isPartitioned(queryRunner: QueryRunner, table: string): Promise<boolean> {
    const [row] = (await queryRunner.query(
      `SELECT relkind FROM pg_class WHERE oid = $1::regclass`,
      [table],
    )) as Array<{ relkind: string }>;
    return row.relkind === 'p';
  }

  private async bound(queryRunner: QueryRunner, table: string): Promise<string> {
    const [row] = (await queryRunner.query(
      `SELECT to_char(CASE WHEN EXISTS (SELECT 1 FROM "${table}")
                           THEN date_trunc('month', (now() AT TIME ZONE 'UTC') + interval '1 day') + interval '1 month'
                           ELSE date_trunc('month', now() AT TIME ZONE 'UTC') - interval '2 months' END,
                      'YYYY-MM-DD"T00:00:00Z"') AS bound`,
    )) as Array<{ bound: string }>;
    return row.bound;
  }

  /** The partition bookkeeping in SQL, shared by this migration and the maintenance job. */
  private async functions(queryRunner: QueryRunner): Promise<void> {
    // A partition's range as timestamps (-infinity / infinity for MINVALUE / MAXVALUE).
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION mw_partitions(parent regclass)
      RETURNS TABLE (name text, lower timestamptz, upper timestamptz) LANGUAGE sql STABLE AS $$
        SELECT c.relname::text,
               COALESCE(m[1]::timestamptz, '-infinity'::timestamptz),
               COALESCE(m[3]::timestamptz, 'infinity'::timestamptz)
          FROM pg_inherits i
          JOIN pg_class c ON c.oid = i.inhrelid
          CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid),
            $re$FROM \\((?:'([^']*)'|(MINVALUE))\\) TO \\((?:'([^']*)'|(MAXVALUE))\\)$re$) AS m
         WHERE i.inhparent = parent
         ORDER BY 2
      $$`);
    // Monthly partitions (UTC months) from the last one's end up to months_ahead
    // months after the current one. Each is created alone and then ATTACHed,
    // which takes SHARE UPDATE EXCLUSIVE on the parent, not the ACCESS
    // EXCLUSIVE of CREATE TABLE ... PARTITION OF: reads and writes go on.
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION mw_ensure_partitions(parent regclass, months_ahead integer)
      RETURNS SETOF text LANGUAGE plpgsql AS $$
      DECLARE
        target timestamptz := (date_trunc('month', now() AT TIME ZONE 'UTC')
                               + make_interval(months => months_ahead + 1)) AT TIME ZONE 'UTC';
        start timestamptz;
        stop timestamptz;
        partition text;
      BEGIN
        SELECT max(p.upper) INTO start FROM mw_partitions(parent) p;
        IF start IS NULL THEN
          start := date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
        END IF;
        WHILE start < target LOOP
          stop := (date_trunc('month', start AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';
          partition := format('%s_p%s', (SELECT relname FROM pg_class WHERE oid = parent),
                              to_char(start AT TIME ZONE 'UTC', 'YYYYMM'));
          EXECUTE format('CREATE TABLE %I (LIKE %s INCLUDING DEFAULTS INCLUDING STORAGE)', partition, parent);
          EXECUTE format('ALTER TABLE %s ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                         parent, partition, start, stop);
          RETURN NEXT partition;
          start := stop;
        END LOOP;
      END
      $$`);
  }

  /** The unique rules of `emails` that a partitioned table cannot hold globally, as tables of their own. */
  private async keyTables(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE IF NOT EXISTS "campaign_recipients" (
        "campaign_id" uuid NOT NULL, "contact_id" uuid NOT NULL,
        CONSTRAINT "PK_campaign_recipients" PRIMARY KEY ("campaign_id", "contact_id"),
        CONSTRAINT "FK_campaign_recipients_contact" FOREIGN KEY ("contact_id") REFERENCES "contacts"("id") ON DELETE CASCADE)`);
    await queryRunner.query(
      `CREATE INDEX IF NOT EXISTS "campaign_recipients_contact_id_idx" ON "campaign_recipients" ("contact_id")`,
    );
    await queryRunner.query(`
      CREATE TABLE IF NOT EXISTS "workflow_step_emails" (
        "workflow_execution_id" uuid NOT NULL, "workflow_step_id" character varying(64) NOT NULL,
        CONSTRAINT "PK_workflow_step_emails" PRIMARY KEY ("workflow_execution_id", "workflow_step_id"),
        CONSTRAINT "FK_workflow_step_emails_execution" FOREIGN KEY ("workflow_execution_id")
          REFERENCES "workflow_executions"("id") ON DELETE CASCADE)`);
    // Set-based, once per statement: a second email for a campaign recipient or a workflow
    // step is a unique violation, as with the old indexes (the fan-out leaves out recipients
    // who have theirs; a per-row trigger doubled its insert time).
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION emails_unique_keys() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO campaign_recipients (campaign_id, contact_id)
        SELECT campaign_id, contact_id FROM new_rows WHERE campaign_id IS NOT NULL;
        INSERT INTO workflow_step_emails (workflow_execution_id, workflow_step_id)
        SELECT workflow_execution_id, workflow_step_id FROM new_rows WHERE workflow_execution_id IS NOT NULL;
        RETURN NULL;
      END
      $$`);
    // bounce_reports.email_id kept ON DELETE SET NULL through a foreign key, which
    // cannot point at (id) of a partitioned table: a deleted email unlinks its reports.
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION emails_unlink_bounce_reports() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE bounce_reports SET email_id = NULL WHERE email_id IN (SELECT id FROM old_rows);
        RETURN NULL;
      END
      $$`);
  }

  /** Step 2 for one table, in one transaction: only catalog changes under its lock. */
  private async switchTable(queryRunner: QueryRunner, table: string, bound: string): Promise<void> {
    await queryRunner.startTransaction();
    try {
      await queryRunner.query(`LOCK TABLE "${table}" IN ACCESS EXCLUSIVE MODE`);
      if (table === 'emails')
        await queryRunner.query(
          `ALTER TABLE "bounce_reports" DROP CONSTRAINT IF EXISTS "FK_bounce_reports_email"`,
        );
      const triggers = (await queryRunner.query(
        `SELECT tgname AS name, pg_get_triggerdef(oid) AS definition FROM pg_trigger
          WHERE tgrelid = $1::regclass AND NOT tgisinternal`,
        [table],
      )) as Array<{ name: string; definition: string }>;
      for (const trigger of triggers)
        await queryRunner.query(`DROP TRIGGER "${trigger.name}" ON "${table}"`);
      const [pk] = (await queryRunner.query(
        `SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'`,
        [table],
      )) as Array<{ conname: string }>;
      await queryRunner.query(`ALTER TABLE "${table}" DROP CONSTRAINT "${pk.conname}"`);
      await queryRunner.query(
        `ALTER TABLE "${table}" ADD CONSTRAINT "${table}_legacy_pkey" PRIMARY KEY USING INDEX "${table}_legacy_id_created_at"`,
      );
      // Index names are global: the parent takes the entity's names, the legacy ones get a suffix.
      const indexes = (await queryRunner.query(
        `SELECT c.relname AS name, pg_get_indexdef(c.oid) AS definition FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
          WHERE i.indrelid = $1::regclass AND c.relname <> $2`,
        [table, `${table}_legacy_pkey`],
      )) as Array<{ name: string; definition: string }>;
      for (const index of indexes)
        await queryRunner.query(
          `ALTER INDEX "${index.name}" RENAME TO "${`${index.name}`.slice(0, 55)}_legacy"`,
        );
      await queryRunner.query(`ALTER TABLE "${table}" RENAME TO "${table}_legacy"`);

      await queryRunner.query(
        `CREATE TABLE "${table}" (LIKE "${table}_legacy" INCLUDING DEFAULTS INCLUDING STORAGE) PARTITION BY RANGE ("created_at")`,
      );
      await queryRunner.query(
        `ALTER TABLE "${table}" ADD CONSTRAINT "${PRIMARY_KEYS[table]}" PRIMARY KEY ("id", "created_at")`,
      );
      for (const index of indexes) {
        if (DROPPED_INDEXES.includes(index.name)) continue;
        // Read before the rename, so it names the parent; with no partitions yet nothing is built.
        await queryRunner.query(index.definition);
      }
      for (const fk of FOREIGN_KEYS[table])
        await queryRunner.query(`ALTER TABLE "${table}" ADD ${fk}`);
      for (const trigger of triggers) await queryRunner.query(trigger.definition);
      if (table === 'emails') {
        await queryRunner.query(
          `CREATE TRIGGER emails_unique_keys AFTER INSERT ON emails
             REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION emails_unique_keys()`,
        );
        await queryRunner.query(
          `CREATE TRIGGER emails_unlink_bounce_reports AFTER DELETE ON emails
             REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION emails_unlink_bounce_reports()`,
        );
      }
      await queryRunner.query(
        `ALTER TABLE "${table}" ATTACH PARTITION "${table}_legacy" FOR VALUES FROM (MINVALUE) TO ('${bound}')`,
      );
      await queryRunner.query(`SELECT mw_ensure_partitions($1::regclass, 2)`, [table]);
      await queryRunner.commitTransaction();
    } catch (error) {
      await queryRunner.rollbackTransaction();
      throw error;
    }
  }

  /** Step 3: copy the legacy rows' keys, then drop the unique indexes that held them. */
  private async moveUniqueRules(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `INSERT INTO campaign_recipients (campaign_id, contact_id)
       SELECT campaign_id, contact_id FROM emails_legacy WHERE campaign_id IS NOT NULL
       ON CONFLICT DO NOTHING`,
    );
    await queryRunner.query(
      `INSERT INTO workflow_step_emails (workflow_execution_id, workflow_step_id)
       SELECT workflow_execution_id, workflow_step_id FROM emails_legacy WHERE workflow_execution_id IS NOT NULL
       ON CONFLICT DO NOTHING`,
    );
    for (const name of DROPPED_INDEXES)
      await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS "${name.slice(0, 55)}_legacy"`);
  }

  public async down(): Promise<void> {
    // Turning partitions back into one table means copying every row: restore a backup instead.
    throw new Error('PartitionEmailsEvents cannot be reverted');
  }
}

/** Runs `step` again while it fails on lock_timeout (55P03), ten times at most, a second apart. */
async function retryOnLockTimeout(step: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await step();
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== '55P03' || attempt >= 10) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

/** TypeORM's names for the (id, created_at) primary keys (migration:check compares them). */
const PRIMARY_KEYS: Record<string, string> = {
  emails: 'PK_emails_id_created_at',
  events: 'PK_events_id_created_at',
};

/** The unique indexes that moved into campaign_recipients and workflow_step_emails. */
const DROPPED_INDEXES = ['emails_campaign_id_contact_id_key', 'emails_workflow_step_idx'];

/** The parents' foreign keys, named as before so that TypeORM sees no change. */
const FOREIGN_KEYS: Record<string, string[]> = {
  emails: [
    `CONSTRAINT "FK_18e630371ededf594f21a818635" FOREIGN KEY ("contact_id") REFERENCES "contacts"("id") ON DELETE CASCADE`,
    `CONSTRAINT "FK_f7be72c08a424961ea2d8484c15" FOREIGN KEY ("content_id") REFERENCES "email_contents"("id") ON DELETE RESTRICT`,
  ],
  events: [
    `CONSTRAINT "FK_a8a1a3d5f3baca233935084f081" FOREIGN KEY ("contact_id") REFERENCES "contacts"("id") ON DELETE CASCADE`,
  ],
};
