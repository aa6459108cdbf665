import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './processes';

/** Where Debian puts the binary (`apt-get install pgbouncer`); PATH first. */
export function pgbouncerBinary(): string | null {
  for (const candidate of ['pgbouncer', '/usr/sbin/pgbouncer']) {
    try {
      execFileSync(candidate, ['--version'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // next
    }
  }
  return null;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * A PgBouncer of the test's own in transaction pooling mode in front of the test Postgres
 * (127.0.0.1:5432 unless `upstreamPort` says otherwise, every database by wildcard), on a free port, with its config and auth file in
 * a temp dir. No `ignore_startup_parameters`: the app must send none that PgBouncer refuses.
 * Run in the foreground so stop() can end it by its pid; as root it switches to `postgres` (it
 * refuses to run as root).
 */
export class TestPgBouncer {
  private child: ChildProcess | null = null;
  private readonly dir = mkdtempSync(join(tmpdir(), 'mw-pgbouncer-'));
  port = 0;

  constructor(
    private readonly binary: string,
    private readonly poolSize = 10,
    private readonly upstreamPort = 5432,
  ) {}

  /** A URL of `database` through PgBouncer. */
  url(database: string): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/${database}`;
  }

  async start(): Promise<void> {
    if (!this.port) {
      this.port = await freePort();
      const asRoot = process.getuid?.() === 0;
      writeFileSync(join(this.dir, 'userlist.txt'), '"postgres" ""\n');
      writeFileSync(
        join(this.dir, 'pgbouncer.ini'),
        [
          '[databases]',
          `* = host=127.0.0.1 port=${this.upstreamPort}`,
          '[pgbouncer]',
          'listen_addr = 127.0.0.1',
          `listen_port = ${this.port}`,
          'unix_socket_dir =',
          'auth_type = trust',
          `auth_file = ${join(this.dir, 'userlist.txt')}`,
          'pool_mode = transaction',
          `default_pool_size = ${this.poolSize}`,
          'max_client_conn = 500',
          `logfile = ${join(this.dir, 'pgbouncer.log')}`,
          ...(asRoot ? ['user = postgres'] : []),
          '',
        ].join('\n'),
      );
      if (asRoot) {
        const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres']).toString());
        const [uid, gid] = [id('-u'), id('-g')];
        chownSync(this.dir, uid, gid);
        chmodSync(this.dir, 0o755);
        for (const file of ['userlist.txt', 'pgbouncer.ini'])
          chownSync(join(this.dir, file), uid, gid);
      }
    }
    const child = spawn(this.binary, [join(this.dir, 'pgbouncer.ini')], { stdio: 'ignore' });
    this.child = child;
    const deadline = Date.now() + 10_000;
    while (!(await accepts(this.port))) {
      if (child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`PgBouncer did not start:\n${this.log()}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Immediate shutdown (SIGTERM): open client connections are cut, as in a crash or a redeploy. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  log(): string {
    try {
      return readFileSync(join(this.dir, 'pgbouncer.log'), 'utf8');
    } catch {
      return '';
    }
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
