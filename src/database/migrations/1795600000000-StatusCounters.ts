import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Status counters (see StatusCounter and WorkflowCounter): GET /metrics and
 * a workflow's stats read a few counter rows instead of counting `emails`,
 * `webhook_deliveries`, `campaigns` and `workflow_executions`.
 *
 * Statement-level triggers with transition tables add each statement's net
 * change per key in the same transaction, so a batch that moves 1,000 rows
 * writes each key once, and a statement that changes no status (an open, a
 * retry's attempt count) writes nothing. Every backend writes its own slot
 * (`pg_backend_pid()`): no writer waits on another's counter row, so the
 * counters add no lock wait and no deadlock to the paths they count.
 * `compact_counters()` folds the slots of backends that have gone into slot
 * 0 (under an advisory lock, skipping rows a live writer holds) and drops the
 * counters of workflows deleted with their project; MetricsService runs it
 * every minute. The triggers are created before the backfill: they lock out
 * writers until this migration commits, so no change is counted twice or
 * missed.
 */
export class StatusCounters1795600000000 implements MigrationInterface {
  name = 'StatusCounters1795600000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "status_counters" ("family" character varying(32) NOT NULL, "status" character varying(32) NOT NULL, "source" character varying(32) NOT NULL, "slot" integer NOT NULL, "n" bigint NOT NULL DEFAULT '0', CONSTRAINT "PK_5718a9267addae1f6c640b1e7b5" PRIMARY KEY ("family", "status", "source", "slot"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "workflow_counters" ("workflow_id" uuid NOT NULL, "slot" integer NOT NULL, "running" integer NOT NULL DEFAULT '0', "waiting" integer NOT NULL DEFAULT '0', "completed" integer NOT NULL DEFAULT '0', "exited" integer NOT NULL DEFAULT '0', "failed" integer NOT NULL DEFAULT '0', "cancelled" integer NOT NULL DEFAULT '0', CONSTRAINT "PK_a13f08df37121f48b69f5c5c97b" PRIMARY KEY ("workflow_id", "slot"))`,
    );
    // Counter rows are rewritten all the time and read whole: room on each page for HOT updates.
    await queryRunner.query(`ALTER TABLE "status_counters" SET (fillfactor = 50)`);
    await queryRunner.query(`ALTER TABLE "workflow_counters" SET (fillfactor = 50)`);

    // One function per table with a status (emails also by source). The
    // INSERT trigger names only new_rows and the DELETE trigger only
    // old_rows; plpgsql plans a branch only when it runs.
    for (const t of GLOBAL_TABLES) {
      const upsert = (changes: string) => `
          INSERT INTO status_counters AS k (family, status, source, slot, n)
          SELECT '${t.table}', c.status, c.source, pg_backend_pid(), sum(c.d) FROM (${changes}) c
           GROUP BY c.status, c.source HAVING sum(c.d) <> 0
              ON CONFLICT (family, status, source, slot) DO UPDATE SET n = k.n + EXCLUDED.n;`;
      const added = `SELECT status::text, ${t.source} AS source, 1 AS d FROM new_rows`;
      const removed = `SELECT status::text, ${t.source} AS source, -1 AS d FROM old_rows`;
      await queryRunner.query(`
        CREATE FUNCTION ${t.table}_status_counters() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF TG_OP = 'INSERT' THEN ${upsert(added)}
          ELSIF TG_OP = 'UPDATE' THEN ${upsert(`${added} UNION ALL ${removed}`)}
          ELSE ${upsert(removed)}
          END IF;
          RETURN NULL;
        END $$`);
    }
    const executionUpsert = (changes: string) => `
        WITH c AS (${changes}),
        global AS (
          INSERT INTO status_counters AS k (family, status, source, slot, n)
          SELECT 'workflow_executions', status::text, '', pg_backend_pid(), sum(d) FROM c GROUP BY status HAVING sum(d) <> 0
              ON CONFLICT (family, status, source, slot) DO UPDATE SET n = k.n + EXCLUDED.n)
        INSERT INTO workflow_counters AS k (workflow_id, slot, running, waiting, completed, exited, failed, cancelled)
        SELECT workflow_id, pg_backend_pid(), r, w, co, e, f, ca
          FROM (SELECT workflow_id,
                       coalesce(sum(d) FILTER (WHERE status = 'RUNNING'), 0) AS r,
                       coalesce(sum(d) FILTER (WHERE status = 'WAITING'), 0) AS w,
                       coalesce(sum(d) FILTER (WHERE status = 'COMPLETED'), 0) AS co,
                       coalesce(sum(d) FILTER (WHERE status = 'EXITED'), 0) AS e,
                       coalesce(sum(d) FILTER (WHERE status = 'FAILED'), 0) AS f,
                       coalesce(sum(d) FILTER (WHERE status = 'CANCELLED'), 0) AS ca
                  FROM c GROUP BY workflow_id) g
         WHERE r <> 0 OR w <> 0 OR co <> 0 OR e <> 0 OR f <> 0 OR ca <> 0
            ON CONFLICT (workflow_id, slot) DO UPDATE
           SET running = k.running + EXCLUDED.running, waiting = k.waiting + EXCLUDED.waiting,
               completed = k.completed + EXCLUDED.completed, exited = k.exited + EXCLUDED.exited,
               failed = k.failed + EXCLUDED.failed, cancelled = k.cancelled + EXCLUDED.cancelled;`;
    const added = `SELECT workflow_id, status, 1 AS d FROM new_rows`;
    const removed = `SELECT workflow_id, status, -1 AS d FROM old_rows`;
    await queryRunner.query(`
      CREATE FUNCTION workflow_executions_status_counters() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN ${executionUpsert(added)}
        ELSIF TG_OP = 'UPDATE' THEN ${executionUpsert(`${added} UNION ALL ${removed}`)}
        ELSE ${executionUpsert(removed)}
        END IF;
        RETURN NULL;
      END $$`);
    for (const table of [...GLOBAL_TABLES.map((t) => t.table), 'workflow_executions']) {
      await queryRunner.query(`
        CREATE TRIGGER ${table}_status_counters_insert AFTER INSERT ON ${table}
          REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${table}_status_counters()`);
      await queryRunner.query(`
        CREATE TRIGGER ${table}_status_counters_update AFTER UPDATE ON ${table}
          REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${table}_status_counters()`);
      await queryRunner.query(`
        CREATE TRIGGER ${table}_status_counters_delete AFTER DELETE ON ${table}
          REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ${table}_status_counters()`);
    }

    await queryRunner.query(`
      CREATE FUNCTION compact_counters() RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        IF NOT pg_try_advisory_xact_lock(hashtext('mailwright:counters:compact')) THEN RETURN; END IF;
        WITH gone AS (
          DELETE FROM status_counters k
           USING (SELECT family, status, source, slot FROM status_counters c
                   WHERE slot <> 0 AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = c.slot)
                     FOR UPDATE SKIP LOCKED) l
           WHERE (k.family, k.status, k.source, k.slot) = (l.family, l.status, l.source, l.slot)
          RETURNING k.family, k.status, k.source, k.n)
        INSERT INTO status_counters AS k (family, status, source, slot, n)
        SELECT family, status, source, 0, sum(n) FROM gone GROUP BY 1, 2, 3
            ON CONFLICT (family, status, source, slot) DO UPDATE SET n = k.n + EXCLUDED.n;
        WITH gone AS (
          DELETE FROM workflow_counters k
           USING (SELECT workflow_id, slot FROM workflow_counters c
                   WHERE slot <> 0 AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = c.slot)
                     FOR UPDATE SKIP LOCKED) l
           WHERE (k.workflow_id, k.slot) = (l.workflow_id, l.slot)
          RETURNING k.*)
        INSERT INTO workflow_counters AS k (workflow_id, slot, running, waiting, completed, exited, failed, cancelled)
        SELECT workflow_id, 0, sum(running), sum(waiting), sum(completed), sum(exited), sum(failed), sum(cancelled)
          FROM gone GROUP BY workflow_id
            ON CONFLICT (workflow_id, slot) DO UPDATE
           SET running = k.running + EXCLUDED.running, waiting = k.waiting + EXCLUDED.waiting,
               completed = k.completed + EXCLUDED.completed, exited = k.exited + EXCLUDED.exited,
               failed = k.failed + EXCLUDED.failed, cancelled = k.cancelled + EXCLUDED.cancelled;
        -- A workflow is only soft-deleted; its row goes with its project, and so do its executions.
        DELETE FROM workflow_counters c WHERE NOT EXISTS (SELECT 1 FROM workflows w WHERE w.id = c.workflow_id);
      END $$`);

    for (const t of GLOBAL_TABLES) {
      await queryRunner.query(`
        INSERT INTO status_counters (family, status, source, slot, n)
        SELECT '${t.table}', status::text, ${t.source}, 0, count(*) FROM ${t.table} GROUP BY 2, 3`);
    }
    await queryRunner.query(`
      INSERT INTO status_counters (family, status, source, slot, n)
      SELECT 'workflow_executions', status::text, '', 0, count(*) FROM workflow_executions GROUP BY 2`);
    await queryRunner.query(`
      INSERT INTO workflow_counters (workflow_id, slot, running, waiting, completed, exited, failed, cancelled)
      SELECT workflow_id, 0, count(*) FILTER (WHERE status = 'RUNNING'), count(*) FILTER (WHERE status = 'WAITING'),
             count(*) FILTER (WHERE status = 'COMPLETED'), count(*) FILTER (WHERE status = 'EXITED'),
             count(*) FILTER (WHERE status = 'FAILED'), count(*) FILTER (WHERE status = 'CANCELLED')
        FROM workflow_executions GROUP BY workflow_id`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION compact_counters()`);
    for (const table of [...GLOBAL_TABLES.map((t) => t.table), 'workflow_executions']) {
      for (const op of ['insert', 'update', 'delete'])
        await queryRunner.query(`DROP TRIGGER ${table}_status_counters_${op} ON ${table}`);
      await queryRunner.query(`DROP FUNCTION ${table}_status_counters()`);
    }
    await queryRunner.query(`DROP TABLE "workflow_counters"`);
    await queryRunner.query(`DROP TABLE "status_counters"`);
  }
}

/** The tables counted only globally; `source` is the expression for the source label. */
const GLOBAL_TABLES = [
  { table: 'emails', source: 'source::text' },
  { table: 'webhook_deliveries', source: `''` },
  { table: 'campaigns', source: `''` },
];
