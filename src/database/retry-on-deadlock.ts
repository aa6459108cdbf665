import { QueryFailedError } from 'typeorm';

/** SQLSTATE deadlock_detected: Postgres aborted this transaction to break a lock cycle. */
export const DEADLOCK_DETECTED = '40P01';

export function isDeadlock(error: unknown): boolean {
  return (
    error instanceof QueryFailedError &&
    (error.driverError as { code?: unknown } | undefined)?.code === DEADLOCK_DETECTED
  );
}

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
      if (attempt >= attempts || !isDeadlock(error)) throw error;
    }
  }
}
