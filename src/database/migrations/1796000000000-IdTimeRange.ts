import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The created_at range a row of `emails` or `events` can have, from its id
 * alone: ids are UUIDv7 (src/database/id.ts), whose first 48 bits are the
 * Unix time in ms when the application made them, and created_at is the
 * database's now() at the insert, seconds later at most (earlier by a
 * transaction's age, since now() is its start). A lookup by id adds
 * `created_at >= mw_id_time_lo(id) AND created_at < mw_id_time_hi(id)` and
 * reads the one or two monthly partitions that range touches instead of
 * every month kept (docs/scaling.md, "Partitions and retention").
 *
 * The margin (a day each way) is far wider than any insert's delay or any
 * sane clock skew between application and database, because a range that is
 * too narrow would miss a row. Any other version of UUID (v4 ids of old rows,
 * of rows written by hand or by tests) gets the whole range: such a lookup
 * probes every partition, as before, and still finds its row.
 *
 * IMMUTABLE and written with immutable operators only (integer ms, no
 * timestamptz ± interval, which is STABLE), so the planner inlines and folds
 * them on a constant id (plan-time pruning) and prunes on a parameter at
 * executor start (a generic plan's "Subplans Removed").
 */
export class IdTimeRange1796000000000 implements MigrationInterface {
  name = 'IdTimeRange1796000000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    // The 12 hex digits before the version nibble are the 48-bit ms time; the 15th character is the version.
    const idTime = (shiftMs: string, otherwise: string) => `
      SELECT CASE WHEN substr(id::text, 15, 1) = '7'
                  THEN to_timestamp((('x' || substr(id::text, 1, 8) || substr(id::text, 10, 4))::bit(48)::bigint ${shiftMs}) / 1000.0)
                  ELSE '${otherwise}'::timestamptz END`;
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION mw_id_time_lo(id uuid) RETURNS timestamptz
      LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$${idTime('- 86400000', '-infinity')}$$`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION mw_id_time_hi(id uuid) RETURNS timestamptz
      LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$${idTime('+ 86400000', 'infinity')}$$`);
    // One range over an array of ids (`id = ANY($1)`): from the oldest id's to the newest's. A
    // function of the parameter alone, so a custom plan folds it to a constant and reads (and
    // locks) only those months; a join on unnest's rows would prune at run time only, after
    // every partition was locked.
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION mw_id_time_lo(ids uuid[]) RETURNS timestamptz
      LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$SELECT min(mw_id_time_lo(id)) FROM unnest(ids) AS id$$`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION mw_id_time_hi(ids uuid[]) RETURNS timestamptz
      LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$SELECT max(mw_id_time_hi(id)) FROM unnest(ids) AS id$$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION IF EXISTS mw_id_time_hi(uuid[])`);
    await queryRunner.query(`DROP FUNCTION IF EXISTS mw_id_time_lo(uuid[])`);
    await queryRunner.query(`DROP FUNCTION IF EXISTS mw_id_time_hi(uuid)`);
    await queryRunner.query(`DROP FUNCTION IF EXISTS mw_id_time_lo(uuid)`);
  }
}
