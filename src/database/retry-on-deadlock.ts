import { sqlState, SQLSTATE } from './postgres-errors';

/**
 * Runs a whole transaction again when Postgres chose it as a deadlock's victim
 * (it was rolled back, so nothing of it stays). `work` must start its own
 * transaction and keep every effect outside the database until after commit.
 */
export async function retryOnDeadlock<T>(work: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= attempts || sqlState(error) !== SQLSTATE.DEADLOCK_DETECTED) throw error;
    }
  }
}
