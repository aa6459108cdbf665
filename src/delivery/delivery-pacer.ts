import { Inject, Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Gauge } from 'prom-client';
import { AppMetrics, METRICS_REGISTRY } from '../common/metrics/metrics';
import {
  AppConfig,
  MIN_GROUP_RATE,
  PROVIDER_GROUPS,
  ProviderGroup,
  runsApi,
} from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { REDIS } from '../queue/redis.module';
import { currentRate, DECREASE_INTERVAL_MS, GroupPaceState } from './pacing';
import { redisKey } from '../queue/redis-keys';
import { QUEUES } from '../queue/queue.constants';

/** A slot of a group's schedule: send at `slot`; `at`, when it was reserved (ms since the epoch). */
export interface PaceReservation {
  slot: number;
  at: number;
}

/** A group's rate now and as configured, in messages per second. */
export interface GroupRate {
  group: ProviderGroup;
  current: number;
  configured: number;
}

/** How old the in-process copy of the group rates may be when deciding whether a group's pace can bind. */
const SNAPSHOT_MS = 1000;

/** A group's state is dropped after a day untouched (by then its rate has long grown back). */
const STATE_TTL_MS = 86_400_000;

/** The Lua form of pacing.ts's currentRate (same rule, applied inside the scripts). */
const CURRENT_RATE = `
local function current_rate(rate, deferred_at, configured, recovery, now)
  if rate == nil then return configured end
  local quiet = now - (deferred_at or 0)
  local grown = rate
  if quiet > recovery then grown = rate + (configured / 10) * (quiet - recovery) / recovery end
  if grown > configured then return configured end
  return grown
end
`;

/**
 * Reserves the group's next slot: max(now, next), and moves `next` one
 * interval on. A reservation made since the last decrease (ARGV[4], ARGV[5])
 * is honoured as it is: the job was handed back to wait for it.
 * KEYS[1]: the group's hash. ARGV: now, configured rate, recovery ms, held slot or "", held at.
 */
const RESERVE = `${CURRENT_RATE}
local now = tonumber(ARGV[1])
local s = redis.call('HMGET', KEYS[1], 'rate', 'decreasedAt', 'deferredAt', 'next')
local decreased_at = tonumber(s[2]) or 0
local rate = current_rate(tonumber(s[1]), tonumber(s[3]), tonumber(ARGV[2]), tonumber(ARGV[3]), now)
local held = tonumber(ARGV[4])
if held ~= nil and tonumber(ARGV[5]) >= decreased_at then
  return {tostring(held), tostring(ARGV[5])}
end
local slot = math.max(now, tonumber(s[4]) or 0)
redis.call('HSET', KEYS[1], 'next', tostring(slot + 1000 / rate))
redis.call('PEXPIRE', KEYS[1], ${STATE_TTL_MS})
return {tostring(slot), tostring(now)}
`;

/**
 * A deferral: halves the rate when it is a new congestion signal (a second
 * since the last decrease, and the message left after it), restarting the
 * schedule one new interval from now; then reserves a slot for the deferred
 * message. KEYS[1]: the group's hash. ARGV: now, configured rate, recovery ms,
 * when the deferred message was sent, the floor rate, the decrease interval.
 * Answers slot, reserved at, the rate (msgs/s), 1 if it was halved.
 */
const DEFER = `${CURRENT_RATE}
local now = tonumber(ARGV[1])
local s = redis.call('HMGET', KEYS[1], 'rate', 'decreasedAt', 'deferredAt', 'next')
local decreased_at = tonumber(s[2]) or 0
local rate = current_rate(tonumber(s[1]), tonumber(s[3]), tonumber(ARGV[2]), tonumber(ARGV[3]), now)
local next_slot = tonumber(s[4]) or 0
local halved = 0
if now - decreased_at >= tonumber(ARGV[6]) and tonumber(ARGV[4]) >= decreased_at then
  rate = math.max(tonumber(ARGV[5]), rate / 2)
  decreased_at = now
  next_slot = now + 1000 / rate
  halved = 1
end
local slot = math.max(now, next_slot)
redis.call('HSET', KEYS[1], 'rate', tostring(rate), 'decreasedAt', tostring(decreased_at),
  'deferredAt', tostring(now), 'next', tostring(slot + 1000 / rate))
redis.call('PEXPIRE', KEYS[1], ${STATE_TTL_MS})
return {tostring(slot), tostring(now), tostring(rate), halved}
`;

type PacingRedis = Redis & {
  paceReserve(key: string, ...args: string[]): Promise<[string, string]>;
  paceDefer(key: string, ...args: string[]): Promise<[string, string, string, number]>;
};

/**
 * The rate of each mailbox provider group, shared by every worker through
 * Redis: one hash per group (its rate after the last deferral, when it fell,
 * when the group last deferred, its next free slot), changed only by the
 * scripts above so concurrent workers never race. A delivery reserves its
 * group's next slot before it sends (one round trip on the shared,
 * auto-pipelined connection); a slot further away hands the job back to the
 * queue until then.
 */
@Injectable()
export class DeliveryPacer {
  private readonly redis: PacingRedis;
  private readonly prefix: string;
  private snapshot: { at: number; rates: Map<ProviderGroup, number> } | null = null;
  private refreshing: Promise<void> | null = null;

  constructor(
    @Inject(REDIS) redis: Redis,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(METRICS_REGISTRY) metrics: AppMetrics,
  ) {
    // In the delivery queue's slot on a Redis Cluster (each script touches one key anyway).
    this.prefix = redisKey(config, QUEUES.DELIVERY, 'pacing');
    // defineCommand is idempotent per name: every instance on this client shares the same scripts.
    redis.defineCommand('paceReserve', { numberOfKeys: 1, lua: RESERVE });
    redis.defineCommand('paceDefer', { numberOfKeys: 1, lua: DEFER });
    this.redis = redis as PacingRedis;
    // The rates are the same wherever they are read: API processes export them, like the queue gauges.
    if (runsApi(config)) {
      const rates = (): Promise<GroupRate[]> => this.rates();
      new Gauge({
        name: 'mailwright_delivery_group_rate',
        help: 'Current delivery rate of each mailbox provider group, messages per second (halved on deferrals, growing back after a quiet period)',
        labelNames: ['group'],
        registers: [metrics.registry],
        async collect() {
          for (const rate of await rates()) this.set({ group: rate.group }, rate.current);
        },
      });
    }
  }

  /**
   * Whether `group`'s pace can hold a message back: its rate now is below
   * EMAIL_RATE_PER_SECOND, the ceiling BullMQ already enforces. A group
   * configured at or above it and not slowed needs no slot (no round trip);
   * its rate is read from Redis at most once a second for this answer.
   */
  async binds(group: ProviderGroup, now = Date.now()): Promise<boolean> {
    const ceiling = this.config.emailRatePerSecond;
    if (this.config.deliveryGroupRates[group] < ceiling) return true;
    if (!this.snapshot || now - this.snapshot.at >= SNAPSHOT_MS) {
      this.refreshing ??= this.rates(now)
        .then((rates) => {
          this.snapshot = { at: now, rates: new Map(rates.map((r) => [r.group, r.current])) };
        })
        .finally(() => (this.refreshing = null));
      await this.refreshing;
    }
    return (this.snapshot?.rates.get(group) ?? 0) < ceiling;
  }

  /** A slot for the next message to `group`, or `held` again when it is still valid. */
  async reserve(
    group: ProviderGroup,
    held?: PaceReservation | null,
    now = Date.now(),
  ): Promise<PaceReservation> {
    const [slot, at] = await this.redis.paceReserve(
      this.keyOf(group),
      String(now),
      String(this.config.deliveryGroupRates[group]),
      String(this.config.deliveryPacingRecoveryMs),
      held ? String(held.slot) : '',
      held ? String(held.at) : '0',
    );
    return { slot: Number(slot), at: Number(at) };
  }

  /**
   * `group` deferred a message that left at `sentAt`: maybe halve its rate,
   * and reserve the slot the message is retried at.
   */
  async deferred(
    group: ProviderGroup,
    sentAt: number,
    now = Date.now(),
  ): Promise<{ reservation: PaceReservation; rate: number; halved: boolean }> {
    const [slot, at, rate, halved] = await this.redis.paceDefer(
      this.keyOf(group),
      String(now),
      String(this.config.deliveryGroupRates[group]),
      String(this.config.deliveryPacingRecoveryMs),
      String(sentAt),
      String(MIN_GROUP_RATE),
      String(DECREASE_INTERVAL_MS),
    );
    // This process sees its own decrease at once; the others within SNAPSHOT_MS.
    this.snapshot?.rates.set(group, Number(rate));
    return {
      reservation: { slot: Number(slot), at: Number(at) },
      rate: Number(rate),
      halved: halved === 1,
    };
  }

  /** Every group's rate now (one pipelined read). */
  async rates(now = Date.now()): Promise<GroupRate[]> {
    const states = await Promise.all(
      PROVIDER_GROUPS.map((group) =>
        this.redis.hmget(this.keyOf(group), 'rate', 'decreasedAt', 'deferredAt'),
      ),
    );
    return PROVIDER_GROUPS.map((group, i) => {
      const [rate, decreasedAt, deferredAt] = states[i];
      const state: GroupPaceState = {
        rate: rate === null ? null : Number(rate),
        decreasedAt: Number(decreasedAt ?? 0),
        deferredAt: Number(deferredAt ?? 0),
      };
      const configured = this.config.deliveryGroupRates[group];
      return {
        group,
        configured,
        current: currentRate(state, configured, this.config.deliveryPacingRecoveryMs, now),
      };
    });
  }

  private keyOf(group: ProviderGroup): string {
    return `${this.prefix}:${group}`;
  }
}
