import { Inject, Injectable, Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { REDIS } from '../../queue/redis.module';

export interface RateLimitState {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

/**
 * Fixed one-minute windows counted in Redis, so every API process shares one
 * budget per project. When Redis cannot answer the request is let through and
 * the failure logged: a rate limiter must not take the API down with it.
 */
@Injectable()
export class RateLimitService {
  private readonly logger = new Logger(RateLimitService.name);
  private readonly perProject: RateLimiterRedis;
  private readonly authFailures: RateLimiterRedis;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(REDIS) redis: Redis,
  ) {
    this.perProject = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: `${config.queuePrefix}:rl:project`,
      points: config.apiRateLimitPerMinute,
      duration: 60,
    });
    this.authFailures = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: `${config.queuePrefix}:rl:authfail`,
      points: config.authFailureLimitPerMinute,
      duration: 60,
    });
  }

  consumeProject(projectId: string): Promise<RateLimitState> {
    return this.consume(this.perProject, projectId, this.config.apiRateLimitPerMinute);
  }

  /** Is this client IP already over its budget of failed authentications? */
  async authBlocked(ip: string): Promise<RateLimitState | null> {
    try {
      const res = await this.authFailures.get(ip);
      if (res && res.consumedPoints > this.config.authFailureLimitPerMinute) {
        return this.state(res, this.config.authFailureLimitPerMinute, false);
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'auth failure limiter unavailable');
    }
    return null;
  }

  async recordAuthFailure(ip: string): Promise<void> {
    try {
      await this.authFailures.penalty(ip, 1);
    } catch (error) {
      this.logger.warn({ err: error }, 'auth failure limiter unavailable');
    }
  }

  private async consume(limiter: RateLimiterRedis, key: string, limit: number): Promise<RateLimitState> {
    try {
      return this.state(await limiter.consume(key), limit, true);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) return this.state(rejection, limit, false);
      this.logger.warn({ err: rejection }, 'rate limiter unavailable; request let through');
      return { allowed: true, limit, remaining: limit, resetSeconds: 60 };
    }
  }

  private state(res: RateLimiterRes, limit: number, allowed: boolean): RateLimitState {
    return {
      allowed,
      limit,
      remaining: Math.max(0, res.remainingPoints),
      resetSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
    };
  }
}
