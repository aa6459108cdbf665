import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Email outcomes per project and UTC day (see EmailOutcomeDay): GET /project/stats sums at most
 * 2 × `days` days of rows instead of scanning the emails of its window (a seq scan of every
 * email sent in 60 days, 0.4 s at 200,000). Built as StatusCounters is: a statement-level
 * trigger with transition tables adds the net change per (project, day) to the backend's own
 * slot, and writes nothing for a statement that changes no outcome (a retry's attempt count).
 * `compact_counters()` is redefined to fold these slots too and to drop the days of projects
 * gone (their emails' cascade leaves negative rows; no foreign key, which that very cascade's
 * trigger would violate). The trigger exists before the backfill and locks writers out until
 * this migration commits, so no change is counted twice or missed: the lock is waited for at
 * most 5 s (the migration fails rather than queue every writer behind a long transaction; the
 * next start runs it again), and only the days GET /project/stats can read (2 × 90) are
 * backfilled. That read of the emails is still a pass over every partition while writers wait:
 * on a large installation, run this upgrade in a quiet hour (docs/scaling.md).
 */
/** The days GET /project/stats can ask for (two windows of at most 90), today included. */
const BACKFILL_DAYS = 180;

export class EmailOutcomeDays1795990000000 implements MigrationInterface {
  name = 'EmailOutcomeDays1795990000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`SET LOCAL lock_timeout = '5s'`);
    await queryRunner.query(
      `CREATE TABLE "email_outcome_days" ("project_id" uuid NOT NULL, "day" date NOT NULL, "slot" integer NOT NULL, "sent" integer NOT NULL DEFAULT '0', "opened" integer NOT NULL DEFAULT '0', "clicked" integer NOT NULL DEFAULT '0', "bounced" integer NOT NULL DEFAULT '0', "complained" integer NOT NULL DEFAULT '0', CONSTRAINT "PK_email_outcome_days" PRIMARY KEY ("project_id", "day", "slot"))`,
    );
    // Rewritten all the time, read by range: room on each page for HOT updates.
    await queryRunner.query(`ALTER TABLE "email_outcome_days" SET (fillfactor = 50)`);
    const outcomes = (rows: string, d: number) => `
      SELECT project_id, (COALESCE(sent_at, bounced_at) AT TIME ZONE 'UTC')::date AS day, ${d} AS sent,
             CASE WHEN opened_at IS NOT NULL THEN ${d} ELSE 0 END AS opened,
             CASE WHEN clicked_at IS NOT NULL THEN ${d} ELSE 0 END AS clicked,
             CASE WHEN status = 'BOUNCED' THEN ${d} ELSE 0 END AS bounced,
             CASE WHEN status = 'COMPLAINED' THEN ${d} ELSE 0 END AS complained
        FROM ${rows} WHERE sent_at IS NOT NULL OR bounced_at IS NOT NULL`;
    const upsert = (changes: string) => `
        INSERT INTO email_outcome_days AS k (project_id, day, slot, sent, opened, clicked, bounced, complained)
        SELECT project_id, day, pg_backend_pid(), s, o, c, b, x
          FROM (SELECT project_id, day, sum(sent) AS s, sum(opened) AS o, sum(clicked) AS c,
                       sum(bounced) AS b, sum(complained) AS x
                  FROM (${changes}) ch GROUP BY project_id, day) g
         WHERE s <> 0 OR o <> 0 OR c <> 0 OR b <> 0 OR x <> 0
            ON CONFLICT (project_id, day, slot) DO UPDATE
           SET sent = k.sent + EXCLUDED.sent, opened = k.opened + EXCLUDED.opened,
               clicked = k.clicked + EXCLUDED.clicked, bounced = k.bounced + EXCLUDED.bounced,
               complained = k.complained + EXCLUDED.complained;`;
    await queryRunner.query(`
      CREATE FUNCTION emails_outcome_days() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN ${upsert(outcomes('new_rows', 1))}
        ELSIF TG_OP = 'UPDATE' THEN ${upsert(`${outcomes('new_rows', 1)} UNION ALL ${outcomes('old_rows', -1)}`)}
        ELSE ${upsert(outcomes('old_rows', -1))}
        END IF;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER emails_outcome_days_insert AFTER INSERT ON emails
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION emails_outcome_days()`);
    await queryRunner.query(`
      CREATE TRIGGER emails_outcome_days_update AFTER UPDATE ON emails
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION emails_outcome_days()`);
    await queryRunner.query(`
      CREATE TRIGGER emails_outcome_days_delete AFTER DELETE ON emails
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION emails_outcome_days()`);

    await queryRunner.query(`CREATE OR REPLACE FUNCTION compact_counters() RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        IF NOT pg_try_advisory_xact_lock(hashtext('mailwright:counters:compact')) THEN RETURN; END IF;
        ${COMPACT_STATUS_AND_WORKFLOWS}
        WITH gone AS (
          DELETE FROM email_outcome_days k
           USING (SELECT project_id, day, slot FROM email_outcome_days c
                   WHERE slot <> 0 AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = c.slot)
                     FOR UPDATE SKIP LOCKED) l
           WHERE (k.project_id, k.day, k.slot) = (l.project_id, l.day, l.slot)
          RETURNING k.*)
        INSERT INTO email_outcome_days AS k (project_id, day, slot, sent, opened, clicked, bounced, complained)
        SELECT project_id, day, 0, sum(sent), sum(opened), sum(clicked), sum(bounced), sum(complained)
          FROM gone GROUP BY project_id, day
            ON CONFLICT (project_id, day, slot) DO UPDATE
           SET sent = k.sent + EXCLUDED.sent, opened = k.opened + EXCLUDED.opened,
               clicked = k.clicked + EXCLUDED.clicked, bounced = k.bounced + EXCLUDED.bounced,
               complained = k.complained + EXCLUDED.complained;
        DELETE FROM email_outcome_days d WHERE NOT EXISTS (SELECT 1 FROM projects p WHERE p.id = d.project_id);
      END $$`);

    await queryRunner.query(`
      INSERT INTO email_outcome_days (project_id, day, slot, sent, opened, clicked, bounced, complained)
      SELECT project_id, day, 0, sum(sent), sum(opened), sum(clicked), sum(bounced), sum(complained)
        FROM (${outcomes('emails', 1)}) o
       WHERE day >= (now() AT TIME ZONE 'UTC')::date - ${BACKFILL_DAYS}
       GROUP BY project_id, day`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE OR REPLACE FUNCTION compact_counters() RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        IF NOT pg_try_advisory_xact_lock(hashtext('mailwright:counters:compact')) THEN RETURN; END IF;
        ${COMPACT_STATUS_AND_WORKFLOWS}
      END $$`);
    for (const op of ['insert', 'update', 'delete'])
      await queryRunner.query(`DROP TRIGGER emails_outcome_days_${op} ON emails`);
    await queryRunner.query(`DROP FUNCTION emails_outcome_days()`);
    await queryRunner.query(`DROP TABLE "email_outcome_days"`);
  }
}

/** compact_counters()'s body as StatusCounters defined it, kept as it was. */
const COMPACT_STATUS_AND_WORKFLOWS = `
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
        DELETE FROM workflow_counters c WHERE NOT EXISTS (SELECT 1 FROM workflows w WHERE w.id = c.workflow_id);`;
