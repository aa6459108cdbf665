import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { queryRows } from '../database/query-rows';
import { IdempotencyKey } from './idempotency-key.entity';
import { IDEMPOTENCY_TTL_HOURS } from './idempotency';

export interface StoredIdempotentResponse {
  requestHash: string;
  responseStatus: number | null;
  responseBody: unknown;
}

/** The condition of an idempotency key past its lifetime, for the claim and the housekeeping alike. */
const IDEMPOTENCY_KEY_EXPIRED = `created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})`;

/**
 * The statements of Idempotency-Key (idempotency_keys). Each method runs on
 * the handle it is given: the caller's transaction, or `dataSource.manager`
 * for a statement on its own.
 */
@Injectable()
export class IdempotencyKeysRepository {
  /**
   * Claims an Idempotency-Key inside the send's transaction. Returns null when
   * this request owns the key (new, or the old one expired), or the stored
   * first request otherwise. A concurrent holder makes this INSERT wait until
   * it commits or rolls back — Postgres serialises duplicates for us.
   */
  async claimIdempotencyKey(
    manager: EntityManager,
    projectId: string,
    key: string,
    requestHash: string,
    id: string,
  ): Promise<StoredIdempotentResponse | null> {
    const claimed = await queryRows<{ id: string }>(
      manager,
      `INSERT INTO idempotency_keys AS k (id, project_id, key, request_hash, created_at)
       VALUES ($1, $2, $3, $4, now())
       ON CONFLICT (project_id, key) DO UPDATE
         SET id = EXCLUDED.id, request_hash = EXCLUDED.request_hash, response_status = NULL,
             response_body = NULL, created_at = now()
         WHERE k.${IDEMPOTENCY_KEY_EXPIRED}
       RETURNING id`,
      [id, projectId, key, requestHash],
    );
    if (claimed.length > 0) return null;
    const rows = await queryRows<StoredIdempotentResponse>(
      manager,
      `SELECT request_hash AS "requestHash", response_status AS "responseStatus", response_body AS "responseBody"
         FROM idempotency_keys WHERE project_id = $1 AND key = $2`,
      [projectId, key],
    );
    return rows[0] ?? null;
  }

  /**
   * The answered first request of a live key, read without a lock: a replay is answered from
   * it before any work. Null for an unknown, expired or still unanswered key (the claim decides).
   */
  async findAnsweredIdempotencyKey(
    manager: EntityManager,
    projectId: string,
    key: string,
  ): Promise<StoredIdempotentResponse | null> {
    const rows = await queryRows<StoredIdempotentResponse>(
      manager,
      `SELECT request_hash AS "requestHash", response_status AS "responseStatus", response_body AS "responseBody"
         FROM idempotency_keys
        WHERE project_id = $1 AND key = $2 AND response_body IS NOT NULL
          AND NOT (${IDEMPOTENCY_KEY_EXPIRED})`,
      [projectId, key],
    );
    return rows[0] ?? null;
  }

  async storeIdempotentResponse(
    manager: EntityManager,
    id: string,
    status: number,
    body: unknown,
  ): Promise<void> {
    await manager.update(
      IdempotencyKey,
      { id },
      { responseStatus: status, responseBody: body as object },
    );
  }

  /** Housekeeping: keys past their 24 hours. */
  async deleteExpiredIdempotencyKeys(manager: EntityManager): Promise<number> {
    const rows = await queryRows<{ id: string }>(
      manager,
      `DELETE FROM idempotency_keys WHERE ${IDEMPOTENCY_KEY_EXPIRED} RETURNING id`,
    );
    return rows.length;
  }
}
