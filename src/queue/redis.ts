import { Redis, RedisOptions } from 'ioredis';

/** Connection options from REDIS_URL; BullMQ needs maxRetriesPerRequest null on workers. */
export function redisConnectionOptions(redisUrl: string): RedisOptions {
  const url = new URL(redisUrl);
  const db = url.pathname && url.pathname !== '/' ? Number(url.pathname.slice(1)) : 0;
  return {
    host: url.hostname,
    port: url.port ? Number(url.port) : 6379,
    username: url.username ? decodeURIComponent(url.username) : undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    db: Number.isFinite(db) ? db : 0,
    tls: url.protocol === 'rediss:' ? {} : undefined,
    maxRetriesPerRequest: null,
  };
}

export function createRedis(redisUrl: string, overrides: RedisOptions = {}): Redis {
  return new Redis({ ...redisConnectionOptions(redisUrl), ...overrides });
}
