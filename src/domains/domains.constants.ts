/** Injection token of the SecretBox that seals DKIM private keys. */
export const DKIM_KEY_BOX = Symbol('DKIM_KEY_BOX');

/** Context label of that box's key derivation; changing it makes every stored key unreadable. */
export const DKIM_KEY_BOX_LABEL = 'dkim-private-key';

/** Injection token of the check schedule (see DomainCheckSchedule). */
export const DOMAIN_CHECK_SCHEDULE = Symbol('DOMAIN_CHECK_SCHEDULE');

/**
 * When domains are checked by the repeating job. The sweep runs every
 * `sweepEveryMs` and checks every PENDING domain (so that is the pending
 * interval) and each VERIFIED domain last checked `verifiedEveryMs` ago or
 * more. A PENDING domain older than `pendingWindowMs` becomes FAILED.
 */
export interface DomainCheckSchedule {
  sweepEveryMs: number;
  verifiedEveryMs: number;
  pendingWindowMs: number;
  /** Most domains one sweep checks, and how many DNS checks run at once. */
  batchSize: number;
  concurrency: number;
}

export const DEFAULT_DOMAIN_CHECK_SCHEDULE: DomainCheckSchedule = {
  sweepEveryMs: 5 * 60_000,
  verifiedEveryMs: 24 * 3600_000,
  pendingWindowMs: 72 * 3600_000,
  batchSize: 500,
  concurrency: 8,
};
