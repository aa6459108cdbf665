import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { REDIS } from '../../queue/redis.module';
import { BudgetKey, RateLimitService } from '../rate-limit/rate-limit.service';
import { ApiKeyType } from './api-key.crypto';
import type { AuthenticatedKey } from './authenticated-key';

/** How long a resolved key may be reused without going back to Postgres. */
const TTL_MS = 30_000;
const MAX_ENTRIES = 10_000;

interface Entry {
  auth: AuthenticatedKey;
  epoch: string;
  expiresAt: number;
}

/**
 * Per-process cache of resolved API keys, so the hot path does not query
 * Postgres for the key on every request. Correctness comes from an "auth
 * epoch" in Redis: every revoke, disable, enable or rename (from any API
 * process or the CLI) sets it to a new unique value (a Redis that lost it
 * starts a new unique one too: values never repeat), and a cached entry is used only while the
 * epoch it was read under is still current. The guard reads the epoch in the
 * same Redis round trip as the rate-limit counters (RateLimitService.gate),
 * so a revoked key is refused on the very next request, everywhere. Unknown
 * keys are never cached; when Redis cannot answer, nothing is cached.
 */
@Injectable()
export class ApiKeyCache {
  private readonly logger = new Logger(ApiKeyCache.name);
  private readonly entries = new Map<string, Entry>();
  private readonly epochKey: string;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.epochKey = RateLimitService.epochKey(config);
  }

  get(hashHex: string, epoch: string | null): AuthenticatedKey | null {
    if (epoch === null) return null;
    const entry = this.entries.get(hashHex);
    if (!entry) return null;
    if (entry.epoch !== epoch || entry.expiresAt < Date.now()) {
      this.entries.delete(hashHex);
      return null;
    }
    return entry.auth;
  }

  /** Without epoch check: only for facts that never change (a key's project and type). */
  budgetOf(hashHex: string): BudgetKey | null {
    const auth = this.entries.get(hashHex)?.auth;
    return auth
      ? { projectId: auth.project.id, publicKey: auth.keyType === ApiKeyType.PUBLIC }
      : null;
  }

  set(hashHex: string, auth: AuthenticatedKey, epoch: string | null): void {
    if (epoch === null) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(hashHex, { auth, epoch, expiresAt: Date.now() + TTL_MS });
  }

  /** Called after any change that can make a cached key wrong. */
  async invalidate(): Promise<void> {
    this.entries.clear();
    try {
      // A new value, not a counter: after Redis restarts empty a counter would count the same
      // values again, and an entry cached under one of them would be trusted again.
      await this.redis.set(
        this.epochKey,
        `${Date.now().toString(36)}.${randomBytes(8).toString('hex')}`,
      );
    } catch (error) {
      // Entries elsewhere then expire by TTL at the latest.
      this.logger.warn({ err: error }, 'could not bump the auth epoch in Redis');
    }
  }
}
