import type { DataSource, QueryRunner } from 'typeorm';
import { pollUntil } from './poll';

/** A transaction of the test's own that holds row locks on contacts until it commits or rolls back. */
export interface HeldLocks {
  /** Locks more contacts in the same transaction (waits if someone else holds them). */
  lock(emails: string[]): Promise<void>;
  /** Any statement in the same transaction. */
  query(sql: string, params?: unknown[]): Promise<unknown>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

export async function holdContactLocks(
  dataSource: DataSource,
  projectId: string,
  emails: string[],
): Promise<HeldLocks> {
  const runner: QueryRunner = dataSource.createQueryRunner();
  await runner.connect();
  await runner.startTransaction();
  const lock = async (more: string[]) => {
    const rows = await runner.query(
      `SELECT id FROM contacts WHERE project_id = $1 AND email = ANY($2) ORDER BY email COLLATE "C" FOR UPDATE`,
      [projectId, more],
    );
    if (rows.length !== more.length)
      throw new Error(`expected ${more.length} contacts to lock, found ${rows.length}`);
  };
  const end = async (how: 'commit' | 'rollback') => {
    try {
      if (runner.isTransactionActive) {
        if (how === 'commit') await runner.commitTransaction();
        else await runner.rollbackTransaction();
      }
    } finally {
      if (!runner.isReleased) await runner.release();
    }
  };
  try {
    await lock(emails);
  } catch (error) {
    await end('rollback');
    throw error;
  }
  return {
    lock,
    query: (sql, params) => runner.query(sql, params),
    commit: () => end('commit'),
    rollback: () => end('rollback'),
  };
}

/** Waits (up to 10 s) until at least `count` sessions of this database wait for a lock; answers how many do. */
export async function lockWaiters(dataSource: DataSource, count = 1): Promise<number> {
  return pollUntil(
    async () => {
      const [{ n }] = await dataSource.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      return n as number;
    },
    (n) => n >= count,
    10_000,
    10,
  );
}
