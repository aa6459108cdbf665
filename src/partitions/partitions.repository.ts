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
 * lock on the parent (and on contacts, for the foreign key), and a request
 * queued behind a waiting DDL statement would wait as long. Past it the run
 * fails and the next one tries again, months ahead of need.
 */
const LOCK_TIMEOUT = '2s';

/**
 * Longest wait of DETACH ... CONCURRENTLY for the transactions that may
 * still use the month: it blocks no reads or writes meanwhile (only other
 * DDL and VACUUM of the table), and an interrupted one is finished by the
 * next run (FINALIZE).
 */
const DETACH_LOCK_TIMEOUT = '1min';

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
   * Detaches a month without blocking anyone's reads or writes: DETACH
   * PARTITION CONCURRENTLY takes SHARE UPDATE EXCLUSIVE only, then waits
   * for the transactions that may still use the month. Must run outside a
   * transaction block; `finalize` completes one an interruption left
   * pending. A DEFAULT partition would make PostgreSQL refuse it; there is
   * none (rows past the last month are refused instead).
   */
  async detach(
    runner: QueryRunner,
    table: PartitionedTable,
    partition: string,
    finalize = false,
  ): Promise<void> {
    await runner.query(
      `ALTER TABLE ${quoted(table)} DETACH PARTITION ${quoted(partition)} ${finalize ? 'FINALIZE' : 'CONCURRENTLY'}`,
    );
  }

  /**
   * Drops a month once detached (detach first), in the caller's transaction
   * (after lockMaintenance). Deleting rows would fire the counters'
   * triggers; dropping does not, so campaign counters and the status gauges
   * keep counting the emails that went. Two things that must follow the rows
   * are done first: events leave event_name_stats (GET /events' total and
   * /events/names count stored events), and emails unlink their bounce
   * reports (as a delete does). Detached, the table is no one else's: the
   * bookkeeping blocks nobody, and DROP TABLE locks the parent no more.
   */
  async dropDetached(
    manager: EntityManager,
    table: PartitionedTable,
    partition: string,
  ): Promise<void> {
    const name = quoted(partition);
    // Counting a month of events takes longer than a lock should: no lock timeout for the reads.
    await queryRows(manager, `SELECT set_config('statement_timeout', '0', true)`);
    if (table === 'events') {
      await queryRows(
        manager,
        `UPDATE event_name_stats s SET count = s.count - g.n
           FROM (SELECT project_id, name, count(*) AS n FROM ${name} GROUP BY 1, 2) g
          WHERE s.project_id = g.project_id AND s.name = g.name
            AND s.shard = (SELECT min(m.shard) FROM event_name_stats m
                            WHERE m.project_id = g.project_id AND m.name = g.name)`,
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
