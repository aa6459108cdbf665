import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * event_name_stats counts per month of the events' created_at (the month of
 * the `events` partition that holds them): retention drops a month by
 * deleting that month's rows instead of counting its events
 * (docs/scaling.md, "Partitions and retention").
 *
 * On a populated database the counts end exact, and event inserts wait only
 * for catalog changes:
 *
 * 1. One short transaction, holding SHARE on `events` (no event write in
 *    flight, none starts) and ACCESS EXCLUSIVE on event_name_stats: the
 *    column `month` is added, the existing rows keep month 'infinity' (the
 *    old totals, one bucket), the primary key gains `month` and the triggers
 *    are replaced. No event write spans this transaction: every event
 *    committed before it is counted in the 'infinity' rows, every later
 *    insert in the month rows, and readers sum both. (A delete meanwhile
 *    subtracts only where its month has a row: until step 2 commits, a
 *    total may count an erased event.)
 * 2. One REPEATABLE READ transaction, which blocks no insert: in its
 *    snapshot, for each (project, name, month), the events stored minus what
 *    the month rows count is added as a row of shard 16 (the triggers use
 *    0-15, so no concurrent writer touches it), and the 'infinity' rows are
 *    deleted. The month rows then equal the events of the snapshot, and each
 *    later insert adds its own. A delete committed after the snapshot could
 *    find no month row to subtract from (its event counted in the snapshot,
 *    the new row not yet committed), so until then the delete trigger first
 *    takes SPLIT_LOCK shared, which this step holds exclusive, taken before
 *    its snapshot: deletes of events (erasing a contact) wait for this step,
 *    inserts do not. Re-run, it adds nothing.
 * 3. The delete trigger without that lock.
 *
 * The maintenance lock is held throughout, so no retention drop runs
 * meanwhile.
 */
export class EventNameStatsMonth1796100000000 implements MigrationInterface {
  name = 'EventNameStatsMonth1796100000000';
  // Step 2 must see step 1 committed; the lock of step 1 must not last the scan of step 2.
  transaction = false as const;

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`SELECT pg_advisory_lock($1)`, [MAINTENANCE_LOCK]);
    try {
      // A statement waiting for a lock makes every later one wait behind it: wait briefly, retry.
      await queryRunner.query(`SET lock_timeout = '2s'`);
      await retryOn(['55P03'], () => this.switchToMonths(queryRunner));
      await queryRunner.query(`RESET lock_timeout`);
      // A project deleted meanwhile takes its rows with it: serialization failure, run again.
      await retryOn(['40001', '23503'], () => this.splitByMonth(queryRunner));
      await queryRunner.query(DELETE_TRIGGER_FUNCTION(false));
    } finally {
      await queryRunner.query(`SELECT pg_advisory_unlock($1)`, [MAINTENANCE_LOCK]);
    }
  }

  private async switchToMonths(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.startTransaction();
    try {
      await queryRunner.query(`LOCK TABLE "events" IN SHARE MODE`);
      await queryRunner.query(`LOCK TABLE "event_name_stats" IN ACCESS EXCLUSIVE MODE`);
      const [has] = (await queryRunner.query(
        `SELECT 1 FROM pg_attribute WHERE attrelid = 'event_name_stats'::regclass AND attname = 'month' AND NOT attisdropped`,
      )) as unknown[];
      if (!has) {
        // A constant default: no rewrite; the existing rows read 'infinity'.
        await queryRunner.query(
          `ALTER TABLE "event_name_stats" ADD "month" date NOT NULL DEFAULT 'infinity'`,
        );
        await queryRunner.query(`ALTER TABLE "event_name_stats" ALTER "month" DROP DEFAULT`);
        await queryRunner.query(
          `ALTER TABLE "event_name_stats" DROP CONSTRAINT "PK_6892d309bdcbc4e6afd848da78b"`,
        );
        await queryRunner.query(
          `ALTER TABLE "event_name_stats" ADD CONSTRAINT "PK_a97123060b1725adc91e22f40b3" PRIMARY KEY ("project_id", "name", "month", "shard")`,
        );
        await queryRunner.query(
          `CREATE INDEX "event_name_stats_month_idx" ON "event_name_stats" ("month")`,
        );
      }
      await queryRunner.query(INSERT_TRIGGER_FUNCTION);
      await queryRunner.query(DELETE_TRIGGER_FUNCTION(true));
      await queryRunner.commitTransaction();
    } catch (error) {
      await queryRunner.rollbackTransaction();
      throw error;
    }
  }

  private async splitByMonth(queryRunner: QueryRunner): Promise<void> {
    // Taken before the transaction: its snapshot must follow every delete that held it shared.
    await queryRunner.query(`SELECT pg_advisory_lock($1)`, [SPLIT_LOCK]);
    await queryRunner.startTransaction('REPEATABLE READ');
    try {
      // One scan of every event: longer than an API statement may take.
      await queryRunner.query(`SET LOCAL statement_timeout = 0`);
      await queryRunner.query(`
        INSERT INTO "event_name_stats" ("project_id", "name", "month", "shard", "count", "last_seen_at")
        SELECT COALESCE(e.project_id, s.project_id), COALESCE(e.name, s.name), COALESCE(e.month, s.month),
               16, COALESCE(e.n, 0) - COALESCE(s.n, 0), e.last_seen_at
          FROM (SELECT "project_id" AS project_id, "name" AS name, ${MONTH_OF('"created_at"')} AS month,
                       count(*) AS n, max("created_at") AS last_seen_at
                  FROM "events" GROUP BY 1, 2, 3) e
          FULL JOIN (SELECT "project_id" AS project_id, "name" AS name, "month" AS month, sum("count") AS n
                       FROM "event_name_stats" WHERE "month" <> 'infinity' GROUP BY 1, 2, 3) s
            ON s.project_id = e.project_id AND s.name = e.name AND s.month = e.month
         WHERE COALESCE(e.n, 0) <> COALESCE(s.n, 0)
        ON CONFLICT ("project_id", "name", "month", "shard") DO UPDATE
           SET "count" = "event_name_stats"."count" + EXCLUDED."count",
               "last_seen_at" = GREATEST("event_name_stats"."last_seen_at", EXCLUDED."last_seen_at")`);
      await queryRunner.query(`DELETE FROM "event_name_stats" WHERE "month" = 'infinity'`);
      await queryRunner.commitTransaction();
    } catch (error) {
      await queryRunner.rollbackTransaction();
      throw error;
    } finally {
      await queryRunner.query(`SELECT pg_advisory_unlock($1)`, [SPLIT_LOCK]);
    }
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.startTransaction();
    try {
      await queryRunner.query(`LOCK TABLE "events" IN SHARE MODE`);
      await queryRunner.query(`LOCK TABLE "event_name_stats" IN ACCESS EXCLUSIVE MODE`);
      await queryRunner.query(
        `CREATE TEMP TABLE "event_name_stats_down" ON COMMIT DROP AS
         SELECT "project_id", "name", "shard", sum("count") AS "count", max("last_seen_at") AS "last_seen_at"
           FROM "event_name_stats" GROUP BY 1, 2, 3`,
      );
      await queryRunner.query(`DELETE FROM "event_name_stats"`);
      await queryRunner.query(`DROP INDEX "event_name_stats_month_idx"`);
      await queryRunner.query(
        `ALTER TABLE "event_name_stats" DROP CONSTRAINT "PK_a97123060b1725adc91e22f40b3"`,
      );
      await queryRunner.query(`ALTER TABLE "event_name_stats" DROP COLUMN "month"`);
      await queryRunner.query(
        `ALTER TABLE "event_name_stats" ADD CONSTRAINT "PK_6892d309bdcbc4e6afd848da78b" PRIMARY KEY ("project_id", "name", "shard")`,
      );
      await queryRunner.query(
        `INSERT INTO "event_name_stats" SELECT "project_id", "name", "shard", "count", "last_seen_at" FROM "event_name_stats_down"`,
      );
      await queryRunner.query(OLD_INSERT_TRIGGER_FUNCTION);
      await queryRunner.query(OLD_DELETE_TRIGGER_FUNCTION);
      await queryRunner.commitTransaction();
    } catch (error) {
      await queryRunner.rollbackTransaction();
      throw error;
    }
  }
}

/** PartitionsRepository's lock: no retention drop while the rows change shape. */
const MAINTENANCE_LOCK = 727_002;

/** Held exclusive by step 2, shared by the delete trigger until step 3. */
const SPLIT_LOCK = 727_003;

/** The first day of a timestamp's UTC month, as the `events` partitions cut them. */
const MONTH_OF = (column: string) => `date_trunc('month', ${column} AT TIME ZONE 'UTC')::date`;

/**
 * Inserts add to one of 16 shard rows per (project, name, month), chosen by
 * transaction id so concurrent transactions rarely wait on the same row and
 * one transaction uses one shard.
 */
const INSERT_TRIGGER_FUNCTION = `
  CREATE OR REPLACE FUNCTION "event_name_stats_on_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
      INSERT INTO "event_name_stats" AS s ("project_id", "name", "month", "shard", "count", "last_seen_at")
      SELECT n."project_id", n."name", ${MONTH_OF('n."created_at"')}, (txid_current() % 16)::smallint,
             count(*), max(n."created_at")
      FROM new_events n
      GROUP BY 1, 2, 3
      ORDER BY 1, 2, 3
      ON CONFLICT ("project_id", "name", "month", "shard") DO UPDATE
          SET "count" = s."count" + EXCLUDED."count",
              "last_seen_at" = GREATEST(s."last_seen_at", EXCLUDED."last_seen_at");
      RETURN NULL;
  END
  $$`;

/**
 * Deletes (a contact erased with its events, cascades) subtract from the
 * month's lowest shard and recompute last_seen_at from what is left of the
 * month (one probe of (project_id, name, created_at) in its partition); a
 * month of a name with no events left disappears. Updates only, never an
 * insert: a project's deletion cascades here too.
 */
const DELETE_TRIGGER_FUNCTION = (splitting: boolean) => `
  CREATE OR REPLACE FUNCTION "event_name_stats_on_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
      ${splitting ? `PERFORM pg_advisory_xact_lock_shared(${SPLIT_LOCK});` : ''}
      UPDATE "event_name_stats" s
      SET "count" = s."count" - g.n
      FROM (SELECT o."project_id", o."name", ${MONTH_OF('o."created_at"')} AS month, count(*) AS n
              FROM old_events o GROUP BY 1, 2, 3) g
      WHERE s."project_id" = g."project_id" AND s."name" = g."name" AND s."month" = g.month
        AND s."shard" = (SELECT min(m."shard") FROM "event_name_stats" m
                         WHERE m."project_id" = g."project_id" AND m."name" = g."name" AND m."month" = g.month);
      UPDATE "event_name_stats" s
      SET "last_seen_at" = (SELECT max(e."created_at") FROM "events" e
                            WHERE e."project_id" = s."project_id" AND e."name" = s."name"
                              AND e."created_at" >= (s."month"::timestamp AT TIME ZONE 'UTC')
                              AND e."created_at" < ((s."month" + interval '1 month') AT TIME ZONE 'UTC'))
      WHERE (s."project_id", s."name", s."month") IN
            (SELECT DISTINCT o."project_id", o."name", ${MONTH_OF('o."created_at"')} FROM old_events o);
      DELETE FROM "event_name_stats" s
      WHERE s."last_seen_at" IS NULL
        AND (s."project_id", s."name", s."month") IN
            (SELECT DISTINCT o."project_id", o."name", ${MONTH_OF('o."created_at"')} FROM old_events o);
      RETURN NULL;
  END
  $$`;

/** The functions of migration Contacts, for down(). */
const OLD_INSERT_TRIGGER_FUNCTION = `
  CREATE OR REPLACE FUNCTION "event_name_stats_on_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
      INSERT INTO "event_name_stats" AS s ("project_id", "name", "shard", "count", "last_seen_at")
      SELECT n."project_id", n."name", (txid_current() % 16)::smallint, count(*), max(n."created_at")
      FROM new_events n
      GROUP BY n."project_id", n."name"
      ORDER BY n."project_id", n."name"
      ON CONFLICT ("project_id", "name", "shard") DO UPDATE
          SET "count" = s."count" + EXCLUDED."count",
              "last_seen_at" = GREATEST(s."last_seen_at", EXCLUDED."last_seen_at");
      RETURN NULL;
  END
  $$`;

const OLD_DELETE_TRIGGER_FUNCTION = `
  CREATE OR REPLACE FUNCTION "event_name_stats_on_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
      UPDATE "event_name_stats" s
      SET "count" = s."count" - g.n
      FROM (SELECT o."project_id", o."name", count(*) AS n FROM old_events o GROUP BY 1, 2) g
      WHERE s."project_id" = g."project_id" AND s."name" = g."name"
        AND s."shard" = (SELECT min(m."shard") FROM "event_name_stats" m
                         WHERE m."project_id" = g."project_id" AND m."name" = g."name");
      UPDATE "event_name_stats" s
      SET "last_seen_at" = (SELECT max(e."created_at") FROM "events" e
                            WHERE e."project_id" = s."project_id" AND e."name" = s."name")
      WHERE (s."project_id", s."name") IN (SELECT DISTINCT o."project_id", o."name" FROM old_events o);
      DELETE FROM "event_name_stats" s
      WHERE s."last_seen_at" IS NULL
        AND (s."project_id", s."name") IN (SELECT DISTINCT o."project_id", o."name" FROM old_events o);
      RETURN NULL;
  END
  $$`;

/** Runs `step` again while it fails with one of `codes`, ten times at most, a second apart. */
async function retryOn(codes: string[], step: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await step();
      return;
    } catch (error) {
      if (!codes.includes((error as { code?: string }).code ?? '') || attempt >= 10) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}
