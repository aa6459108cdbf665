import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAlive, sleep } from './run';

/**
 * A redis-server of the fault suite's own, on a port of its own, its data in
 * a temporary directory, so the suite can stop, restart or empty it without
 * touching the shared server on 6379.
 *
 * `persistent: true` runs it as production would: append-only file,
 * `appendfsync everysec`, no RDB snapshots; a stop (SIGTERM, Redis's clean
 * shutdown) and a start bring every key back. `persistent: false` is how the
 * machine's shared Redis runs (nothing on disk): a restart comes back empty.
 */
const DIR_PREFIX = 'mw-faults-redis-';
const OWNER_FILE = 'owner.pid';

export class PrivateRedis {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private output = '';

  private constructor(
    readonly dir: string,
    readonly port: number,
    readonly persistent: boolean,
  ) {}

  static async start(port: number, persistent: boolean): Promise<PrivateRedis> {
    sweepStaleRedis();
    const dir = mkdtempSync(join(tmpdir(), DIR_PREFIX));
    writeFileSync(join(dir, OWNER_FILE), String(process.pid));
    const redis = new PrivateRedis(dir, port, persistent);
    try {
      await redis.startServer();
      return redis;
    } catch (error) {
      await redis.close();
      throw error;
    }
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Clean stop (SIGTERM: Redis flushes and fsyncs the append-only file), then a start on the same port and directory. */
  async restart(): Promise<void> {
    await this.stop();
    await this.startServer();
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const stopped = await Promise.race([
      this.exited.then(() => true),
      sleep(30_000).then(() => false),
    ]);
    if (!stopped) {
      child.kill('SIGKILL');
      await this.exited;
    }
  }

  /** Stops the server and removes its directory. Safe to call twice. */
  async close(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await this.exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  log(): string {
    return this.output;
  }

  /** One command over a plain socket (RESP), answered as the raw reply line(s). */
  command(...args: string[]): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = new Socket();
      let reply = '';
      const timer = setTimeout(() => socket.destroy(new Error('redis command timed out')), 5_000);
      socket.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      socket.on('data', (d: Buffer) => {
        reply += d.toString();
        if (complete(reply)) {
          clearTimeout(timer);
          socket.end();
          resolve(reply);
        }
      });
      socket.connect(this.port, '127.0.0.1', () => {
        socket.write(
          `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`,
        );
      });
    });
  }

  private async startServer(): Promise<void> {
    const data = join(this.dir, 'data');
    mkdirSync(data, { recursive: true });
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--dir',
      data,
      '--save',
      '',
      '--appendonly',
      this.persistent ? 'yes' : 'no',
      '--appendfsync',
      'everysec',
      '--daemonize',
      'no',
      '--pidfile',
      join(this.dir, 'redis.pid'),
      '--logfile',
      '',
    ];
    const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout?.on(
      'data',
      (d: Buffer) => (this.output = (this.output + d.toString()).slice(-20_000)),
    );
    child.stderr?.on(
      'data',
      (d: Buffer) => (this.output = (this.output + d.toString()).slice(-20_000)),
    );
    this.exited = new Promise((resolve) => child.on('exit', () => resolve()));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`redis-server exited: ${this.output}`);
      try {
        // A server still loading its append-only file answers -LOADING.
        if ((await this.command('PING')).startsWith('+PONG')) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline)
        throw new Error(`redis-server did not answer PING within 30 s: ${this.output}`);
      await sleep(50);
    }
  }
}

/** Whether a RESP reply is complete (simple replies and bulk strings: all the suite sends). */
function complete(reply: string): boolean {
  if (!reply.endsWith('\r\n')) return false;
  if (reply.startsWith('$')) {
    const length = Number(reply.slice(1, reply.indexOf('\r\n')));
    return length < 0 || reply.length >= reply.indexOf('\r\n') + 2 + length + 2;
  }
  return true;
}

/** Servers left by an earlier run of the suite that was killed before its cleanup: stopped and removed. */
function sweepStaleRedis(): void {
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(DIR_PREFIX)) continue;
    const dir = join(tmpdir(), name);
    let owner = 0;
    try {
      owner = Number(readFileSync(join(dir, OWNER_FILE), 'utf8'));
    } catch {
      continue;
    }
    if (!owner || isAlive(owner)) continue;
    try {
      const pid = Number(readFileSync(join(dir, 'redis.pid'), 'utf8'));
      // Only the server whose pid file is in this directory, if it still is a redis-server.
      if (
        pid &&
        isAlive(pid) &&
        readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('redis-server')
      ) {
        process.kill(pid, 'SIGKILL');
      }
    } catch {
      // no pid file, or the process is gone
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
