'use strict';
/**
 * Outbound webhook deliveries per second to a local receiver, beside a
 * baseline measured in the same run. Target: >= 50% of the baseline's rate.
 *
 * Setup (the real path end to end):
 * - a receiver: a node:http server in a child process (this file, role
 *   `receiver`) that answers 200 with an empty body as soon as a request has
 *   arrived, counts arrivals (and distinct webhook-ids), and checks the
 *   Standard Webhooks signature of every 100th one after answering;
 * - the service split by APP_ROLE: an API process (APP_ROLE=api) and, later,
 *   one worker process (APP_ROLE=worker), both WEBHOOK_ALLOW_PRIVATE=true
 *   (the receiver is on loopback), their own database and queue prefix;
 * - BENCH_ENDPOINTS endpoints (default 1), created with POST /webhooks,
 *   listening to `contact.*`, each at its own path of the receiver;
 * - BENCH_DELIVERIES deliveries (default 20,000) made by the API: the
 *   contacts are seeded subscribed with SQL, then one POST /v1/track per
 *   contact with `subscribed: false` records the tracked event and
 *   `contact.unsubscribed` in one transaction, the outbox trigger writes one
 *   delivery row per endpoint in that transaction, and after commit the
 *   API's dispatcher adds their jobs to the webhooks queue. No worker runs
 *   yet, so the outbox and the queue are pre-filled when it starts.
 *
 * Measured: the worker process is started on the pre-filled queue; the rate
 * is deliveries / (last arrival - first arrival) at the receiver (the
 * worker's boot is not delivery time; boot-to-last is printed too), then the
 * rows are checked (all SUCCEEDED, no duplicate arrival).
 *
 * Baseline (same run, once before the worker starts and once after it has
 * stopped; the figure is the mean, as the machine is shared and its load
 * drifts): the issue's bare `fetch` loop (Node's built-in fetch) in a child
 * process (role `baseline`); the same with a bare node:http keep-alive loop,
 * a faster client, is printed beside it. Each posts the same deliveries (the ids and payloads read from
 * webhook_deliveries) to the same receiver paths, each signed at send time as
 * the service does (webhook-id / -timestamp / -signature, HMAC-SHA256 with
 * the endpoint's secret, the same headers), reading each response, with the
 * service's concurrency towards the receiver: min(64 worker slots, 4 in
 * flight per endpoint x endpoints), i.e. 4 for one endpoint
 * (src/webhooks/webhooks.processor.ts WEBHOOK_CONCURRENCY, webhook-sender.ts
 * PER_ENDPOINT_IN_FLIGHT). Its list is in memory before it starts, as the
 * service's queue is filled before the worker starts; its rate is measured
 * the same way, first to last arrival at the receiver.
 *
 * Also printed: the CPU each delivery cost all the processes involved
 * (service: worker, its database's backends, the shared redis-server, the
 * receiver; baseline: sender, receiver), which the machine's other load
 * disturbs less than throughput.
 *
 *   npm run bench:webhooks            (builds first)
 *   BENCH_DELIVERIES=5000 BENCH_ENDPOINTS=4 node bench/webhooks.js
 *   BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=var/prof" node bench/webhooks.js   (profiles the worker)
 */
const http = require('node:http');
const { fork, spawn } = require('node:child_process');
const { createHmac, timingSafeEqual } = require('node:crypto');
const { backendsDelta, machineCpuSeconds, postgresCpuSeconds, procCpuSeconds, redisCpuSeconds } = require('./cpu');
const { performance } = require('node:perf_hooks');

const ROLE = process.argv[2];

/* ------------------------------------------------------------------ receiver */

function runReceiver() {
  const secrets = new Map(); // path -> signing key
  let count = 0;
  let firstAt = 0;
  let lastAt = 0;
  let checked = 0;
  let badSignatures = 0;
  let ids = new Set();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      res.writeHead(200, { 'content-length': '0' });
      res.end();
      const now = performance.now();
      if (count === 0) firstAt = now;
      lastAt = now;
      count++;
      const id = req.headers['webhook-id'];
      ids.add(id);
      if (count % 100 === 1) {
        checked++;
        const key = secrets.get(req.url);
        const expected = key && createHmac('sha256', key).update(`${id}.${req.headers['webhook-timestamp']}.${Buffer.concat(chunks)}`).digest();
        const given = Buffer.from(String(req.headers['webhook-signature'] || '').replace(/^v1,/, ''), 'base64');
        if (!expected || given.length !== expected.length || !timingSafeEqual(given, expected)) badSignatures++;
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  server.on('error', (error) => console.error('receiver:', error.message));
  server.listen(0, '127.0.0.1', () => process.send({ type: 'ready', port: server.address().port }));
  process.on('message', (m) => {
    if (m.type === 'secret') {
      secrets.set(m.path, Buffer.from(m.secret.replace(/^whsec_/, ''), 'base64'));
      process.send({ type: 'secret' });
    }
    if (m.type === 'stats') {
      process.send({ type: 'stats', count, distinct: ids.size, firstAt, lastAt, checked, badSignatures, cpu: cpuSeconds() });
    }
    if (m.type === 'reset') {
      count = 0;
      firstAt = 0;
      lastAt = 0;
      checked = 0;
      badSignatures = 0;
      ids = new Set();
      process.send({ type: 'reset' });
    }
    if (m.type === 'stop') {
      server.closeAllConnections();
      server.close(() => process.exit(0));
    }
  });
}

/* ------------------------------------------------------------------ baseline */

function runBaseline() {
  process.once('message', async ({ port, concurrency, secrets, deliveries, client }) => {
    // The service's client: node:http, keep-alive, maxSockets 256 (src/common/http/outbound-http.ts).
    const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
    const keys = new Map(Object.entries(secrets).map(([path, secret]) => [path, Buffer.from(secret.replace(/^whsec_/, ''), 'base64')]));
    let errors = 0;
    const headersOf = (d) => {
      const timestamp = Math.floor(Date.now() / 1000);
      return {
        'content-type': 'application/json',
        'user-agent': 'Mailwright-Webhooks/1',
        'webhook-id': d.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': `v1,${createHmac('sha256', keys.get(d.path)).update(`${d.id}.${timestamp}.${d.payload}`).digest('base64')}`,
      };
    };
    // The issue's baseline: a bare fetch loop (Node's built-in fetch, keep-alive by default).
    const postFetch = async (d) => {
      try {
        const res = await fetch(`http://127.0.0.1:${port}${d.path}`, { method: 'POST', headers: headersOf(d), body: d.payload });
        await res.text();
        if (res.status < 200 || res.status >= 300) errors++;
      } catch {
        errors++;
      }
    };
    const postHttp = (d) =>
      new Promise((resolve) => {
        const timestamp = Math.floor(Date.now() / 1000);
        const signature = `v1,${createHmac('sha256', keys.get(d.path)).update(`${d.id}.${timestamp}.${d.payload}`).digest('base64')}`;
        const req = http.request(
          {
            agent,
            host: '127.0.0.1',
            port,
            path: d.path,
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'user-agent': 'Mailwright-Webhooks/1',
              'webhook-id': d.id,
              'webhook-timestamp': String(timestamp),
              'webhook-signature': signature,
              'content-length': Buffer.byteLength(d.payload),
            },
          },
          (res) => {
            const chunks = [];
            res.on('data', (chunk) => chunks.push(chunk));
            res.on('end', () => {
              Buffer.concat(chunks).toString('utf8');
              if (res.statusCode < 200 || res.statusCode >= 300) errors++;
              resolve();
            });
          },
        );
        req.on('error', () => {
          errors++;
          resolve();
        });
        req.end(d.payload);
      });
    const post = client === 'fetch' ? postFetch : postHttp;
    let next = 0;
    const started = performance.now();
    const cpuBefore = cpuSeconds();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < deliveries.length) await post(deliveries[next++]);
      }),
    );
    process.send({ type: 'done', errors, seconds: (performance.now() - started) / 1000, cpu: cpuSeconds() - cpuBefore });
    agent.destroy();
    process.disconnect();
  });
  process.send({ type: 'ready' });
}

/* ---------------------------------------------------------------------- main */

async function main() {
  const { join } = require('node:path');
  const { Client } = require('pg');
  const { DIST, REDIS_URL, createBenchDatabase, createProject, jsonPoster, startApp, deleteRedisKeys } = require('./support');

  const DELIVERIES = Number(process.env.BENCH_DELIVERIES || 20_000);
  const ENDPOINTS = Number(process.env.BENCH_ENDPOINTS || 1);
  const NODE_ARGS = (process.env.BENCH_NODE_ARGS || '').split(' ').filter(Boolean);
  const { WEBHOOK_CONCURRENCY } = require(join(DIST, 'webhooks/webhooks.processor.js'));
  const { PER_ENDPOINT_IN_FLIGHT } = require(join(DIST, 'webhooks/webhook-sender.js'));
  const CONCURRENCY = Math.min(WEBHOOK_CONCURRENCY, PER_ENDPOINT_IN_FLIGHT * ENDPOINTS);
  const EVENTS = Math.ceil(DELIVERIES / ENDPOINTS);
  const PRODUCER_CONCURRENCY = 32;
  const PREFIX = `mwbenchwh${process.pid}`;
  const SECRET = 'bench-secret-bench-secret-bench-secret-0123456789';

  const receiver = await startChild('receiver');
  const db = await createBenchDatabase('webhooks');
  const { project, secretKey } = createProject(db.url, 'Webhooks bench');
  const common = { DATABASE_URL: db.url, QUEUE_PREFIX: PREFIX, APP_SECRET: SECRET, WEBHOOK_ALLOW_PRIVATE: 'true' };
  const pg = new Client({ connectionString: db.url });
  await pg.connect();
  let api;
  let worker;
  let queue;
  try {
    api = await startApp({ ...common, APP_ROLE: 'api', API_RATE_LIMIT_PER_MINUTE: '10000000' });
    const auth = { authorization: `Bearer ${secretKey}`, 'content-type': 'application/json' };
    const secrets = {};
    for (let k = 0; k < ENDPOINTS; k++) {
      const path = `/hooks/${k}`;
      const res = await fetch(`${api.base}/webhooks`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ url: `http://127.0.0.1:${receiver.port}${path}`, events: ['contact.*'] }),
      });
      if (res.status !== 201) throw new Error(`POST /webhooks answered ${res.status}: ${await res.text()}`);
      secrets[path] = (await res.json()).data.secret;
      await receiver.ask('secret', { path, secret: secrets[path] });
    }

    await pg.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, suppressed, data, created_at, updated_at)
       SELECT mw_uuid_v7(), $1, 'user' || i || '@bench.example', TRUE, FALSE, '{}', now(), now()
         FROM generate_series(0, $2::int - 1) AS i`,
      [project.id, EVENTS],
    );
    await pg.query('VACUUM ANALYZE contacts');

    console.log(`producing ${DELIVERIES} deliveries: ${EVENTS} POST /v1/track {subscribed:false} x ${ENDPOINTS} endpoint(s) ...`);
    const track = jsonPoster(api.base, '/v1/track', { authorization: `Bearer ${secretKey}` }, PRODUCER_CONCURRENCY);
    const producedAt = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: PRODUCER_CONCURRENCY }, async () => {
        while (next < EVENTS) {
          const i = next++;
          const { status } = await track({
            email: `user${i}@bench.example`,
            event: 'plan_cancelled',
            subscribed: false,
            data: { plan: i % 3 ? 'free' : 'pro', reason: 'bench' },
          });
          if (status !== 200) throw new Error(`POST /v1/track answered ${status}`);
        }
      }),
    );
    track.destroy();
    const { Queue } = require('bullmq');
    queue = new Queue('webhooks', { connection: { url: REDIS_URL }, prefix: PREFIX });
    const counts = await queue.getJobCounts('waiting', 'delayed', 'active');
    const { rows: made } = await pg.query(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'PENDING'`);
    console.log(
      `  ${((Date.now() - producedAt) / 1000).toFixed(1)} s; outbox: ${made[0].n} PENDING rows; queue: ${counts.waiting} waiting, ${counts.delayed} delayed`,
    );
    if (made[0].n !== EVENTS * ENDPOINTS) throw new Error(`expected ${EVENTS * ENDPOINTS} delivery rows, found ${made[0].n}`);
    const total = made[0].n;

    const { rows: deliveries } = await pg.query(
      `SELECT d.id, d.payload, w.url FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id ORDER BY d.id`,
    );
    const sample = deliveries[0].payload;

    const toSend = deliveries.map((d) => ({ id: d.id, payload: d.payload, path: new URL(d.url).pathname }));
    const CLIENTS = { fetch: 'fetch loop (the issue\'s baseline)', http: 'node:http keep-alive loop' };
    const runBaselineOnce = async (label, client) => {
      console.log(`baseline ${label}: ${CLIENTS[client]} in a child process, ${CONCURRENCY} in flight, ${total} signed POSTs ...`);
      await receiver.ask('reset');
      const child = await startChild('baseline');
      const machine0 = machineCpuSeconds();
      const redis0 = redisCpuSeconds();
      const receiver0 = (await receiver.ask('stats')).cpu;
      const done = new Promise((resolve) => child.child.once('message', resolve));
      child.child.send({ port: receiver.port, concurrency: CONCURRENCY, secrets, deliveries: toSend, client });
      const result = await done;
      const stats = await receiver.ask('stats');
      const rate = stats.count / ((stats.lastAt - stats.firstAt) / 1000);
      const cpu = result.cpu + stats.cpu - receiver0;
      console.log(
        `  ${rate.toFixed(0)} deliveries/s (${stats.count} arrived, ${result.errors} errors, ${stats.badSignatures}/${stats.checked} bad signatures checked)`,
      );
      console.log(
        `  CPU: sender ${perDelivery(result.cpu, total)}, receiver ${perDelivery(stats.cpu - receiver0, total)}, ` +
          `redis-server (shared) ${(redisCpuSeconds() - redis0).toFixed(1)} s, machine busy ${usage(machine0, machineCpuSeconds())}`,
      );
      return { rate, cpu, ok: stats.count === total && result.errors === 0 && stats.badSignatures === 0 };
    };
    const before = { fetch: await runBaselineOnce('(before)', 'fetch'), http: await runBaselineOnce('(before)', 'http') };

    await receiver.ask('reset');
    console.log(`service: one worker process (APP_ROLE=worker) on the pre-filled queue ...`);
    const bootAt = performance.now();
    worker = startWorker({ ...common, APP_ROLE: 'worker' }, NODE_ARGS);
    const dbName = new URL(db.url).pathname.slice(1);
    const snapshot = (receiverCpu) => ({
      worker: procCpuSeconds(worker.pid),
      api: procCpuSeconds(api.child.pid),
      postgres: postgresCpuSeconds(dbName),
      redis: redisCpuSeconds(),
      machine: machineCpuSeconds(),
      receiver: receiverCpu,
    });
    const progress = process.env.BENCH_VERBOSE
      ? setInterval(async () => {
          const c = await queue.getJobCounts('waiting', 'active', 'delayed', 'completed');
          const r = await receiver.ask('stats');
          console.log(`    ${JSON.stringify(c)} arrived ${r.count}`);
        }, 1000)
      : null;
    const { stats, first } = await waitFor(receiver, total, 600_000, (s) => snapshot(s.cpu));
    const last = snapshot(stats.cpu);
    if (progress) clearInterval(progress);
    const bootToLast = (performance.now() - bootAt) / 1000;
    const serviceRate = total / ((stats.lastAt - stats.firstAt) / 1000);
    const rowsDeadline = Date.now() + 60_000;
    let statuses;
    for (;;) {
      const { rows } = await pg.query(`SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status ORDER BY status`);
      statuses = Object.fromEntries(rows.map((r) => [r.status, r.n]));
      if (statuses.SUCCEEDED === total || Date.now() > rowsDeadline) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const after = await receiver.ask('stats');
    console.log(
      `  ${serviceRate.toFixed(0)} deliveries/s (boot to last arrival ${bootToLast.toFixed(1)} s); rows: ${JSON.stringify(statuses)}; ` +
        `arrivals ${after.count} (${after.count - after.distinct} duplicate), ${after.badSignatures}/${after.checked} bad signatures checked`,
    );
    console.log(
      `  CPU from first to last arrival: worker ${perDelivery(last.worker - first.worker, total)}, receiver ${perDelivery(last.receiver - first.receiver, total)}, ` +
        `API ${(last.api - first.api).toFixed(1)} s, postgres backends of this database ${perDelivery(backendsDelta(first.postgres, last.postgres), total)}, ` +
        `redis-server (shared) ${perDelivery(last.redis - first.redis, total)}, machine busy ${usage(first.machine, last.machine)}`,
    );

    await worker.stop();
    const after_ = { http: await runBaselineOnce('(after)', 'http'), fetch: await runBaselineOnce('(after)', 'fetch') };
    const serviceCpu =
      last.worker - first.worker + (last.receiver - first.receiver) + backendsDelta(first.postgres, last.postgres) + (last.redis - first.redis);
    const baseline = (client) => ({
      rate: (before[client].rate + after_[client].rate) / 2,
      cpu: (before[client].cpu + after_[client].cpu) / 2,
      line: `mean of ${before[client].rate.toFixed(0)} before and ${after_[client].rate.toFixed(0)} after the service`,
    });
    const viaFetch = baseline('fetch');
    const viaHttp = baseline('http');

    const ratio = serviceRate / viaFetch.rate;
    console.log(`\n${total} deliveries to ${ENDPOINTS} endpoint(s), payload ~${Buffer.byteLength(sample)} bytes, ${CONCURRENCY} in flight`);
    console.log(`  baseline (fetch loop):     ${viaFetch.rate.toFixed(0).padStart(6)} deliveries/s (${viaFetch.line})`);
    console.log(`  node:http loop:            ${viaHttp.rate.toFixed(0).padStart(6)} deliveries/s (${viaHttp.line})`);
    console.log(`  service  (worker):         ${serviceRate.toFixed(0).padStart(6)} deliveries/s`);
    console.log(`  ratio service/fetch loop:  ${(ratio * 100).toFixed(1)}%  (target >= 50%)`);
    console.log(`  ratio service/node:http:   ${((serviceRate / viaHttp.rate) * 100).toFixed(1)}%  (the faster client, for reference)`);
    for (const [name, b] of [['fetch loop', viaFetch], ['node:http loop', viaHttp]]) {
      console.log(
        `  CPU per delivery, all processes: service ${((serviceCpu / total) * 1e6).toFixed(0)} us (worker + postgres + redis + receiver), ` +
          `${name} ${((b.cpu / total) * 1e6).toFixed(0)} us (sender + receiver): ratio ${((b.cpu / serviceCpu) * 100).toFixed(1)}%`,
      );
    }
    const correct = statuses.SUCCEEDED === total && after.badSignatures === 0 && [before, after_].every((b) => b.fetch.ok && b.http.ok);
    console.log(`  deliveries all SUCCEEDED, signatures valid: ${correct ? 'yes' : 'NO'}`);
    console.log(`  target met:                ${ratio >= 0.5 && correct ? 'yes' : 'NO'}`);
  } finally {
    if (queue) await queue.close();
    await pg.end();
    if (worker) await worker.stop();
    if (api) await api.stop();
    receiver.child.send({ type: 'stop' });
    await db.drop();
    await deleteRedisKeys(`${PREFIX}:*`);
  }

  /** A worker process listens on no port: started without waiting for /health/ready. */
  function startWorker(env, nodeArgs) {
    const child = spawn(process.execPath, [...nodeArgs, join(DIST, 'main.js')], {
      env: { PATH: process.env.PATH || '', REDIS_URL, LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    return {
      pid: child.pid,
      stop: async () => {
        // Nest re-raises SIGTERM after its shutdown, so the child ends by signal (exitCode stays null).
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGTERM');
        await new Promise((resolve) => child.once('exit', resolve));
      },
    };
  }
}

function perDelivery(cpuSeconds, deliveries) {
  return `${cpuSeconds.toFixed(1)} s (${((cpuSeconds / deliveries) * 1e6).toFixed(0)} us/delivery)`;
}

function usage(before, after) {
  const busy = after.busy - before.busy;
  const total = after.total - before.total;
  return `${((busy / total) * 100).toFixed(0)}% (${busy.toFixed(1)} of ${total.toFixed(1)} core-seconds)`;
}

function cpuSeconds() {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

/** This file in another role, with an IPC channel; resolves on its `ready` message. */
function startChild(role) {
  const child = fork(__filename, [role], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
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
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${role} exited with ${code}`)));
    child.once('message', (m) => resolve({ port: m.port, ask, child }));
  });
}

/** Polls the receiver until `target` distinct deliveries arrived; `onFirst(stats)` runs once arrivals have begun. */
async function waitFor(receiver, target, timeoutMs, onFirst) {
  const deadline = Date.now() + timeoutMs;
  let first = null;
  for (;;) {
    const stats = await receiver.ask('stats');
    if (!first && stats.count > 0) first = onFirst(stats);
    if (stats.distinct >= target) return { stats, first };
    if (Date.now() > deadline) throw new Error(`the receiver got ${stats.distinct} of ${target}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

if (ROLE === 'receiver') runReceiver();
else if (ROLE === 'baseline') runBaseline();
else {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
