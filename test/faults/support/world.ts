import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prepareDatabase } from '../../../src/database/prepare-database';
import { workerHeartbeatPath } from '../../../src/queue/worker-heartbeat';
import {
  DIST_CLI,
  DIST_MAIN,
  freePort,
  ROOT,
  ServiceProcess,
  startService,
} from '../../support/processes';
import { startTestSmtpServer, TestSmtpServer } from '../../support/smtp-server';
import { LIFTED_GROUP_RATES } from '../../support/test-app';
import { PrivatePostgres, ResilientPg } from './private-postgres';
import { PrivateRedis } from './private-redis';
import { isAlive, run, sleep } from './run';

export const APP_SECRET = 'fault-secret-fault-secret-fault-secret-0123456789';
const WORKER_PROBE = join(ROOT, 'dist', 'health', 'worker-probe.js');
const WORLD_DIR_PREFIX = 'mw-faults-world-';
const OWNER_FILE = 'owner.pid';
const PREFIX_FILE = 'queue-prefix';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface WorldOptions {
  /** Names the database, the queue prefix and the temp directories. */
  name: string;
  /** Redis as production runs it (AOF, everysec), or with nothing on disk. */
  persistentRedis: boolean;
  emailRatePerSecond: number;
  /** The SMTP server answers DATA after this long: a relay's latency, which keeps mail in flight. */
  smtpDataDelayMs: number;
}

interface Started {
  role: 'api' | 'worker';
  proc: ServiceProcess;
  /** Set when the test itself SIGKILLed it. */
  killedByTest: boolean;
}

/**
 * One deployment under test, all real and all private: its own PostgreSQL and
 * Redis servers (restartable), a loopback SMTP server, and the built service
 * as two processes, APP_ROLE=api and APP_ROLE=worker. Every process it starts
 * is remembered, so the test can tell a process that died by itself from one
 * it killed, and close() removes everything, whatever happened before.
 */
export class FaultWorld {
  readonly prefix: string;
  readonly databaseUrl: string;
  api: ServiceProcess | null = null;
  worker: ServiceProcess | null = null;
  private readonly started: Started[] = [];
  private closed = false;

  private constructor(
    readonly options: WorldOptions,
    readonly pg: PrivatePostgres,
    readonly redis: PrivateRedis,
    readonly smtp: TestSmtpServer,
    readonly db: ResilientPg,
    readonly cwd: string,
    readonly apiPort: number,
  ) {
    this.prefix = `mwf_${options.name}_${randomBytes(3).toString('hex')}`;
    this.databaseUrl = pg.url('mailwright');
  }

  static async create(options: WorldOptions): Promise<FaultWorld> {
    if (!existsSync(DIST_MAIN) || !existsSync(DIST_CLI) || !existsSync(WORKER_PROBE)) {
      throw new Error(
        'dist/ is missing: build first (npm test builds; or npx tsc -p tsconfig.build.json)',
      );
    }
    sweepStaleWorlds();
    const cleanup: Array<() => Promise<void>> = [];
    try {
      const pg = await PrivatePostgres.start(await freePort());
      cleanup.push(() => pg.close());
      const redis = await PrivateRedis.start(await freePort(), options.persistentRedis);
      cleanup.push(() => redis.close());
      // Tens of thousands of messages: keep the envelopes only.
      const smtp = await startTestSmtpServer({ parse: false, keepRaw: false });
      cleanup.push(() => smtp.close());
      smtp.dataDelayMs = options.smtpDataDelayMs;
      const cwd = mkdtempSync(join(tmpdir(), `${WORLD_DIR_PREFIX}${options.name}-`));
      cleanup.push(async () => rmSync(cwd, { recursive: true, force: true }));
      const world = new FaultWorld(
        options,
        pg,
        redis,
        smtp,
        new ResilientPg(pg.url('mailwright')),
        cwd,
        await freePort(),
      );
      // For sweepStaleWorlds: who owns this directory, and the heartbeat file its worker writes.
      writeFileSync(join(cwd, OWNER_FILE), String(process.pid));
      writeFileSync(join(cwd, PREFIX_FILE), world.prefix);
      await prepareDatabase(world.databaseUrl);
      return world;
    } catch (error) {
      for (const step of cleanup.reverse()) await step().catch(() => undefined);
      throw error;
    }
  }

  get base(): string {
    return `http://127.0.0.1:${this.apiPort}`;
  }

  env(role: 'api' | 'worker'): Record<string, string> {
    return {
      APP_ROLE: role,
      HOST: '127.0.0.1',
      PORT: String(this.apiPort),
      DATABASE_URL: this.databaseUrl,
      REDIS_URL: this.redis.url,
      QUEUE_PREFIX: this.prefix,
      LOG_LEVEL: process.env.FAULTS_LOG_LEVEL ?? 'warn',
      APP_SECRET,
      SMTP_URL: this.smtp.url,
      REQUIRE_VERIFIED_SENDER: 'false',
      PUBLIC_URL: 'https://mail.example.test',
      MAIL_OUTBOX_DIR: join(this.cwd, 'outbox'),
      API_RATE_LIMIT_PER_MINUTE: '10000000',
      AUTH_FAILURE_LIMIT_PER_MINUTE: '10000000',
      EMAIL_RATE_PER_SECOND: String(this.options.emailRatePerSecond),
      DELIVERY_GROUP_RATES: LIFTED_GROUP_RATES,
      RECOVERY_EVERY_MS: '2000',
    };
  }

  /** Starts the API process and waits for /health/ready (60 s: a loaded machine boots slowly). */
  async startApi(): Promise<ServiceProcess> {
    const proc = startService(this.env('api'), this.cwd);
    this.started.push({ role: 'api', proc, killedByTest: false });
    this.api = proc;
    const waited = await this.apiReady(60_000);
    if (waited === null)
      throw new Error(`the API did not become ready: ${proc.output().slice(-3000)}`);
    return proc;
  }

  /** Starts a worker process and waits until the worker probe says it consumes every queue. */
  async startWorker(): Promise<ServiceProcess> {
    const proc = startService(this.env('worker'), this.cwd);
    this.started.push({ role: 'worker', proc, killedByTest: false });
    this.worker = proc;
    const waited = await this.workerHealthy(60_000);
    if (waited === null)
      throw new Error(`the worker did not become healthy: ${proc.output().slice(-3000)}`);
    return proc;
  }

  async killApi(): Promise<void> {
    await this.kill('api');
  }

  async killWorker(): Promise<void> {
    await this.kill('worker');
  }

  private async kill(role: 'api' | 'worker'): Promise<void> {
    const entry = [...this.started].reverse().find((s) => s.role === role);
    if (!entry) throw new Error(`no ${role} process to kill`);
    entry.killedByTest = true;
    entry.proc.child.kill('SIGKILL');
    const exit = await entry.proc.exited;
    if (exit !== 'SIGKILL')
      throw new Error(`the ${role} process ended with ${exit} before the SIGKILL`);
  }

  /** Milliseconds until GET /health/ready answered 200, or null if it did not within `timeoutMs`. */
  async apiReady(timeoutMs: number): Promise<number | null> {
    const began = Date.now();
    while (Date.now() - began < timeoutMs) {
      try {
        const res = await fetch(`${this.base}/health/ready`, {
          signal: AbortSignal.timeout(5_000),
        });
        if (res.status === 200) return Date.now() - began;
      } catch {
        // not listening (yet), or too slow
      }
      if (this.api && (this.api.child.exitCode !== null || this.api.child.signalCode !== null))
        return null;
      await sleep(200);
    }
    return null;
  }

  /**
   * Milliseconds until `node dist/health/worker-probe.js` (the container check) exited 0 on a heartbeat
   * written at `since` or later (the worker writes one every 5 s: an older one predates the fault), or null.
   */
  async workerHealthy(timeoutMs: number, since = 0): Promise<number | null> {
    const began = Date.now();
    while (Date.now() - began < timeoutMs) {
      if (this.heartbeatAt() < since) {
        await sleep(200);
        continue;
      }
      const probe = await run(process.execPath, [WORKER_PROBE], {
        env: { PATH: process.env.PATH ?? '', QUEUE_PREFIX: this.prefix },
        cwd: this.cwd,
        allowFailure: true,
        timeoutMs: 10_000,
      });
      if (probe.code === 0) return Date.now() - began;
      if (
        this.worker &&
        (this.worker.child.exitCode !== null || this.worker.child.signalCode !== null)
      )
        return null;
      await sleep(300);
    }
    return null;
  }

  /** When the worker last wrote its heartbeat (epoch ms; 0 when there is none). */
  heartbeatAt(): number {
    try {
      return Number(
        (JSON.parse(readFileSync(workerHeartbeatPath(this.prefix), 'utf8')) as { at?: number })
          .at ?? 0,
      );
    } catch {
      return 0;
    }
  }

  /** Processes that ended without the test killing them (a crash), with the end of their output. */
  unexpectedExits(): string[] {
    return this.started
      .filter(
        (s) =>
          !s.killedByTest && (s.proc.child.exitCode !== null || s.proc.child.signalCode !== null),
      )
      .map(
        (s) =>
          `${s.role} pid ${s.proc.child.pid} exited ${s.proc.child.exitCode ?? s.proc.child.signalCode}: ${s.proc.output().slice(-3000)}`,
      );
  }

  /** How many processes were started for a role (the first plus each restart after a kill). */
  startedCount(role: 'api' | 'worker'): number {
    return this.started.filter((s) => s.role === role).length;
  }

  /** Every process output, for a failure report. */
  outputs(): string {
    return this.started
      .map((s) => `--- ${s.role} pid ${s.proc.child.pid}\n${s.proc.output().slice(-4000)}`)
      .join('\n');
  }

  /** `node dist/cli.js <args> --json` against this world's database and Redis: its JSON document. */
  async cli(args: string[]): Promise<Json> {
    const res = await run(process.execPath, [DIST_CLI, ...args, '--json'], {
      env: { PATH: process.env.PATH ?? '', ...this.env('api'), LOG_LEVEL: 'silent' },
      cwd: this.cwd,
      timeoutMs: 60_000,
    });
    return JSON.parse(res.stdout) as Json;
  }

  async createProject(name: string): Promise<{ id: string; secretKey: string }> {
    const doc = await this.cli(['projects', 'create', '--name', name]);
    return { id: doc.project.id as string, secretKey: doc.secretKey as string };
  }

  /** Subscribed contacts `<prefix><n>@<domain>`, inserted by SQL (a minute old, so a campaign started now includes them). */
  async insertContacts(
    projectId: string,
    count: number,
    localPrefix: string,
    domain: string,
  ): Promise<void> {
    await this.db.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
       SELECT gen_random_uuid(), $1, $2 || lpad(i::text, 6, '0') || '@' || $3, true, '{}',
              now() - interval '1 minute', now() - interval '1 minute'
         FROM generate_series(1, $4::int) AS i`,
      [projectId, localPrefix, domain, count],
    );
  }

  async call(
    key: string,
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: Json }> {
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
  }

  /** A campaign to every contact of the project, sent now. Answers its id. */
  async sendCampaign(key: string, name: string, from: string): Promise<string> {
    const created = await this.call(key, 'POST', '/campaigns', {
      name,
      subject: `${name} for {{ contact.email }}`,
      body: '<p>Hello {{ contact.email }}</p><a href="{{ unsubscribeUrl }}">Unsubscribe</a>',
      from,
      audienceType: 'ALL',
    });
    if (created.status !== 201)
      throw new Error(`POST /campaigns: ${created.status} ${JSON.stringify(created.body)}`);
    const id = created.body.data.id as string;
    const sent = await this.call(key, 'POST', `/campaigns/${id}/send`, {});
    if (sent.status !== 202)
      throw new Error(`POST /campaigns/${id}/send: ${sent.status} ${JSON.stringify(sent.body)}`);
    return id;
  }

  /** Email records by status for a project, straight from the table. */
  async statusCounts(projectId: string): Promise<Record<string, number>> {
    const rows = await this.db.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM emails WHERE project_id = $1 GROUP BY status',
      [projectId],
    );
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  }

  async campaignStatus(campaignId: string): Promise<string> {
    const rows = await this.db.query<{ status: string }>(
      'SELECT status FROM campaigns WHERE id = $1',
      [campaignId],
    );
    return rows[0]?.status ?? 'MISSING';
  }

  /** Messages the SMTP server accepted per envelope recipient ending with `suffix`. */
  deliveriesTo(suffix: string): Map<string, number> {
    const counts = new Map<string, number>();
    for (const message of this.smtp.messages) {
      for (const to of message.to) {
        const address = to.toLowerCase();
        if (address.endsWith(suffix)) counts.set(address, (counts.get(address) ?? 0) + 1);
      }
    }
    return counts;
  }

  /** Kills every process still running, stops the servers, removes every directory. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // FAULTS_LOG_DIR=<dir> keeps every process's output (and the servers' logs) for a look afterwards.
    const logDir = process.env.FAULTS_LOG_DIR;
    if (logDir) {
      mkdirSync(logDir, { recursive: true });
      this.started.forEach((s, i) =>
        writeFileSync(join(logDir, `${this.options.name}-${i}-${s.role}.log`), s.proc.output()),
      );
      writeFileSync(join(logDir, `${this.options.name}-redis.log`), this.redis.log());
      writeFileSync(join(logDir, `${this.options.name}-postgres.log`), this.pg.log());
    }
    for (const s of this.started) {
      if (s.proc.child.exitCode === null && s.proc.child.signalCode === null) {
        s.proc.child.kill('SIGKILL');
        await s.proc.exited;
      }
    }
    await this.db.end();
    await this.smtp.close().catch(() => undefined);
    await this.redis.close().catch(() => undefined);
    await this.pg.close().catch(() => undefined);
    rmSync(this.cwd, { recursive: true, force: true });
    rmSync(workerHeartbeatPath(this.prefix), { force: true });
  }
}

/**
 * What an earlier run of the suite left behind when it was killed before its
 * cleanup (its owner process is gone): the service processes it started
 * (recognised by their working directory, the world's own temporary
 * directory), their heartbeat file and the directory. Its Postgres and Redis
 * servers are swept by PrivatePostgres and PrivateRedis the same way.
 */
function sweepStaleWorlds(): void {
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(WORLD_DIR_PREFIX)) continue;
    const dir = join(tmpdir(), name);
    let owner = 0;
    try {
      owner = Number(readFileSync(join(dir, OWNER_FILE), 'utf8'));
    } catch {
      continue;
    }
    if (!owner || isAlive(owner)) continue;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (readlinkSync(`/proc/${entry}/cwd`) === dir) process.kill(Number(entry), 'SIGKILL');
      } catch {
        // gone, or not ours to read
      }
    }
    try {
      rmSync(workerHeartbeatPath(readFileSync(join(dir, PREFIX_FILE), 'utf8')), { force: true });
    } catch {
      // no prefix file
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
