import { Inject, Injectable, Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { REDIS } from '../../queue/redis.module';
import { redisKey } from '../../queue/redis-keys';
import { FairSemaphore } from '../concurrency/fair-semaphore';
import { ApiException } from '../errors/api-exception';

/** Expensive requests running at once in one process, and per project. */
const SLOTS = 2;
const SLOTS_PER_PROJECT = 1;

/**
 * KEYS: the project's bucket. ARGV: capacity ms, refill per ms, charge ms (0: only check).
 * A token bucket of milliseconds of work, refilled by Redis's clock so every process agrees. It
 * may go below zero: work is charged after it ran, and a project then waits until it is repaid.
 * Returns {balance after refill and charge, ms until it is positive again}.
 */
const BUCKET_SCRIPT = `
local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[1], 'balance', 'at')
local balance = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or nowMs
balance = math.min(capacity, balance + math.max(0, nowMs - at) * rate)
balance = balance - tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'balance', tostring(balance), 'at', tostring(nowMs))
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / rate) + 1000)
local wait = 0
if balance <= 0 then wait = math.ceil((1 - balance) / rate) end
return {tostring(balance), wait}
`;

interface BucketCommands {
  mwWorkBucket(
    key: string,
    capacity: number,
    rate: number,
    charge: number,
  ): Promise<[string, number]>;
}

/**
 * Work whose cost grows with a project's data rather than with the request (a segment condition
 * evaluated over every contact): one such request per project at a time in a process, two in all,
 * and a per-project budget of its time shared by every process (Redis). Slow renders asked for by
 * API requests are charged to the same budget (spend(), from the render pool), so a project's
 * budget bounds all its expensive work together; once a project's renders were slow they also
 * take its turn (inTurn()), so its renders and evaluations do not run side by side. A project
 * that spent its budget is answered 429 RATE_LIMIT_EXCEEDED with Retry-After until it is repaid,
 * so one tenant's heavy queries cannot keep the database's cores from the others. Redis being down lets work
 * through: the statement timeout still bounds each query.
 */
@Injectable()
export class ExpensiveWork {
  private readonly logger = new Logger(ExpensiveWork.name);
  private readonly slots = new FairSemaphore(SLOTS, SLOTS_PER_PROJECT);
  private readonly redis: Redis & BucketCommands;
  private readonly config: AppConfig;
  /** A project's budget: a burst of `budgetMs`, refilled at `budgetMs` a minute. */
  private readonly budgetMs: number;

  constructor(@Inject(APP_CONFIG) config: AppConfig, @Inject(REDIS) redis: Redis) {
    this.budgetMs = config.expensiveWorkBudgetMs;
    if (!('mwWorkBucket' in redis))
      redis.defineCommand('mwWorkBucket', { lua: BUCKET_SCRIPT, numberOfKeys: 1 });
    this.redis = redis as Redis & BucketCommands;
    this.config = config;
  }

  /** Runs `work` in the project's turn, charged to its budget; 429 when the budget is spent. */
  run<T>(projectId: string, work: () => Promise<T>): Promise<T> {
    return this.measured(projectId, true, work);
  }

  /**
   * 429 now when the project's budget is spent: a refused request then costs no validation or
   * compilation either (run() checks again in the project's turn).
   */
  async assertBudget(projectId: string): Promise<void> {
    const wait = await this.bucket(projectId, 0);
    if (wait > 0) throw overBudget(wait, this.budgetMs);
  }

  /**
   * Charges `ms` of work already done outside run() (a render thread's time, which the render
   * pool measures and bounds itself), never refused: the next assertBudget or run() sees it.
   */
  async spend(projectId: string, ms: number): Promise<void> {
    if (ms > 0) await this.bucket(projectId, Math.ceil(ms));
  }

  /**
   * Runs `work` in the project's turn (the slot its segment evaluations take), refused with 429
   * when its budget is spent by then, but not charged: the render pool measures and charges the
   * thread time of a project's slow renders itself (spend()), and runs them here so that a project
   * renders slowly and evaluates segments one thing at a time, never on two cores at once.
   */
  inTurn<T>(projectId: string, work: () => Promise<T>): Promise<T> {
    return this.slots.run(projectId, async () => {
      const wait = await this.bucket(projectId, 0);
      if (wait > 0) throw overBudget(wait, this.budgetMs);
      return work();
    });
  }

  /**
   * The same turn and charge, never refused: for work that completes a change already made (the
   * count of a segment just saved), where a 429 would report a failure that did not happen.
   */
  charge<T>(projectId: string, work: () => Promise<T>): Promise<T> {
    return this.measured(projectId, false, work);
  }

  private measured<T>(projectId: string, refusable: boolean, work: () => Promise<T>): Promise<T> {
    return this.slots.run(projectId, async () => {
      if (refusable) {
        const wait = await this.bucket(projectId, 0);
        if (wait > 0) throw overBudget(wait, this.budgetMs);
      }
      const started = performance.now();
      try {
        return await work();
      } finally {
        await this.bucket(projectId, Math.ceil(performance.now() - started));
      }
    });
  }

  /** Ms until the project's budget is positive again after charging `ms` (0: it is). */
  private async bucket(projectId: string, ms: number): Promise<number> {
    try {
      const [, wait] = await this.redis.mwWorkBucket(
        redisKey(this.config, 'rl', `work-budget:${projectId}`),
        this.budgetMs,
        this.budgetMs / 60_000,
        ms,
      );
      return Number(wait);
    } catch (error) {
      this.logger.warn({ err: error }, 'expensive-work budget unavailable; work let through');
      return 0;
    }
  }
}

function overBudget(waitMs: number, budgetMs: number): ApiException {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new ApiException(
    429,
    'RATE_LIMIT_EXCEEDED',
    `This project used its budget of expensive work (segment evaluation and slow template rendering, ${budgetMs / 1000} s a minute)`,
    {
      headers: { 'Retry-After': String(seconds) },
      suggestion: `Retry in ${seconds} s; narrower segment conditions (fewer event rules, no OR of many rules) and simpler templates (no large loops or ranges) cost less.`,
    },
  );
}
