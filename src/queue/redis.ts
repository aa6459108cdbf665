import type { ConnectionOptions } from 'bullmq';
import { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import { parseRedisUrl, RedisTarget } from '../config/redis-url';

/** Connection options of a `redis://` URL; BullMQ needs maxRetriesPerRequest null on workers. */
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

/** REDIS_URL read, from a URL string or an already parsed target. */
function targetOf(redis: string | RedisTarget): RedisTarget {
  return typeof redis === 'string' ? parseRedisUrl(redis) : redis;
}

/** Options of a single server or of a Sentinel deployment (ioredis asks the sentinels for the master). */
function serverOptions(target: Exclude<RedisTarget, { kind: 'cluster' }>): RedisOptions {
  if (target.kind === 'standalone') return redisConnectionOptions(target.url);
  return {
    sentinels: target.sentinels,
    name: target.masterName,
    db: target.db,
    username: target.username,
    password: target.password,
    maxRetriesPerRequest: null,
  };
}

function clusterOf(
  target: Extract<RedisTarget, { kind: 'cluster' }>,
  overrides: RedisOptions,
): Cluster {
  const { enableAutoPipelining, enableOfflineQueue, maxRetriesPerRequest, ...nodeOverrides } =
    overrides;
  const options: ClusterOptions = {
    redisOptions: {
      username: target.username,
      password: target.password,
      maxRetriesPerRequest: maxRetriesPerRequest === undefined ? null : maxRetriesPerRequest,
      ...nodeOverrides,
    },
    // A master failover takes cluster-node-timeout (15 s by default) plus the election: commands
    // wait for the slot to move, up to about 30 s, rather than fail (a send answered 500 after
    // its row was committed would be retried by its client and sent twice).
    maxRedirections: 32,
    retryDelayOnFailover: 1_000,
    retryDelayOnClusterDown: 1_000,
    slotsRefreshTimeout: 2_000,
    clusterRetryStrategy: (times) => Math.min(100 * times, 2_000),
    // With the ready check, a connect() made while the cluster is failing over (CLUSTER INFO says
    // cluster_state:fail) reconnects on its own and its promise never settles: BullMQ's worker
    // awaits that promise when it renews its blocking connection, and stopped fetching jobs for
    // good. Without it the client is ready once it has the slot map, and commands to a slot with
    // no master yet retry on CLUSTERDOWN (retryDelayOnClusterDown) until the replica takes over.
    enableReadyCheck: false,
    ...(enableAutoPipelining === undefined ? {} : { enableAutoPipelining }),
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
  };
  return new Cluster(target.nodes, options);
}

/**
 * A client of REDIS_URL: a `Redis` for one server or a Sentinel deployment, a
 * `Cluster` for a Redis Cluster. The cluster client answers the same commands
 * (and status, quit, disconnect, defineCommand) as `Redis`, which is all the
 * service uses, so it is handed out under that type.
 */
export function createRedis(redis: string | RedisTarget, overrides: RedisOptions = {}): Redis {
  const target = targetOf(redis);
  if (target.kind === 'cluster') return clusterOf(target, overrides) as unknown as Redis;
  return new Redis({ ...serverOptions(target), ...overrides });
}

/**
 * BullMQ's connection: options for one server or Sentinel (BullMQ opens its
 * own clients from them), a shared `Cluster` for a Redis Cluster (BullMQ
 * cannot open a cluster from options; it duplicates the instance for each
 * worker's blocking connection and leaves closing it to its owner).
 */
export function bullConnection(target: RedisTarget): ConnectionOptions {
  if (target.kind === 'cluster') {
    // A reply that never comes (a command left behind on a node the failover removed) would
    // stop a worker's fetch loop for good; timed out, BullMQ retries on the new master. Above
    // the longest blocking fetch (drainDelay, 5 s).
    return clusterOf(target, { maxRetriesPerRequest: null, commandTimeout: 15_000 });
  }
  return serverOptions(target);
}
