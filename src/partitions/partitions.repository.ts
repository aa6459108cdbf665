import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
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
   * Drops one partition, in the caller's transaction (after lockMaintenance).
   * Deleting rows would fire the counters' triggers; dropping does not, so
   * campaign counters and the status gauges keep counting the emails that
   * went. Two things that must follow the rows are done first: events leave
   * event_name_stats (GET /events' total and /events/names count stored
   * events), and emails unlink their bounce reports (as a delete does). The
   * partition is locked against writes meanwhile (SHARE: a contact deletion
   * that reaches it waits), which leaves the rest of the table alone.
   */
  async drop(manager: EntityManager, table: PartitionedTable, partition: string): Promise<void> {
    const name = quoted(partition);
    await queryRows(manager, `LOCK TABLE ${name} IN SHARE MODE`);
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
