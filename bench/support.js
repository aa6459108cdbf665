'use strict';
/* Shared helpers of the contacts/events benchmarks (plain CommonJS over the built dist/). */
const { spawn, execFileSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const net = require('node:net');
const { join } = require('node:path');
const { Client } = require('pg');

const ROOT = join(__dirname, '..');
/** The build to run (default dist/; BENCH_DIST points elsewhere, e.g. a private build). */
const DIST = process.env.BENCH_DIST || join(ROOT, 'dist');
const PG_ADMIN_URL = process.env.BENCH_PG_URL || 'postgresql://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379';

/** A database of its own, migrated; dropped by the returned function. */
async function createBenchDatabase(tag) {
  const name = `mw_bench_${tag}_${process.pid}_${randomBytes(3).toString('hex')}`;
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  const { prepareDatabase } = require(join(DIST, 'database/prepare-database.js'));
  await prepareDatabase(url.toString());
  return {
    url: url.toString(),
    drop: async () => {
      const admin = new Client({ connectionString: PG_ADMIN_URL });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await admin.end();
    },
  };
}

function createProject(databaseUrl, name) {
  const out = execFileSync(process.execPath, [join(DIST, 'cli.js'), 'projects', 'create', '--name', name, '--json'], {
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' },
    encoding: 'utf8',
  });
  return JSON.parse(out);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Starts `node dist/main.js` as a child and waits until /health/ready answers 200. */
async function startApp(env, nodeArgs = []) {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const child = spawn(process.execPath, [...nodeArgs, join(DIST, 'main.js')], {
    env: {
      PATH: process.env.PATH || '',
      NODE_PATH: join(ROOT, 'node_modules'),
      HOST: '127.0.0.1',
      REDIS_URL,
      QUEUE_PREFIX: `mwbench${process.pid}`,
      APP_SECRET: 'bench-secret-bench-secret-bench-secret-0123456789',
      LOG_LEVEL: 'warn',
      ...env,
      PORT: String(port),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the app exited with code ${child.exitCode}`);
    try {
      const res = await fetch(`${base}/health/ready`);
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('the app did not become ready');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    base,
    child,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** A closed loop: `concurrency` callers, each issuing the next request when the last one answers. */
async function closedLoop(concurrency, seconds, fn) {
  const latencies = [];
  let errors = 0;
  let seq = 0;
  const end = Date.now() + seconds * 1000;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        const t0 = process.hrtime.bigint();
        try {
          await fn(seq++);
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        } catch (error) {
          errors++;
          if (errors <= 3) console.error('request failed:', error.message);
        }
      }
    }),
  );
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    perSecond: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

module.exports = { ROOT, DIST, REDIS_URL, closedLoop, createBenchDatabase, createProject, freePort, startApp, percentile };
