import { Cluster } from 'ioredis';
import { parseRedisUrl } from '../src/config/redis-url';
import { bullConnection } from '../src/queue/redis';
import { killRedis, redisCli, TestRedisCluster } from './support/redis-topology';

/**
 * The cause of the worker that stopped fetching jobs after a Redis Cluster
 * failover (docs/scaling-redis.md, Failover): BullMQ renews a worker's
 * blocking connection by `disconnect()` then `connect()`, and awaits that
 * promise. With ioredis's ready check, a connect() made while the cluster says
 * `cluster_state:fail` (the master is gone, its replica not yet promoted)
 * reconnects by itself and never settles its promise, so the worker waited
 * forever. The service's cluster client must settle it and then serve the
 * slot once the replica has taken over.
 */
describe('Redis Cluster client reconnecting during a failover (e2e)', () => {
  let redis: TestRedisCluster;
  let client: Cluster;

  beforeAll(async () => {
    redis = await TestRedisCluster.start(3);
  }, 60_000);

  afterAll(async () => {
    await client?.quit().catch(() => client.disconnect());
    await redis?.stop();
  });

  it('settles connect() made while the cluster is down and serves the slot after the promotion', async () => {
    client = bullConnection(parseRedisUrl(redis.url())) as Cluster;
    await client.set('{failover}:key', 'before');
    const master = await redis.masterOf('{failover}');
    await killRedis(master);
    // The window: the other nodes have marked the master failed and no replica serves its slots.
    const witness = redis.alive()[0].port;
    const deadline = Date.now() + 20_000;
    while (!/cluster_state:fail/.test(await redisCli(witness, 'CLUSTER', 'INFO'))) {
      if (Date.now() > deadline) throw new Error('the cluster never reported the failed master');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    client.disconnect();
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      client.connect().then(
        () => 'connected',
        (error: Error) => `rejected: ${error.message}`,
      ),
      new Promise<string>(
        (resolve) => (timer = setTimeout(() => resolve('never settled'), 15_000)),
      ),
    ]);
    clearTimeout(timer);
    expect(outcome).toBe('connected');
    // Commands to the failed slot wait for the replica (CLUSTERDOWN retries), then succeed.
    await client.set('{failover}:key', 'after');
    expect(await client.get('{failover}:key')).toBe('after');
  }, 60_000);
});
