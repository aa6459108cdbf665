import { Inject, Injectable, Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { REDIS } from '../../queue/redis.module';
import { redisKey } from '../../queue/redis-keys';

/** Whose request budget a request spends: public keys have their own, so browser traffic cannot starve the server's calls. */
export interface BudgetKey {
  projectId: string;
  publicKey: boolean;
}

export interface RateLimitState {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

/** What the guard learns from Redis in one round trip before it decides. */
export interface AuthGate {
  /** The client IP is over its failed-authentication budget. */
  ipBlocked: RateLimitState | null;
  /** The auth epoch (see ApiKeyCache); null when Redis could not answer. */
  epoch: string | null;
  /** The project's budget, charged when the project was already known; null otherwise. */
  budget: RateLimitState | null;
}

const WINDOW_MS = 60_000;
/** Wrong operator tokens (ADMIN_TOKEN, METRICS_TOKEN) an address may send a minute. */
export const TOKEN_GUESSES_PER_MINUTE = 10;

/**
 * KEYS: ip-failures, auth-epoch[, project-counter]. ARGV: window ms.
 * Fixed one-minute windows: INCR, and the expiry set by the first hit.
 */
const GATE_SCRIPT = `
local fails = tonumber(redis.call('GET', KEYS[1]) or '0')
local failsTtl = redis.call('PTTL', KEYS[1])
local epoch = redis.call('GET', KEYS[2])
if not epoch then
  -- A Redis that lost the epoch (restarted empty) starts a new one never used before, so no entry
  -- cached under an earlier epoch can match it again.
  local now = redis.call('TIME')
  epoch = 'r' .. now[1] .. '.' .. now[2]
  redis.call('SET', KEYS[2], epoch, 'NX')
  epoch = redis.call('GET', KEYS[2])
end
if #KEYS < 3 then return {fails, failsTtl, epoch} end
local count = redis.call('INCR', KEYS[3])
if count == 1 then redis.call('PEXPIRE', KEYS[3], ARGV[1]) end
return {fails, failsTtl, epoch, count, redis.call('PTTL', KEYS[3])}
`;

const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {count, redis.call('PTTL', KEYS[1])}
`;

type GateReply = [number, number, string, number?, number?];
type HitReply = [number, number];

interface RateLimitCommands {
  mwAuthGate(...args: (string | number)[]): Promise<GateReply>;
  mwHit(...args: (string | number)[]): Promise<HitReply>;
}

/**
 * Per-project request budgets and per-IP failed-authentication budgets,
 * counted in Redis so every API process shares them. The guard's reads (the
 * IP's failures, the auth epoch, and the project's counter when the project is
 * already known) are one Lua script, one round trip per request; a
 * general-purpose limiter library cost three commands and a sixth of the
 * API's CPU here. When Redis cannot answer the request is let through and the
 * failure logged: a rate limiter must not take the API down with it.
 */
@Injectable()
export class RateLimitService {
  private readonly logger = new Logger(RateLimitService.name);
  private readonly redis: Redis & RateLimitCommands;
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(REDIS) redis: Redis,
  ) {
    if (!('mwAuthGate' in redis)) {
      redis.defineCommand('mwAuthGate', { lua: GATE_SCRIPT });
      redis.defineCommand('mwHit', { lua: HIT_SCRIPT, numberOfKeys: 1 });
    }
    this.redis = redis as Redis & RateLimitCommands;
  }

  /**
   * The auth epoch key, shared with ApiKeyCache which bumps it. The gate script reads it with
   * the counters, so on a cluster it carries their hash tag.
   */
  static epochKey(config: Pick<AppConfig, 'queuePrefix' | 'redis'>): string {
    return redisKey(config, 'rl', 'auth:epoch');
  }

  async gate(ip: string, known: BudgetKey | null): Promise<AuthGate> {
    const keys = [this.ipKey(ip), RateLimitService.epochKey(this.config)];
    if (known) keys.push(this.budgetKey(known));
    try {
      const [fails, failsTtl, epoch, count, ttl] = await this.redis.mwAuthGate(
        keys.length,
        ...keys,
        WINDOW_MS,
      );
      const failLimit = this.config.authFailureLimitPerMinute;
      return {
        ipBlocked: fails > failLimit ? state(false, failLimit, fails, failsTtl) : null,
        epoch: String(epoch),
        budget:
          count === undefined || !known ? null : this.budgetState(known, count, ttl ?? WINDOW_MS),
      };
    } catch (error) {
      this.logger.warn({ err: error }, 'rate limiter unavailable; request let through');
      return { ipBlocked: null, epoch: null, budget: null };
    }
  }

  async consumeProject(budget: BudgetKey): Promise<RateLimitState> {
    try {
      const [count, ttl] = await this.redis.mwHit(this.budgetKey(budget), WINDOW_MS);
      return this.budgetState(budget, count, ttl);
    } catch (error) {
      this.logger.warn({ err: error }, 'rate limiter unavailable; request let through');
      const limit = this.limitOf(budget);
      return { allowed: true, limit, remaining: limit, resetSeconds: WINDOW_MS / 1000 };
    }
  }

  async recordAuthFailure(ip: string): Promise<void> {
    try {
      await this.redis.mwHit(this.ipKey(ip), WINDOW_MS);
    } catch (error) {
      this.logger.warn({ err: error }, 'auth failure limiter unavailable');
    }
  }

  /**
   * Whether an address is over its budget of wrong operator tokens. Unlike API keys (random, 256
   * bits), operator tokens are chosen by people, so past the budget even the right token waits:
   * otherwise the limit would not slow a guesser down.
   */
  async tokenGuessesOver(ip: string): Promise<RateLimitState | null> {
    try {
      const used = Number((await this.redis.get(this.tokenKey(ip))) ?? 0);
      if (used < TOKEN_GUESSES_PER_MINUTE) return null;
      return state(false, TOKEN_GUESSES_PER_MINUTE, used, await this.redis.pttl(this.tokenKey(ip)));
    } catch (error) {
      this.logger.warn({ err: error }, 'token guess limiter unavailable; request let through');
      return null;
    }
  }

  async recordTokenGuess(ip: string): Promise<void> {
    try {
      await this.redis.mwHit(this.tokenKey(ip), WINDOW_MS);
    } catch (error) {
      this.logger.warn({ err: error }, 'token guess limiter unavailable');
    }
  }

  private tokenKey(ip: string): string {
    return redisKey(this.config, 'rl', `rl:tokenfail:${ip}`);
  }

  private budgetState(budget: BudgetKey, count: number, ttl: number): RateLimitState {
    const limit = this.limitOf(budget);
    return state(count <= limit, limit, count, ttl);
  }

  private limitOf(budget: BudgetKey): number {
    return budget.publicKey
      ? this.config.publicRateLimitPerMinute
      : this.config.apiRateLimitPerMinute;
  }

  private budgetKey(budget: BudgetKey): string {
    return redisKey(
      this.config,
      'rl',
      `rl:${budget.publicKey ? 'public' : 'project'}:${budget.projectId}`,
    );
  }

  private ipKey(ip: string): string {
    return redisKey(this.config, 'rl', `rl:authfail:${ip}`);
  }
}

function state(allowed: boolean, limit: number, used: number, ttlMs: number): RateLimitState {
  return {
    allowed,
    limit,
    remaining: Math.max(0, limit - used),
    resetSeconds: Math.max(1, Math.ceil((ttlMs > 0 ? ttlMs : WINDOW_MS) / 1000)),
  };
}
