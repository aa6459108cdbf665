'use strict';
/* Shared helpers of the contacts/events benchmarks (plain CommonJS over the built dist/). */
const { execFileSync, fork, spawn } = require('node:child_process');
const { existsSync, readFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { randomBytes } = require('node:crypto');
const http = require('node:http');
const net = require('node:net');
const { join } = require('node:path');
const { Client } = require('pg');

const ROOT = join(__dirname, '..');
/** The build to run (default dist/; BENCH_DIST points elsewhere, e.g. a private build). */
const DIST = process.env.BENCH_DIST || join(ROOT, 'dist');
const PG_ADMIN_URL = process.env.BENCH_PG_URL || 'postgresql://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379';
const SECRET = 'bench-secret-bench-secret-bench-secret-0123456789';

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
      APP_SECRET: SECRET,
      LOG_LEVEL: 'warn',
      ...env,
      PORT: String(port),
    },
    stdio: ['ignore', process.env.BENCH_APP_STDOUT ? 'inherit' : 'ignore', 'inherit'],
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

/** The local SMTP sink (bench/smtp-sink.js) in a process of its own: `port`, `stats()`, `reset()`. */
function startSink() {
  const child = fork(join(__dirname, 'smtp-sink.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ask = (type, extra = {}) =>
    new Promise((resolve) => {
      const onMessage = (m) => {
        if (m.type === type) {
          child.off('message', onMessage);
          resolve(m);
        }
      };
      child.on('message', onMessage);
      child.send({ type, ...extra });
    });
  return new Promise((resolve) => {
    child.once('message', (m) =>
      resolve({
        port: m.port,
        stats: () => ask('stats'),
        reset: () => ask('reset'),
        throttle: (domain, perSecond) => ask('throttle', { domain, perSecond }),
        child,
      }),
    );
  });
}

/** A worker process (`node dist/main.js`, APP_ROLE from env) serves no HTTP: ready once its heartbeat file names it with no problem. */
async function startWorker(env, nodeArgs = []) {
  const heartbeat = join(tmpdir(), `mailwright-worker-${env.QUEUE_PREFIX}.json`);
  const child = spawn(process.execPath, [...nodeArgs, join(DIST, 'main.js')], {
    env: {
      PATH: process.env.PATH || '',
      NODE_PATH: join(ROOT, 'node_modules'),
      REDIS_URL,
      APP_SECRET: SECRET,
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', process.env.BENCH_APP_STDOUT ? 'inherit' : 'ignore', 'inherit'],
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the worker exited with code ${child.exitCode}`);
    if (existsSync(heartbeat)) {
      try {
        const beat = JSON.parse(readFileSync(heartbeat, 'utf8'));
        if (beat.pid === child.pid && beat.problems.length === 0) break;
      } catch {
        // being replaced
      }
    }
    if (Date.now() > deadline) throw new Error('the worker did not report a healthy heartbeat');
    await sleep(100);
  }
  return {
    pid: child.pid,
    /** SIGTERM, then SIGKILL after 10 s (a RUN job in progress holds the worker's shutdown); answers whether it was killed. */
    stop: async () => {
      if (child.exitCode !== null) return false;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      let timer;
      const killed = await Promise.race([exited.then(() => false), new Promise((resolve) => (timer = setTimeout(() => resolve(true), 10_000)))]);
      clearTimeout(timer);
      if (killed) {
        child.kill('SIGKILL');
        await exited;
      }
      return killed;
    },
  };
}

/**
 * The plain (not primary, not unique) indexes of `tables`, dropped so that a bulk load runs several
 * times faster; the answer re-creates them with the same definitions. A partitioned table's index
 * reads `ON ONLY` in its definition, which would re-create it on the parent alone (INVALID, and no
 * partition indexed): it is re-created on the whole table.
 */
async function dropPlainIndexes(pg, tables) {
  const { rows: indexes } = await pg.query(
    `SELECT indexname, pg_get_indexdef(i.indexrelid) AS def
     FROM pg_indexes x JOIN pg_class ic ON ic.relname = x.indexname JOIN pg_index i ON i.indexrelid = ic.oid
     WHERE x.tablename = ANY($1) AND NOT i.indisprimary AND NOT i.indisunique`,
    [tables],
  );
  for (const index of indexes) await pg.query(`DROP INDEX "${index.indexname}"`);
  return async () => {
    for (const index of indexes) await pg.query(index.def.replace(/ ON ONLY /, ' ON '));
  };
}

/**
 * SQL functions for seeding: `bench_uuid(i, variant)`, a UUIDv7-shaped id derived from the row
 * number (contacts; events and emails point at them without a join), and `bench_uuid_at(ts, i,
 * variant)`, one whose time bits are `ts`, for rows of the partitioned tables: the service bounds
 * a lookup by id with the id's own time (mw_id_time_lo/hi), so an email or event whose id time is
 * far from its created_at would not be found.
 */
async function createBenchUuidFunctions(pg) {
  await pg.query(`
    CREATE FUNCTION bench_uuid(i bigint, variant text) RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
      SELECT (lpad(to_hex(1790000000000 + i), 12, '0') || '7000' || variant || lpad(to_hex(i), 12, '0'))::uuid
    $$`);
  await pg.query(`
    CREATE FUNCTION bench_uuid_at(ts timestamptz, i bigint, variant text) RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
      SELECT (lpad(to_hex(floor(extract(epoch FROM ts) * 1000)::bigint), 12, '0') || '7000' || variant
              || lpad(to_hex(i), 12, '0'))::uuid
    $$`);
}

/**
 * `count` loops calling `step(w, i)` (loop w, its i-th step) until stopped; every step's start
 * time and latency is kept (errors counted, the first three printed after `label`). `setup(w)`
 * runs before a loop's first step, `teardown(w)` after its last.
 */
function timedLoops(count, label, step, { setup = async () => {}, teardown = async () => {} } = {}) {
  const samples = [];
  let errors = 0;
  let running = true;
  const loops = Array.from({ length: count }, async (_, w) => {
    await setup(w);
    let i = 0;
    while (running) {
      const at = Date.now();
      const t0 = process.hrtime.bigint();
      try {
        await step(w, i++);
        samples.push({ at, ms: Number(process.hrtime.bigint() - t0) / 1e6 });
      } catch (error) {
        errors++;
        if (errors <= 3) console.error(`${label} failed:`, error.message);
      }
    }
    await teardown(w);
  });
  return {
    samples,
    errors: () => errors,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** `count` writers, each on its own connection, calling `write(client, w, i)` in timedLoops. */
function startWriters(url, count, write) {
  const clients = [];
  return timedLoops(count, 'write', (w, i) => write(clients[w], w, i), {
    setup: async (w) => {
      clients[w] = new Client({ connectionString: url });
      await clients[w].connect();
    },
    teardown: (w) => clients[w].end(),
  });
}

/** Count, p50, p99 and max of the samples (startWriters) that started in [from, to). */
function latencySummary(samples, from, to) {
  const ms = samples.filter((s) => s.at >= from && s.at < to).map((s) => s.ms);
  ms.sort((a, b) => a - b);
  return { writes: ms.length, p50: percentile(ms, 50), p99: percentile(ms, 99), max: ms[ms.length - 1] };
}

/** Deletes the Redis keys matching `pattern` (a bench's queue prefix), a thousand per DEL. */
async function deleteRedisKeys(pattern) {
  const { Redis } = require('ioredis');
  const redis = new Redis(REDIS_URL);
  try {
    const keys = await redis.keys(pattern);
    for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000));
  } finally {
    redis.disconnect();
  }
}

function rssBytes(pid) {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : 0;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * POSTs JSON to `path` over keep-alive connections (at most `maxSockets`): post(body) resolves
 * with the answer's status and, for a status outside 2xx, its text; it rejects on a connection
 * error, or after `timeoutMs` (error code TIMEOUT) when given.
 */
function jsonPoster(base, path, headers, maxSockets, timeoutMs = 0) {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const url = new URL(path, base);
  const post = (body) =>
    new Promise((resolve, reject) => {
      const payload = JSON.stringify(body);
      const req = http.request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
        },
        (res) => {
          const status = res.statusCode;
          let text = '';
          if (status >= 200 && status < 300) res.resume();
          else {
            res.setEncoding('utf8');
            res.on('data', (chunk) => (text += chunk));
          }
          res.on('end', () => resolve({ status, text }));
          res.on('error', reject);
        },
      );
      if (timeoutMs > 0)
        req.setTimeout(timeoutMs, () => req.destroy(Object.assign(new Error('request timed out'), { code: 'TIMEOUT' })));
      req.on('error', reject);
      req.end(payload);
    });
  // Its connections close with the agent (free ones do not hold the process up in any case).
  post.destroy = () => agent.destroy();
  return post;
}

/** jsonPoster with an API key, for callers that only need a 200: anything else rejects with `HTTP <status>`. */
function okPoster(base, path, key, maxSockets) {
  const post = jsonPoster(base, path, { authorization: `Bearer ${key}` }, maxSockets);
  const ok = async (body) => {
    const { status } = await post(body);
    if (status !== 200) throw new Error(`HTTP ${status}`);
  };
  ok.destroy = post.destroy;
  return ok;
}

/**
 * DELIVERY_GROUP_RATES for benches that are not about pacing: every provider group far above the
 * rates they measure, so EMAIL_RATE_PER_SECOND alone limits them as before.
 */
const LIFTED_GROUP_RATES = 'google=1000000,microsoft=1000000,yahoo=1000000,apple=1000000,other=1000000';

module.exports = {
  ROOT,
  LIFTED_GROUP_RATES,
  DIST,
  REDIS_URL,
  closedLoop,
  createBenchDatabase,
  createProject,
  createBenchUuidFunctions,
  latencySummary,
  deleteRedisKeys,
  dropPlainIndexes,
  freePort,
  jsonPoster,
  okPoster,
  percentile,
  rssBytes,
  sleep,
  startApp,
  startSink,
  startWorker,
  startWriters,
  timedLoops,
};
