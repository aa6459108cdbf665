import { Global, Inject, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { createRedis } from './redis';

/**
 * A shared ioredis client for rate limits, idempotency keys, the auth epoch and
 * health checks. Auto-pipelining sends the commands issued in one tick (by one
 * request or many concurrent ones) in a single write.
 */
export const REDIS = Symbol('REDIS');

class RedisCloser implements OnApplicationShutdown {
  constructor(@Inject(REDIS) private readonly redis: Redis) {}
  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

@Global()
@Module({
  providers: [
    {
      provide: REDIS,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => {
        const redis = createRedis(config.redis, {
          maxRetriesPerRequest: 2,
          enableOfflineQueue: true,
          enableAutoPipelining: true,
        });
        // Without a listener ioredis prints connection errors to stderr outside the JSON logs; it reconnects by itself.
        const logger = new Logger('Redis');
        let last = 0;
        redis.on('error', (error: Error) => {
          if (Date.now() - last < 5_000) return;
          last = Date.now();
          logger.warn({ err: error }, 'Redis connection error; reconnecting');
        });
        return redis;
      },
    },
    RedisCloser,
  ],
  exports: [REDIS],
})
export class RedisModule {}
