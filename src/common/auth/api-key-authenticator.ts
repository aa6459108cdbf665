import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ApiKeyType, hashesEqual } from './api-key.crypto';
import { ApiKeyCache } from './api-key-cache';
import type { AuthenticatedKey } from './authenticated-key';

/**
 * Per-request authentication (the hot path), apart from project and key
 * administration (ProjectsService, used by the CLI and GET/PATCH /project),
 * which only bumps the cache's epoch after a change.
 */
@Injectable()
export class ApiKeyAuthenticator {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly cache: ApiKeyCache,
  ) {}

  /**
   * Resolves a bearer key, given as its hash (hashApiKey), to its project:
   * from the per-process cache while the Redis auth epoch the caller read is
   * unchanged, else one indexed query by hash (plain SQL: this runs on every
   * request). The final comparison is constant-time. Revoked keys resolve to null.
   */
  async authenticate(hash: Buffer, epoch: string | null): Promise<AuthenticatedKey | null> {
    const hashHex = hash.toString('hex');
    const cached = this.cache.get(hashHex, epoch);
    if (cached) return cached;
    const rows: {
      id: string;
      type: ApiKeyType;
      hash: Buffer;
      revokedAt: Date | null;
      projectId: string;
      projectName: string;
      enabled: boolean;
    }[] = await this.dataSource.query(
      `SELECT k.id, k.type, k.hash, k.revoked_at AS "revokedAt", p.id AS "projectId", p.name AS "projectName", p.enabled
       FROM api_keys k JOIN projects p ON p.id = k.project_id WHERE k.hash = $1`,
      [hash],
    );
    const row = rows[0];
    if (!row || row.revokedAt || !hashesEqual(row.hash, hash)) return null;
    const auth: AuthenticatedKey = {
      keyId: row.id,
      keyType: row.type,
      project: { id: row.projectId, name: row.projectName, enabled: row.enabled },
    };
    this.cache.set(hashHex, auth, epoch);
    return auth;
  }

  /**
   * The project of a key (given as its hash), if this process has seen the key before.
   * A key never changes project, so the rate-limit budget can be charged
   * while the key itself is still being checked.
   */
  knownProjectOf(hash: Buffer): string | null {
    return this.cache.projectOf(hash.toString('hex'));
  }
}
