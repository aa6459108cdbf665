import { Injectable } from '@nestjs/common';
import type { EntityManager, QueryRunner } from 'typeorm';
import { queryRows } from '../database/query-rows';

/** The tables partitioned by month of created_at. */
export type PartitionedTable = 'events' | 'emails';

export interface PartitionRange {
  name: string;
  /** null for the legacy partition (the table as it was before partitioning): FROM (MINVALUE). */
  lower: Date | null;
  upper: Date;
}

/** Serialises the maintenance of every process: two runs would create the same month twice. */
const MAINTENANCE_LOCK = 727_002;

/**
 * Longest wait for a lock: creating or dropping a partition needs a moment's
 * lock on the parent, and a request
 * queued behind a waiting DDL statement would wait as long. Past it the run
 * fails and the next one tries again, months ahead of need.
 */
const LOCK_TIMEOUT = '2s';

/** The lock timeout of the maintenance's session (lockMaintenanceSession), between its steps. */
const DETACH_LOCK_TIMEOUT = '1min';

/**
 * Each attempt of DETACH ... CONCURRENTLY (or FINALIZE), and of dropping a
 * foreign key a month detached before the migration ContactReferencesByTrigger
 * still has (which locks contacts or email_contents against their writers),
 * waits at most this long for any lock, so that no request queues behind it
 * for longer, and another follows after a pause, for DETACH_ATTEMPTS_MS.
 */
const REFERENCED_LOCK_TIMEOUT = '50ms';
const RETRY_PAUSE_MS = 200;
const FOREIGN_KEY_NOWAIT_MS = 10_000;
const NOWAIT_PAUSE_MS = 20;
const DETACH_ATTEMPTS_MS = 60_000;

const LOCK_NOT_AVAILABLE = '55P03';

function isLockTimeout(error: unknown): boolean {
  return (error as { code?: string }).code === LOCK_NOT_AVAILABLE;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The UTC months a partition held, as event_name_stats.month bounds: its
 * own month for `<table>_pYYYYMM`; for the legacy one (FROM MINVALUE) every
 * month before the oldest partition still attached, which starts at its bound.
 */
function monthsOf(partition: string): { from: string; to: string | null } {
  const match = /_p(\d{4})(\d{2})$/.exec(partition);
  if (!match) return { from: '-infinity', to: null };
  const [year, month] = [Number(match[1]), Number(match[2])];
  const day = (y: number, m: number) => new Date(Date.UTC(y, m - 1, 1)).toISOString().slice(0, 10);
  return { from: day(year, month), to: day(year, month + 1) };
}

function quoted(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Every statement on the partitions of `events` and `emails`. The partition
 * rules themselves are SQL functions of the migration that partitioned the
 * tables (mw_partitions, mw_ensure_partitions), which it ran too.
 */
@Injectable()
export class PartitionsRepository {
  /** Takes the maintenance lock and the lock timeout for the caller's transaction. */
  async lockMaintenance(manager: EntityManager): Promise<void> {
    await queryRows(manager, `SELECT pg_advisory_xact_lock($1)`, [MAINTENANCE_LOCK]);
    await queryRows(manager, `SELECT set_config('lock_timeout', $1, true)`, [LOCK_TIMEOUT]);
  }

  /** Creates the missing monthly partitions up to `monthsAhead` months after this one; answers their names. */
  async ensure(
    manager: EntityManager,
    table: PartitionedTable,
    monthsAhead: number,
  ): Promise<string[]> {
    const rows = await queryRows<{ name: string }>(
      manager,
      `SELECT mw_ensure_partitions($1::regclass, $2) AS name`,
      [table, monthsAhead],
    );
    return rows.map((row) => row.name);
  }

  /** The table's partitions, oldest first. */
  async partitions(manager: EntityManager, table: PartitionedTable): Promise<PartitionRange[]> {
    return queryRows<PartitionRange>(
      manager,
      `SELECT name, NULLIF(lower, '-infinity') AS lower, upper FROM mw_partitions($1::regclass)`,
      [table],
    );
  }

  /**
   * Statistics of the table as a whole (ANALYZE samples every partition too):
   * autovacuum analyzes partitions but never a partitioned parent, whose
   * statistics the planner uses for joins over the whole table.
   */
  async analyze(manager: EntityManager, table: PartitionedTable): Promise<void> {
    await queryRows(manager, `ANALYZE ${quoted(table)}`);
  }

  /**
   * Takes the maintenance lock for the runner's session, for the steps that
   * cannot run in a transaction block (DETACH ... CONCURRENTLY): release it
   * with unlockMaintenance before the runner goes back to the pool.
   */
  async lockMaintenanceSession(runner: QueryRunner): Promise<void> {
    await runner.query(`SELECT pg_advisory_lock($1)`, [MAINTENANCE_LOCK]);
    await runner.query(`SELECT set_config('lock_timeout', $1, false)`, [DETACH_LOCK_TIMEOUT]);
  }

  async unlockMaintenanceSession(runner: QueryRunner): Promise<void> {
    await runner.query(`RESET lock_timeout`);
    await runner.query(`SELECT pg_advisory_unlock($1)`, [MAINTENANCE_LOCK]);
  }

  /**
   * The table's partitions an interrupted DETACH ... CONCURRENTLY left
   * "detach pending" (still attached, no longer seen by new queries).
   */
  async detachPending(manager: EntityManager, table: PartitionedTable): Promise<string[]> {
    const rows = await queryRows<{ name: string }>(
      manager,
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = $1::regclass AND i.inhdetachpending ORDER BY 1`,
      [table],
    );
    return rows.map((row) => row.name);
  }

  /**
   * The table's months that were detached but not dropped (the run failed
   * between the two): plain tables named as its partitions are, no longer
   * attached. Their bookkeeping has not been done (it commits with the drop).
   */
  async detachedLeftovers(manager: EntityManager, table: PartitionedTable): Promise<string[]> {
    const rows = await queryRows<{ name: string }>(
      manager,
      `SELECT c.relname AS name FROM pg_class c
        WHERE c.relkind = 'r' AND NOT c.relispartition AND c.relnamespace = current_schema()::regnamespace
          AND c.relname ~ ('^' || $1 || '_(legacy|p[0-9]{6})$') ORDER BY 1`,
      [table],
    );
    return rows.map((row) => row.name);
  }

  /**
   * Whether an emails partition still holds emails on their way (QUEUED or
   * SENDING): dropping them would leave them in the status gauges and their
   * campaign's counters for good. One probe of the month's (project_id,
   * status) index per project, so a month of millions of sent emails costs no scan.
   */
  async hasOpenEmails(manager: EntityManager, partition: string): Promise<boolean> {
    const [row] = await queryRows<{ open: boolean }>(
      manager,
      // LATERAL ... LIMIT 1: a probe per project, never a hash join over the month.
      `SELECT EXISTS (
         SELECT 1 FROM projects p CROSS JOIN LATERAL (
           SELECT 1 FROM ${quoted(partition)} e
            WHERE e.project_id = p.id AND e.status IN ('QUEUED', 'SENDING') LIMIT 1) open) AS open`,
    );
    return row.open;
  }

  /**
   * Detaches a month without blocking reads or writes of the table: DETACH
   * PARTITION CONCURRENTLY takes SHARE UPDATE EXCLUSIVE only, then waits
   * for the transactions that may still use the month. The tables have no
   * foreign keys (triggers check the references), so no other table is
   * locked. Each attempt waits REFERENCED_LOCK_TIMEOUT at most for any lock,
   * so no request queues behind it for longer; a timed-out second step
   * leaves the month "detach pending" (no new query sees it), which
   * FINALIZE completes on the next attempt. Must run outside a transaction
   * block; also finishes a detach an interrupted run left pending. A
   * DEFAULT partition would make PostgreSQL refuse it; there is none (rows
   * past the last month are refused instead).
   */
  async detach(runner: QueryRunner, table: PartitionedTable, partition: string): Promise<void> {
    const deadline = Date.now() + DETACH_ATTEMPTS_MS;
    await runner.query(`SELECT set_config('lock_timeout', $1, false)`, [REFERENCED_LOCK_TIMEOUT]);
    try {
      for (;;) {
        const [state] = (await runner.query(
          `SELECT i.inhdetachpending AS pending FROM pg_inherits i
            WHERE i.inhparent = $1::regclass AND i.inhrelid = to_regclass($2)`,
          [table, quoted(partition)],
        )) as Array<{ pending: boolean }>;
        if (!state) return;
        try {
          await runner.query(
            `ALTER TABLE ${quoted(table)} DETACH PARTITION ${quoted(partition)} ${state.pending ? 'FINALIZE' : 'CONCURRENTLY'}`,
          );
          return;
        } catch (error) {
          if (!isLockTimeout(error) || Date.now() > deadline) throw error;
          await sleep(RETRY_PAUSE_MS);
        }
      }
    } finally {
      await runner.query(`SELECT set_config('lock_timeout', $1, false)`, [DETACH_LOCK_TIMEOUT]);
    }
  }

  /**
   * Drops the foreign keys of a month detached before the migration
   * ContactReferencesByTrigger (none since), each in a transaction of its
   * own: dropping one locks the table it points at (contacts,
   * email_contents) in ACCESS EXCLUSIVE until commit, which DROP TABLE
   * would otherwise do for as long as it takes. That lock is asked for
   * NOWAIT first (FOREIGN_KEY_NOWAIT_MS: tried again every NOWAIT_PAUSE_MS
   * while anyone holds the table, so no request ever queues behind a
   * waiting request of ours), then, should the table never be free, with
   * REFERENCED_LOCK_TIMEOUT (requests queue behind it that long at most).
   */
  async dropForeignKeys(runner: QueryRunner, partition: string): Promise<void> {
    const keys = (await runner.query(
      `SELECT conname AS name, confrelid::regclass::text AS referenced FROM pg_constraint
        WHERE conrelid = $1::regclass AND contype = 'f' ORDER BY 1`,
      [quoted(partition)],
    )) as Array<{ name: string; referenced: string }>;
    for (const { name, referenced } of keys) {
      const started = Date.now();
      for (;;) {
        const nowait = Date.now() - started < FOREIGN_KEY_NOWAIT_MS;
        try {
          await runner.manager.transaction(async (manager) => {
            await queryRows(manager, `SELECT set_config('lock_timeout', $1, true)`, [
              REFERENCED_LOCK_TIMEOUT,
            ]);
            // regclass text is already quoted where the name needs it.
            await queryRows(
              manager,
              `LOCK TABLE ${referenced} IN ACCESS EXCLUSIVE MODE${nowait ? ' NOWAIT' : ''}`,
            );
            await queryRows(
              manager,
              `ALTER TABLE ${quoted(partition)} DROP CONSTRAINT IF EXISTS ${quoted(name)}`,
            );
          });
          break;
        } catch (error) {
          if (!isLockTimeout(error) || Date.now() - started > DETACH_ATTEMPTS_MS) throw error;
          await sleep(nowait ? NOWAIT_PAUSE_MS : RETRY_PAUSE_MS);
        }
      }
    }
  }

  /**
   * Drops a month once detached (detach and dropForeignKeys first), in the
   * caller's transaction (after lockMaintenance). Deleting rows would fire
   * the counters' triggers; dropping does not, so campaign counters and the
   * status gauges keep counting the emails that went. Two things that must
   * follow the rows are done first: the month's rows of event_name_stats
   * go (GET /events' total and /events/names count stored events; they are
   * kept per month, so nothing is counted), and emails unlink their bounce
   * reports (as a delete does). Detached and without foreign keys, the
   * table is no one else's: DROP TABLE locks nothing but the month itself.
   */
  async dropDetached(
    manager: EntityManager,
    table: PartitionedTable,
    partition: string,
  ): Promise<void> {
    const name = quoted(partition);
    // Unlinking a month of emails' bounce reports joins the month: no statement timeout for it.
    await queryRows(manager, `SELECT set_config('statement_timeout', '0', true)`);
    if (table === 'events') {
      const months = monthsOf(partition);
      await queryRows(
        manager,
        `DELETE FROM event_name_stats
          WHERE month >= $1::date
            AND month < COALESCE($2::date, (SELECT (min(lower) AT TIME ZONE 'UTC')::date FROM mw_partitions('events')))`,
        [months.from, months.to],
      );
    } else {
      await queryRows(
        manager,
        `UPDATE bounce_reports b SET email_id = NULL FROM ${name} e WHERE b.email_id = e.id`,
      );
    }
    await queryRows(manager, `DROP TABLE ${name}`);
  }
}
