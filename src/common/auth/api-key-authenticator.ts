import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { BudgetKey } from '../rate-limit/rate-limit.service';
import { hashesEqual } from './api-key.crypto';
import { ApiKeyCache } from './api-key-cache';
import { ApiKeyLookupRepository } from './api-key-lookup.repository';
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
    private readonly keys: ApiKeyLookupRepository,
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
    const row = await this.keys.findByHash(this.dataSource.manager, hash);
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
  knownBudgetOf(hash: Buffer): BudgetKey | null {
    return this.cache.budgetOf(hash.toString('hex'));
  }
}
