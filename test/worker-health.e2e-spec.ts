import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, flushPrefix, TEST_REDIS_URL, uniqueName } from './support/test-app';
import { ROOT, runCli, ServiceProcess, startService } from './support/processes';
import { TcpRelay } from './support/tcp-relay';

/**
 * The worker health check of docker-compose.yml: `node dist/health/worker-probe.js`
 * (and `node dist/cli.js health worker`) pass while a worker process consumes
 * its queues and fail when none runs, when it was stopped or killed, and when
 * its Redis connections are down.
 */
const PROBE = join(ROOT, 'dist', 'health', 'worker-probe.js');
const SECRET = 'test-secret-test-secret-test-secret-0123456789';

beforeAll(() => {
  if (!existsSync(PROBE))
    throw new Error('dist/ is missing: run `npm run build` (npm test does it first)');
});

describe('worker health probe (e2e)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const prefix = uniqueName('mwt_whealth');
  // The heartbeat file lives in the OS temp dir: one of its own for this test.
  const tmp = mkdtempSync(join(tmpdir(), 'mw-whealth-tmp-'));
  const cwd = mkdtempSync(join(tmpdir(), 'mw-whealth-'));
  let env: Record<string, string>;
  const running: ServiceProcess[] = [];

  const probe = () => {
    const res = spawnSync(process.execPath, [PROBE], {
      env: { PATH: process.env.PATH ?? '', ...env },
      cwd,
      encoding: 'utf8',
      timeout: 10_000,
    });
    return { status: res.status, output: res.stdout + res.stderr };
  };

  const startWorker = (extra: Record<string, string> = {}) => {
    const proc = startService({ ...env, APP_ROLE: 'worker', ...extra }, cwd);
    running.push(proc);
    return proc;
  };

  const waitForProbe = async (status: number, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    let last = probe();
    while (last.status !== status && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      last = probe();
    }
    expect(last).toEqual({ status, output: expect.any(String) });
    return last.output;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    env = {
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: prefix,
      APP_SECRET: SECRET,
      LOG_LEVEL: 'silent',
      NODE_ENV: 'production',
      TMPDIR: tmp,
    };
  });
  afterEach(async () => {
    // Workers of one prefix share its heartbeat file: none may outlive its test.
    for (const proc of running.splice(0)) {
      proc.child.kill('SIGKILL');
      await proc.exited;
    }
  });
  afterAll(async () => {
    await flushPrefix(prefix);
    await db.drop();
  });

  it('fails when no worker process runs', () => {
    const result = probe();
    expect(result.status).toBe(1);
    expect(result.output).toMatch(/^unhealthy: no worker heartbeat/);

    const cli = runCli(['health', 'worker', '--json'], env);
    expect(cli.status).toBe(1);
    expect(JSON.parse(cli.stdout).error).toEqual({
      code: 'WORKER_UNHEALTHY',
      message: expect.stringMatching(/no worker heartbeat/),
    });
  });

  it('passes while a worker consumes its queues, fails once it is stopped or killed', async () => {
    const worker = startWorker();
    expect(await waitForProbe(0)).toMatch(
      /^healthy: \d+ queues consumed by process \d+ \(.*delivery/,
    );
    const cli = runCli(['health', 'worker', '--json'], env);
    expect(cli.status).toBe(0);
    expect(JSON.parse(cli.stdout)).toEqual({
      status: 'ok',
      pid: worker.child.pid,
      queues: expect.arrayContaining(['delivery', 'imports', 'domains']),
      heartbeatAgeMs: expect.any(Number),
    });
    // Another deployment (queue prefix) on the same machine has no worker.
    expect(runCli(['health', 'worker'], { ...env, QUEUE_PREFIX: `${prefix}_other` }).status).toBe(
      1,
    );

    // SIGTERM: the heartbeat goes first, then the workers drain and the process exits.
    worker.child.kill('SIGTERM');
    expect([0, 'SIGTERM']).toContain(await worker.exited);
    expect(probe()).toEqual({ status: 1, output: expect.stringMatching(/no worker heartbeat/) });

    // SIGKILL leaves the file behind; the probe sees its process is gone.
    const second = startWorker();
    await waitForProbe(0);
    second.child.kill('SIGKILL');
    await second.exited;
    expect(probe()).toEqual({
      status: 1,
      output: expect.stringMatching(/worker process \d+ is not running/),
    });
  }, 90_000);

  it('fails while the worker cannot reach Redis, and passes again when it can', async () => {
    const redisUrl = new URL(TEST_REDIS_URL);
    const relay = new TcpRelay(redisUrl.hostname, Number(redisUrl.port || 6379));
    await relay.open();
    const worker = startWorker({ REDIS_URL: `redis://127.0.0.1:${relay.port}` });
    try {
      await waitForProbe(0);
      await relay.cut();
      // The process lives on, but its queues are not consumed: the next beats say so.
      expect(await waitForProbe(1, 20_000)).toMatch(/queues not consumed: .*(connection|PING)/);
      expect(worker.child.exitCode).toBeNull();
      await relay.open();
      await waitForProbe(0, 30_000);
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
      await relay.cut();
    }
  }, 90_000);
});
