import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { queryRows } from '../../database/query-rows';
import type { ApiKeyType } from './api-key.crypto';

export interface LiveSessionRow {
  id: string;
  expiresAt: Date;
  keyId: string;
  type: ApiKeyType;
  projectId: string;
  projectName: string;
  enabled: boolean;
}

/**
 * Every statement on `dashboard_sessions` (the table's entity is in session/). It lives in
 * common/ because the per-request guard resolves sessions and may import no feature folder, as
 * ApiKeyLookupRepository does for keys. Plain SQL: the lookup runs on every cookie request.
 */
@Injectable()
export class DashboardSessionsRepository {
  async insert(
    manager: EntityManager,
    row: { id: string; tokenHash: Buffer; apiKeyId: string; idleSeconds: number },
  ): Promise<Date> {
    const rows = await queryRows<{ expiresAt: Date }>(
      manager,
      `INSERT INTO dashboard_sessions (id, token_hash, api_key_id, expires_at)
       VALUES ($1, $2, $3, now() + make_interval(secs => $4))
       RETURNING expires_at AS "expiresAt"`,
      [row.id, row.tokenHash, row.apiKeyId, row.idleSeconds],
    );
    return rows[0].expiresAt;
  }

  /**
   * A live session by its hash, with its key and project, sliding its expiry in the same round
   * trip. A revoked key has no live session. The expiry is written at most once a minute per
   * session, so a busy page does not rewrite the row on every call.
   */
  async findLiveAndTouch(
    manager: EntityManager,
    tokenHash: Buffer,
    idleSeconds: number,
  ): Promise<LiveSessionRow | null> {
    const rows = await queryRows<LiveSessionRow>(
      manager,
      `WITH live AS (
         SELECT s.id, s.expires_at, k.id AS key_id, k.type, p.id AS project_id, p.name AS project_name, p.enabled
         FROM dashboard_sessions s
         JOIN api_keys k ON k.id = s.api_key_id AND k.revoked_at IS NULL
         JOIN projects p ON p.id = k.project_id
         WHERE s.token_hash = $1 AND s.expires_at > now()
       ), touched AS (
         UPDATE dashboard_sessions s SET expires_at = now() + make_interval(secs => $2)
         FROM live WHERE s.id = live.id AND live.expires_at < now() + make_interval(secs => $2 - 60)
         RETURNING s.expires_at
       )
       SELECT id, COALESCE((SELECT expires_at FROM touched), expires_at) AS "expiresAt",
              key_id AS "keyId", type, project_id AS "projectId", project_name AS "projectName", enabled
       FROM live`,
      [tokenHash, idleSeconds],
    );
    return rows[0] ?? null;
  }

  async delete(manager: EntityManager, id: string): Promise<void> {
    await queryRows(manager, `DELETE FROM dashboard_sessions WHERE id = $1`, [id]);
  }

  /** Drops a bounded number of sessions that have ended (idle, or their key revoked and then idle). */
  async deleteExpired(manager: EntityManager, limit: number): Promise<void> {
    await queryRows(
      manager,
      `DELETE FROM dashboard_sessions WHERE id IN (
         SELECT id FROM dashboard_sessions WHERE expires_at < now() LIMIT $1)`,
      [limit],
    );
  }
}
