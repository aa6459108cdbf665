import { ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './processes';

const run = promisify(execFile);

/** One redis-server (or sentinel) process of a test topology. */
export interface RedisProcess {
  port: number;
  child: ChildProcess;
  exited: Promise<void>;
}

function startRedisServer(dir: string, port: number, args: string[]): RedisProcess {
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      'no',
      '--logfile',
      join(dir, `redis-${port}.log`),
      ...args,
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { port, child, exited };
}

export async function redisCli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], {
    timeout: 20_000,
  });
  return stdout.trim();
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function freePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

/** Stops a node as a crash would (no save, no handover). */
export async function killRedis(node: RedisProcess): Promise<void> {
  node.child.kill('SIGKILL');
  await node.exited;
}

/**
 * A Redis Cluster on loopback in a temp dir: `masters` masters with one replica
 * each (redis-cli --cluster create), a short node timeout so a replica takes
 * over a stopped master in a few seconds. The bus ports are chosen too
 * (`--cluster-port`): port + 10000 may not exist above 55535.
 */
export class TestRedisCluster {
  private constructor(
    readonly dir: string,
    readonly nodes: RedisProcess[],
  ) {}

  static async start(masters = 3): Promise<TestRedisCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'mw-redis-cluster-'));
    const ports = await freePorts(masters * 4);
    const nodes = Array.from({ length: masters * 2 }, (_, i) =>
      startRedisServer(dir, ports[i], [
        '--cluster-enabled',
        'yes',
        '--cluster-port',
        String(ports[masters * 2 + i]),
        '--cluster-config-file',
        join(dir, `nodes-${ports[i]}.conf`),
        '--cluster-node-timeout',
        '1500',
        // A replica just synced may fail over at once (the default refuses a replica whose link
        // to the master looks too old, which a freshly created test cluster can hit).
        '--cluster-replica-validity-factor',
        '0',
      ]),
    );
    const cluster = new TestRedisCluster(dir, nodes);
    try {
      for (const node of nodes)
        await waitFor(
          `redis ${node.port} up`,
          async () => (await redisCli(node.port, 'PING')) === 'PONG',
        );
      await run(
        'redis-cli',
        [
          '--cluster',
          'create',
          ...nodes.map((node) => `127.0.0.1:${node.port}`),
          '--cluster-replicas',
          '1',
          '--cluster-yes',
        ],
        { timeout: 30_000 },
      );
      await cluster.waitHealthy(nodes);
      // Every replica in sync, so a killed master has a replica holding its data.
      await waitFor('replicas in sync', async () => {
        for (const node of nodes) {
          const info = await redisCli(node.port, 'INFO', 'replication');
          if (/role:slave/.test(info) && !/master_link_status:up/.test(info)) return false;
        }
        return true;
      });
      return cluster;
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  /** `redis+cluster://` naming every node. */
  url(): string {
    return `redis+cluster://${this.nodes.map((node) => `127.0.0.1:${node.port}`).join(',')}`;
  }

  /** Every given node says the cluster is ok and all slots are served. */
  async waitHealthy(nodes: RedisProcess[], timeoutMs = 20_000): Promise<void> {
    await waitFor(
      'cluster ok',
      async () => {
        for (const node of nodes) {
          const info = await redisCli(node.port, 'CLUSTER', 'INFO');
          if (!/cluster_state:ok/.test(info) || !/cluster_slots_ok:16384/.test(info)) return false;
        }
        return true;
      },
      timeoutMs,
    );
  }

  /** The node serving `key`'s slot as master now. */
  async masterOf(key: string): Promise<RedisProcess> {
    const slot = Number(await redisCli(this.alive()[0].port, 'CLUSTER', 'KEYSLOT', key));
    for (const node of this.alive()) {
      const role = await redisCli(node.port, 'ROLE').catch(() => '');
      if (!role.startsWith('master')) continue;
      const nodesLine = (await redisCli(node.port, 'CLUSTER', 'NODES'))
        .split('\n')
        .find((line) => line.includes('myself'));
      const ranges = (nodesLine ?? '').split(' ').slice(8);
      for (const range of ranges) {
        const [from, to = from] = range.split('-').map(Number);
        if (slot >= from && slot <= to) return node;
      }
    }
    throw new Error(`no master serves the slot of ${key}`);
  }

  /** The nodes still running. */
  alive(): RedisProcess[] {
    return this.nodes.filter(
      (node) => node.child.exitCode === null && node.child.signalCode === null,
    );
  }

  async stop(): Promise<void> {
    for (const node of this.alive()) node.child.kill('SIGKILL');
    await Promise.all(this.nodes.map((node) => node.exited));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A master, a replica and one sentinel on loopback watching it as `name`
 * (quorum 1), for the `redis+sentinel://` form.
 */
export class TestRedisSentinel {
  private constructor(
    readonly dir: string,
    readonly master: RedisProcess,
    readonly replica: RedisProcess,
    readonly sentinel: RedisProcess,
    readonly name: string,
  ) {}

  static async start(name = 'mymaster'): Promise<TestRedisSentinel> {
    const dir = mkdtempSync(join(tmpdir(), 'mw-redis-sentinel-'));
    const [masterPort, replicaPort, sentinelPort] = await freePorts(3);
    const master = startRedisServer(dir, masterPort, []);
    const replica = startRedisServer(dir, replicaPort, [
      '--replicaof',
      '127.0.0.1',
      String(masterPort),
    ]);
    // Sentinel rewrites its config file, so it needs one of its own.
    const conf = join(dir, 'sentinel.conf');
    writeFileSync(
      conf,
      [
        `port ${sentinelPort}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `logfile ${join(dir, 'sentinel.log')}`,
        `sentinel monitor ${name} 127.0.0.1 ${masterPort} 1`,
        `sentinel down-after-milliseconds ${name} 1000`,
        `sentinel failover-timeout ${name} 5000`,
        '',
      ].join('\n'),
    );
    const child = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
    const sentinel: RedisProcess = {
      port: sentinelPort,
      child,
      exited: new Promise<void>((resolve) => child.once('exit', () => resolve())),
    };
    const topology = new TestRedisSentinel(dir, master, replica, sentinel, name);
    try {
      await waitFor('replica in sync', async () =>
        /master_link_status:up/.test(await redisCli(replicaPort, 'INFO', 'replication')),
      );
      await waitFor('sentinel knows the master', async () =>
        (await redisCli(sentinelPort, 'SENTINEL', 'get-master-addr-by-name', name)).includes(
          String(masterPort),
        ),
      );
      return topology;
    } catch (error) {
      await topology.stop();
      throw error;
    }
  }

  url(): string {
    return `redis+sentinel://127.0.0.1:${this.sentinel.port}/${this.name}`;
  }

  async stop(): Promise<void> {
    const all = [this.master, this.replica, this.sentinel];
    for (const node of all)
      if (node.child.exitCode === null && node.child.signalCode === null)
        node.child.kill('SIGKILL');
    await Promise.all(all.map((node) => node.exited));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
