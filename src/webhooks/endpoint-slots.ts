import { Inject, Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { QUEUES } from '../queue/queue.constants';
import { REDIS } from '../queue/redis.module';
import { redisKey } from '../queue/redis-keys';

/**
 * Takes up to `want` free slots of an endpoint (KEYS[1], a sorted set of
 * lease tokens scored by when they lapse): lapsed leases are dropped first,
 * so a worker that died frees its slots when their lease ends. The clock is
 * Redis's own, the same for every worker. Answers the slots taken; `want` 0
 * only counts the free ones (answered negated, as -free).
 */
const ACQUIRE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local free = tonumber(ARGV[1]) - redis.call('ZCARD', KEYS[1])
local want = tonumber(ARGV[2])
if want == 0 then return -math.max(free, 0) end
local n = math.min(free, want)
if n <= 0 then return 0 end
local expires = now + tonumber(ARGV[3])
for i = 1, n do redis.call('ZADD', KEYS[1], expires, ARGV[3 + i]) end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return n`;

interface SlotCommands {
  mwWebhookSlots(
    key: string,
    limit: number,
    want: number,
    leaseMs: number,
    ...tokens: string[]
  ): Promise<number>;
}

/**
 * The in-flight limit of each webhook endpoint across every worker process: a
 * Redis semaphore whose slots are leases (a token per attempt, lapsing after
 * `leaseMs`), so a slot held by a worker that died comes back by itself.
 */
@Injectable()
export class EndpointSlots {
  private readonly redis: Redis & SlotCommands;
  private readonly config: AppConfig;

  constructor(@Inject(APP_CONFIG) config: AppConfig, @Inject(REDIS) redis: Redis) {
    if (!('mwWebhookSlots' in redis))
      redis.defineCommand('mwWebhookSlots', { lua: ACQUIRE_SCRIPT, numberOfKeys: 1 });
    this.redis = redis as Redis & SlotCommands;
    this.config = config;
  }

  /** Up to `want` slots of the endpoint out of `limit`, each a token to release when its attempt ends. */
  async acquire(
    endpointId: string,
    limit: number,
    want: number,
    leaseMs: number,
  ): Promise<string[]> {
    if (want <= 0) return [];
    const tokens = Array.from({ length: want }, () => randomBytes(9).toString('base64url'));
    const n = await this.redis.mwWebhookSlots(
      this.key(endpointId),
      limit,
      want,
      leaseMs,
      ...tokens,
    );
    return tokens.slice(0, n);
  }

  /** How many of the endpoint's `limit` slots are free now. */
  async free(endpointId: string, limit: number, leaseMs: number): Promise<number> {
    return -(await this.redis.mwWebhookSlots(this.key(endpointId), limit, 0, leaseMs));
  }

  async release(endpointId: string, tokens: string[]): Promise<void> {
    if (tokens.length > 0) await this.redis.zrem(this.key(endpointId), ...tokens);
  }

  private key(endpointId: string): string {
    // In the webhooks queue's slot on a cluster, beside the deliveries it limits.
    return redisKey(this.config, QUEUES.WEBHOOKS, `webhooks:slots:${endpointId}`);
  }
}
