import { spawnSync } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import { isAlive, run, sleep } from './run';

/**
 * A PostgreSQL server of the fault suite's own: `initdb` into a temporary
 * directory, `pg_ctl` on a port of its own (trust auth, loopback only), so
 * the suite can stop and restart it without touching the shared server on
 * 5432. Debian's binaries live in /usr/lib/postgresql/<version>/bin, off the
 * PATH; PG_BIN_DIR overrides. initdb and pg_ctl refuse to run as root: as
 * root, they run as the `postgres` system user (Node's spawn uid/gid).
 *
 * Durability settings are relaxed (fsync off, no full-page writes): the
 * suite restarts the server with `pg_ctl restart -m fast`, a clean shutdown
 * that checkpoints and flushes the WAL, never a power cut, so they change
 * nothing the service can observe and save the shared disk a lot of work.
 */
const DIR_PREFIX = 'mw-faults-pg-';
const OWNER_FILE = 'owner.pid';

export function postgresBinDir(): string {
  if (process.env.PG_BIN_DIR) return process.env.PG_BIN_DIR;
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions.length > 0) return join(root, versions[0], 'bin');
  }
  return ''; // on the PATH
}

function bin(name: string): string {
  const dir = postgresBinDir();
  return dir ? join(dir, name) : name;
}

/** uid/gid to run the server tools as: the `postgres` user when we are root, else ourselves. */
function runAs(): { uid?: number; gid?: number } {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return {};
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line)
    throw new Error('running as root and there is no postgres user to run initdb/pg_ctl as');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

export class PrivatePostgres {
  readonly dataDir: string;
  readonly logFile: string;
  private readonly identity = runAs();
  private running = false;

  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {
    this.dataDir = join(dir, 'data');
    this.logFile = join(dir, 'postgres.log');
  }

  /** initdb + start. The directory is removed by close(). */
  static async start(port: number): Promise<PrivatePostgres> {
    sweepStalePostgres();
    const dir = mkdtempSync(join(tmpdir(), DIR_PREFIX));
    writeFileSync(join(dir, OWNER_FILE), String(process.pid));
    const pg = new PrivatePostgres(dir, port);
    try {
      if (pg.identity.uid !== undefined) chownSync(dir, pg.identity.uid, pg.identity.gid as number);
      await pg.tool('initdb', [
        '-D',
        pg.dataDir,
        '-U',
        'postgres',
        '-A',
        'trust',
        '--no-sync',
        '-E',
        'UTF8',
        '--locale=C',
      ]);
      await pg.startServer();
      return pg;
    } catch (error) {
      await pg.close();
      throw error;
    }
  }

  /** postgresql://postgres@127.0.0.1:<port>/<database> */
  url(database: string): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** `pg_ctl restart -m fast`: open sessions are cut, transactions in flight roll back, the server is back when it returns. */
  async restart(): Promise<void> {
    await this.pgCtl(['restart', '-m', 'fast', '-l', this.logFile]);
    this.running = true;
  }

  /** Stops the server (if it runs) and removes its directory. Safe to call twice. */
  async close(): Promise<void> {
    if (this.running || existsSync(join(this.dataDir, 'postmaster.pid'))) {
      await this.pgCtl(['stop', '-m', 'immediate'], true);
      this.running = false;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The server's log, for a failure report. */
  log(): string {
    try {
      return readFileSync(this.logFile, 'utf8');
    } catch {
      return '';
    }
  }

  private async startServer(): Promise<void> {
    const options = [
      `-p ${this.port}`,
      `-k ${this.dir}`,
      '-c listen_addresses=127.0.0.1',
      '-c max_connections=200',
      '-c fsync=off',
      '-c full_page_writes=off',
      '-c shared_buffers=128MB',
    ].join(' ');
    await this.pgCtl(['start', '-l', this.logFile, '-o', options]);
    this.running = true;
  }

  private async pgCtl(args: string[], allowFailure = false): Promise<void> {
    await this.tool('pg_ctl', ['-D', this.dataDir, '-w', '-t', '120', ...args], allowFailure);
  }

  private async tool(name: string, args: string[], allowFailure = false): Promise<void> {
    await run(bin(name), args, {
      ...this.identity,
      cwd: this.dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C', LC_ALL: 'C' },
      timeoutMs: 180_000,
      allowFailure,
    });
  }
}

/**
 * Servers left behind by an earlier run of the suite that was killed before
 * its cleanup (its owner process is gone): stopped and removed. Only
 * directories this module created are looked at.
 */
function sweepStalePostgres(): void {
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
    const data = join(dir, 'data');
    if (existsSync(join(data, 'postmaster.pid'))) {
      // Synchronous on purpose: this runs before anything of ours is started.
      spawnSync(bin('pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop'], {
        ...runAs(),
        stdio: 'ignore',
        timeout: 60_000,
      });
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A pg pool for the test's own reads that rides out restarts: idle clients
 * cut by the server are dropped quietly, and `query` retries a statement
 * that failed on a connection error for up to `retryForMs`.
 */
export class ResilientPg {
  private readonly pool: Pool;

  constructor(connectionString: string) {
    this.pool = new Pool({ connectionString, max: 4, connectionTimeoutMillis: 5_000 });
    this.pool.on('error', () => undefined);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- rows are read field by field by the caller
  async query<T = any>(sql: string, params: unknown[] = [], retryForMs = 60_000): Promise<T[]> {
    const deadline = Date.now() + retryForMs;
    for (;;) {
      try {
        return (await this.pool.query(sql, params)).rows as T[];
      } catch (error) {
        const code = (error as { code?: string }).code ?? '';
        // SQL errors (a class other than connection exception / admin shutdown / cannot connect now) are real.
        const connection =
          !/^[0-9A-Z]{5}$/.test(code) || code.startsWith('08') || code.startsWith('57P');
        if (!connection || Date.now() > deadline) throw error;
        await sleep(250);
      }
    }
  }

  async end(): Promise<void> {
    await this.pool.end().catch(() => undefined);
  }
}
