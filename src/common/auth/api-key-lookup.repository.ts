import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { queryRows } from '../../database/query-rows';
import type { ApiKeyType } from './api-key.crypto';

export interface ApiKeyLookupRow {
  id: string;
  type: ApiKeyType;
  hash: Buffer;
  revokedAt: Date | null;
  projectId: string;
  projectName: string;
  enabled: boolean;
}

/**
 * The one statement authentication runs: a key by its hash, with its project.
 * It reads the tables of projects/ (whose ProjectsRepository writes them) from
 * common/, because the per-request guard may import no feature folder.
 * Plain SQL: it runs on every request whose key is not cached.
 */
@Injectable()
export class ApiKeyLookupRepository {
  async findByHash(manager: EntityManager, hash: Buffer): Promise<ApiKeyLookupRow | null> {
    const rows = await queryRows<ApiKeyLookupRow>(
      manager,
      `SELECT k.id, k.type, k.hash, k.revoked_at AS "revokedAt", p.id AS "projectId", p.name AS "projectName", p.enabled
       FROM api_keys k JOIN projects p ON p.id = k.project_id WHERE k.hash = $1`,
      [hash],
    );
    return rows[0] ?? null;
  }
}
