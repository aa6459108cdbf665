import type { EntityManager } from 'typeorm';

/**
 * Runs `run` in the manager's transaction, or in a new one when the manager
 * has none (`dataSource.manager`). For statements that need SET LOCAL, which
 * outside a transaction is ignored with a warning.
 */
export function inTransaction<T>(
  manager: EntityManager,
  run: (manager: EntityManager) => Promise<T>,
): Promise<T> {
  return manager.queryRunner?.isTransactionActive ? run(manager) : manager.transaction(run);
}
