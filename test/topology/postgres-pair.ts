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
import { Client } from 'pg';
import { postgresBinDir } from '../faults/support/private-postgres';
import { isAlive, run, sleep } from '../faults/support/run';

const DIR_PREFIX = 'mw-topology-pg-';
const OWNER_FILE = 'owner.pid';

function bin(name: string): string {
  const dir = postgresBinDir();
  return dir ? join(dir, name) : name;
}

/** The `postgres` system user when we are root (initdb, pg_ctl and pg_basebackup refuse root). */
function identity(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('running as root and there is no postgres user to run initdb as');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/**
 * A Postgres primary and a streaming replica of its own (`initdb`, then
 * `pg_basebackup -R` from the primary), each on a port of its own, in one temp
 * dir: the topology test's database, never the shared server on 5432.
 * Durability is relaxed (fsync off): nothing here survives a power cut, and the
 * shared disk is spared.
 */
export class PostgresPair {
  private readonly as = identity();

  private constructor(
    readonly dir: string,
    readonly primaryPort: number,
    readonly replicaPort: number,
  ) {}

  static async start(primaryPort: number, replicaPort: number): Promise<PostgresPair> {
    await sweepStale();
    const dir = mkdtempSync(join(tmpdir(), DIR_PREFIX));
    writeFileSync(join(dir, OWNER_FILE), String(process.pid));
    const pair = new PostgresPair(dir, primaryPort, replicaPort);
    try {
      if (pair.as.uid !== undefined) chownSync(dir, pair.as.uid, pair.as.gid as number);
      await pair.tool('initdb', [
        '-D',
        pair.data('primary'),
        '-U',
        'postgres',
        '-A',
        'trust',
        '--no-sync',
        '-E',
        'UTF8',
        '--locale=C',
      ]);
      await pair.startServer('primary', primaryPort, []);
      await pair.tool('pg_basebackup', [
        '-h',
        '127.0.0.1',
        '-p',
        String(primaryPort),
        '-U',
        'postgres',
        '-D',
        pair.data('replica'),
        '-R',
        '-X',
        'stream',
        '-c',
        'fast',
        '--no-sync',
      ]);
      // Feedback keeps the primary from vacuuming rows a replica read still needs (a list page
      // cancelled by a recovery conflict would be a 500 of the test's own making).
      await pair.startServer('replica', replicaPort, ['-c hot_standby_feedback=on']);
      return pair;
    } catch (error) {
      await pair.close();
      throw error;
    }
  }

  primaryUrl(database: string): string {
    return `postgresql://postgres@127.0.0.1:${this.primaryPort}/${database}`;
  }

  replicaUrl(database: string): string {
    return `postgresql://postgres@127.0.0.1:${this.replicaPort}/${database}`;
  }

  /** Resolves once the replica has replayed everything the primary had written when called. */
  async waitReplayed(timeoutMs = 30_000): Promise<void> {
    const primary = new Client({ connectionString: this.primaryUrl('postgres') });
    const replica = new Client({ connectionString: this.replicaUrl('postgres') });
    await Promise.all([primary.connect(), replica.connect()]);
    try {
      const lsn = (await primary.query('SELECT pg_current_wal_lsn() AS lsn')).rows[0].lsn as string;
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const behind = (
          await replica.query('SELECT pg_wal_lsn_diff($1, pg_last_wal_replay_lsn()) > 0 AS b', [
            lsn,
          ])
        ).rows[0].b as boolean;
        if (!behind) return;
        if (Date.now() > deadline) throw new Error(`replica not at ${lsn} within ${timeoutMs} ms`);
        await sleep(100);
      }
    } finally {
      await Promise.all([primary.end(), replica.end()]);
    }
  }

  log(which: 'primary' | 'replica'): string {
    try {
      return readFileSync(join(this.dir, `${which}.log`), 'utf8');
    } catch {
      return '';
    }
  }

  /** Stops both servers (immediate) and removes the directory. Safe to call twice. */
  async close(): Promise<void> {
    for (const which of ['replica', 'primary']) {
      if (existsSync(join(this.data(which), 'postmaster.pid')))
        await this.tool('pg_ctl', ['-D', this.data(which), '-m', 'immediate', '-w', 'stop'], true);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private data(which: string): string {
    return join(this.dir, which);
  }

  private async startServer(which: string, port: number, extra: string[]): Promise<void> {
    const options = [
      `-p ${port}`,
      `-k ${this.dir}`,
      '-c listen_addresses=127.0.0.1',
      '-c max_connections=200',
      '-c fsync=off',
      '-c full_page_writes=off',
      '-c shared_buffers=64MB',
      ...extra,
    ].join(' ');
    await this.tool('pg_ctl', [
      '-D',
      this.data(which),
      '-w',
      '-t',
      '120',
      '-l',
      join(this.dir, `${which}.log`),
      '-o',
      options,
      'start',
    ]);
  }

  private async tool(name: string, args: string[], allowFailure = false): Promise<void> {
    await run(bin(name), args, {
      ...this.as,
      cwd: this.dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C', LC_ALL: 'C' },
      timeoutMs: 180_000,
      allowFailure,
    });
  }
}

/** Servers of an earlier run killed before its cleanup (owner gone): stopped and removed. */
async function sweepStale(): Promise<void> {
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
    for (const which of ['replica', 'primary']) {
      if (!existsSync(join(dir, which, 'postmaster.pid'))) continue;
      await run(bin('pg_ctl'), ['-D', join(dir, which), '-m', 'immediate', '-w', 'stop'], {
        ...identity(),
        allowFailure: true,
      });
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
