'use strict';
/**
 * Open pixel (GET /t/o/{token}) and tracked link (GET /t/c/{token}) at 16
 * keep-alive connections against the built service (a child `node
 * dist/main.js`, APP_ROLE=api, its own database, hits recorded as in
 * production), beside a baseline measured in the same run: a bare Fastify
 * server in a child process answering the same 200 GIF / 302 with no token
 * check and no recording. Tokens name 200 real email records (created through
 * POST /v1/send; they stay QUEUED, no worker runs) and, for clicks, one of
 * 20 URLs each. Targets: at least 50% of the baseline's throughput, p99 under
 * 10 ms.
 *
 *   npm run bench:tracking          (builds first)
 *   BENCH_SECONDS=15 npm run bench:tracking
 *   BENCH_CLICK_FIRST=1 npm run bench:tracking   (clicks measured first)
 */
const http = require('node:http');
const { fork } = require('node:child_process');
const { join } = require('node:path');
const { Client } = require('pg');
const { DIST, closedLoop, createBenchDatabase, createProject, freePort, startApp } = require('./support');

const { TrackingTokens } = require(join(DIST, 'engagement/tracking-token.js'));

const CONCURRENCY = 16;
const SECONDS = Number(process.env.BENCH_SECONDS || 10);
const WARMUP_SECONDS = 2;
const SECRET = 'bench-secret-bench-secret-bench-secret-0123456789';
const EMAILS = 200;

function caller(port, paths, expected) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  return (i) =>
    new Promise((resolve, reject) => {
      const req = http.request({ agent, host: '127.0.0.1', port, path: paths[i % paths.length], method: 'GET' }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === expected ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end();
    });
}

function fmt(r) {
  return `${r.perSecond.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(2).padStart(5)} ms  p99 ${r.p99
    .toFixed(2)
    .padStart(5)} ms  (${r.requests} ok, ${r.errors} errors)`;
}

async function startBaseline() {
  const port = await freePort();
  const child = fork(join(__dirname, 'tracking-baseline.js'), [], { env: { ...process.env, PORT: String(port) } });
  await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`baseline exited with ${code}`)));
  });
  return { port, stop: () => child.kill('SIGTERM') };
}

async function createEmails(base, key) {
  const ids = [];
  for (let batch = 0; batch < EMAILS / 50; batch++) {
    const res = await fetch(`${base}/v1/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        to: Array.from({ length: 50 }, (_, i) => `reader${batch * 50 + i}@bench.example`),
        from: 'news@bench.example',
        subject: 'News',
        body: '<p><a href="https://example.com/landing">Read</a></p>',
        track: true,
      }),
    });
    if (res.status !== 200) throw new Error(`POST /v1/send: HTTP ${res.status} ${await res.text()}`);
    ids.push(...(await res.json()).data.emails.map((e) => e.id));
  }
  return ids;
}

async function main() {
  const db = await createBenchDatabase('tracking');
  const project = createProject(db.url, 'bench-tracking');
  const app = await startApp({
    DATABASE_URL: db.url,
    APP_ROLE: 'api',
    APP_SECRET: SECRET,
    REQUIRE_VERIFIED_SENDER: 'false',
    API_RATE_LIMIT_PER_MINUTE: '10000000',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL || 'warn',
  }, (process.env.BENCH_NODE_ARGS || '').split(' ').filter(Boolean));
  const baseline = await startBaseline();
  try {
    const ids = await createEmails(app.base, project.secretKey);
    const tokens = new TrackingTokens(SECRET);
    const opens = ids.map((id) => `/t/o/${tokens.signOpen(id)}`);
    const clicks = ids.flatMap((id) =>
      Array.from({ length: 20 }, (_, n) => `/t/c/${tokens.signClick(id, `https://example.com/landing?n=${n}&utm_source=bench`)}`),
    );
    const appPort = Number(new URL(app.base).port);
    const pixel = {
      'pixel baseline': caller(baseline.port, opens, 200),
      'pixel service ': caller(appPort, opens, 200),
    };
    const click = {
      'click baseline': caller(baseline.port, clicks, 302),
      'click service ': caller(appPort, clicks, 302),
    };
    // BENCH_CLICK_FIRST=1 swaps the order, to see what the order itself costs.
    const runs = process.env.BENCH_CLICK_FIRST ? { ...click, ...pixel } : { ...pixel, ...click };
    for (const fn of Object.values(runs)) await closedLoop(CONCURRENCY, WARMUP_SECONDS, fn);
    const results = {};
    for (const [name, fn] of Object.entries(runs)) results[name] = await closedLoop(CONCURRENCY, SECONDS, fn);

    const admin = new Client({ connectionString: db.url });
    await admin.connect();
    await new Promise((r) => setTimeout(r, 500)); // the last batch of hits
    const { rows } = await admin.query('SELECT sum(opens)::int AS opens, sum(clicks)::int AS clicks FROM emails');
    const events = await admin.query(`SELECT name, count(*)::int AS n FROM events WHERE name IN ('email.opened', 'email.clicked') GROUP BY name ORDER BY name`);
    await admin.end();

    console.log(`GET /t/o and /t/c, ${CONCURRENCY} keep-alive connections, ${SECONDS}s each, ${EMAILS} emails`);
    for (const [name, r] of Object.entries(results)) console.log(`  ${name}: ${fmt(r)}`);
    let met = true;
    for (const kind of ['pixel', 'click']) {
      const s = results[`${kind} service `];
      const b = results[`${kind} baseline`];
      const ratio = s.perSecond / b.perSecond;
      met = met && ratio >= 0.5 && s.p99 < 10 && s.errors === 0;
      console.log(`  ${kind}: ratio service/baseline ${(ratio * 100).toFixed(1)}% (target >= 50%), service p99 ${s.p99.toFixed(2)} ms (target < 10 ms)`);
    }
    const served = results['pixel service '].requests + results['click service '].requests;
    console.log(`  recorded: opens ${rows[0].opens} + clicks ${rows[0].clicks} of ${served} served after warm-up (warm-up hits included); events ${JSON.stringify(events.rows)}`);
    console.log(`  targets met: ${met ? 'yes' : 'NO'}`);
  } finally {
    baseline.stop();
    await app.stop();
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
