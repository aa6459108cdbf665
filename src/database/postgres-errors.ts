import { QueryFailedError } from 'typeorm';

/** The SQLSTATEs the code base reacts to. */
export const SQLSTATE = {
  UNIQUE_VIOLATION: '23505',
  FOREIGN_KEY_VIOLATION: '23503',
  /** Postgres aborted the transaction to break a lock cycle. */
  DEADLOCK_DETECTED: '40P01',
  /** A lock_timeout expired. */
  LOCK_NOT_AVAILABLE: '55P03',
} as const;

/** The SQLSTATE of an error Postgres reported for a query run through TypeORM, or undefined. */
export function sqlState(error: unknown): string | undefined {
  if (!(error instanceof QueryFailedError)) return undefined;
  const code = (error.driverError as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}
