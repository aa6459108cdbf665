import { DatabaseError } from 'pg';
import { QueryFailedError } from 'typeorm';

/** The SQLSTATEs the code base reacts to. */
export const SQLSTATE = {
  UNIQUE_VIOLATION: '23505',
  FOREIGN_KEY_VIOLATION: '23503',
  /** Postgres aborted the transaction to break a lock cycle. */
  DEADLOCK_DETECTED: '40P01',
  /** A lock_timeout expired. */
  LOCK_NOT_AVAILABLE: '55P03',
  /** A statement_timeout expired (or an operator cancelled the statement). */
  QUERY_CANCELED: '57014',
} as const;

/** The SQLSTATE of an error Postgres reported for a query run through TypeORM, or undefined. */
export function sqlState(error: unknown): string | undefined {
  if (!(error instanceof QueryFailedError)) return undefined;
  const code = (error.driverError as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * Whether Postgres cancelled a statement: its statement_timeout expired (or an operator cancelled
 * it). Through TypeORM or from a plain pg client.
 */
export function isQueryCanceled(error: unknown): boolean {
  const code = error instanceof DatabaseError ? error.code : sqlState(error);
  return code === SQLSTATE.QUERY_CANCELED;
}
