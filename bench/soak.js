'use strict';
/**
 * Soak test (issue 15 item 4; not run in CI). One API process (APP_ROLE=api)
 * and one worker process (APP_ROLE=worker) of a build, with a database of
 * their own on the local Postgres, a queue prefix of their own on the local
 * Redis, and delivery to a local SMTP sink (bench/smtp-sink.js, its own
 * process). It
 *
 * 1. measures capacity briefly, with both processes up:
 *    - track: POST /v1/track closed loop, 64 connections, SOAK_MEASURE_SECONDS
 *      (15) after 3 s of warm-up: requests/s;
 *    - send, end to end: SOAK_MEASURE_EMAILS (8,000) recipients through
 *      POST /v1/send (SOAK_RECIPIENTS = 10 a request, 16 connections) as fast
 *      as the API takes them, then until the sink has accepted the last one:
 *      recipients / (first request to last message at the sink). Delivery,
 *      not the API, is the limit, and a send load that delivery does not keep
 *      up with could never drain;
 * 2. offers an open-loop load (requests at a fixed rate whatever the answer
 *    times) for SOAK_MINUTES (10) at SOAK_LOAD (0.8) of that capacity. Track
 *    and send share the machine's two cores (each measured alone saturates
 *    them), so the load is split: tracks at LOAD x SHARE x track capacity and
 *    recipients at LOAD x (1 - SHARE) x send capacity, SOAK_TRACK_SHARE = 0.5
 *    by default; the mix is then 80% of what the machine does;
 * 3. every SOAK_SAMPLE_SECONDS (10) records API and worker RSS, heap and
 *    event-loop lag (the API's from its own GET /metrics, prom-client's
 *    default metrics; the worker serves no HTTP, so a preloaded probe,
 *    bench/soak-probe.js, measures it the same way), Postgres connections to
 *    its database, Redis used_memory (the whole server's), the depth of every
 *    queue (waiting + prioritized + delayed + active, without the recovery
 *    schedulers' next runs), the achieved rates, errors and latencies;
 * 4. stops the load and waits for the queues to drain (and every email to be
 *    final);
 * 5. writes SOAK_OUT_DIR (docs/soak)/report.md, soak.png (the chart) and
 *    soak.json (the data), via bench/soak-report.js.
 *
 * Verdict (issue 15): RSS growth over the last 5 minutes of load under 10%
 * per process (growth of the least-squares line through those samples; the
 * first-to-last figure is printed beside it); no error response (every
 * request of the run that did not answer 2xx, connection errors and
 * timeouts included, capacity measurement included); the queues empty
 * within 60 s of the load's end.
 *
 * The build: it compiles the working tree's src/ into var/soak-dist first
 * (never `npm run build`, which deletes a dist/ others may be using);
 * `--build-head` compiles the committed HEAD instead, without the working
 * tree's uncommitted changes; `--no-build` reuses var/soak-dist; BENCH_DIST
 * names another build to use as it is. Hold the benchmark lock while it runs:
 *
 *   flock /tmp/mw-bench.lock npm run soak
 *   SOAK_MINUTES=2 SOAK_OUT_DIR=var/soak-dry flock /tmp/mw-bench.lock npm run soak
 *   node bench/soak.js --track-capacity 3000 --send-capacity 300 --minutes 2
 *   flock /tmp/mw-bench.lock node bench/soak.js --build-head   (how docs/soak/ was made)
 *   node bench/soak.js --render docs/soak/soak.json      (report and chart again from the data)
 *
 * Flags (each also an environment variable): --minutes (SOAK_MINUTES),
 * --load (SOAK_LOAD), --track-share (SOAK_TRACK_SHARE), --track-capacity
 * (SOAK_TRACK_CAPACITY, req/s: skips that measurement), --send-capacity
 * (SOAK_SEND_CAPACITY, recipients/s: likewise; the processes then get only
 * the 5 s warm-up and start the load cold), --track-rate
 * (SOAK_TRACK_RATE) and --send-rate (SOAK_SEND_RATE, recipients/s) to set
 * the offered load outright, --out (SOAK_OUT_DIR), --build-head, --no-build,
 * --render <soak.json> (SOAK_BUILD_HEAD, SOAK_NO_BUILD, SOAK_RENDER; see
 * above); SOAK_SAMPLE_SECONDS, SOAK_MEASURE_SECONDS, SOAK_MEASURE_EMAILS,
 * SOAK_RECIPIENTS and SOAK_DRAIN_WAIT_SECONDS tune the rest. The email rate limit is
 * lifted (EMAIL_RATE_PER_SECOND=SOAK_EMAIL_RATE, default 1,000,000), as in
 * bench:delivery, and so is the API rate limit.
 */
const { execFileSync, fork, spawn } = require('node:child_process');
const { readFileSync, existsSync } = require('node:fs');
const { machineCpuSeconds, procCpuSeconds } = require('./cpu');
const os = require('node:os');
const { join, resolve } = require('node:path');
const { performance } = require('node:perf_hooks');

const ROOT = join(__dirname, '..');

// --name value / --name=value flags, each the same as its SOAK_* variable.
const FLAGS = {
  minutes: 'SOAK_MINUTES',
  load: 'SOAK_LOAD',
  'track-share': 'SOAK_TRACK_SHARE',
  'track-capacity': 'SOAK_TRACK_CAPACITY',
  'send-capacity': 'SOAK_SEND_CAPACITY',
  'track-rate': 'SOAK_TRACK_RATE',
  'send-rate': 'SOAK_SEND_RATE',
  out: 'SOAK_OUT_DIR',
  render: 'SOAK_RENDER',
  'build-head': 'SOAK_BUILD_HEAD',
  'no-build': 'SOAK_NO_BUILD',
};
const BOOLEAN_FLAGS = ['build-head', 'no-build'];
for (let i = 2; i < process.argv.length; i++) {
  const m = /^--([a-z-]+)(?:=(.*))?$/.exec(process.argv[i]);
  if (!m || !FLAGS[m[1]]) throw new Error(`unknown argument ${process.argv[i]} (flags: ${Object.keys(FLAGS).map((f) => `--${f}`).join(' ')})`);
  process.env[FLAGS[m[1]]] = m[2] ?? (BOOLEAN_FLAGS.includes(m[1]) ? '1' : process.argv[++i]);
}

// The build under test: compiled here into var/soak-dist (never `npm run build`, which deletes a
// dist/ that others may be running), unless BENCH_DIST names a build to use as it is.
let buildSource = 'given build (BENCH_DIST)';
if (!process.env.BENCH_DIST) {
  process.env.BENCH_DIST = join(ROOT, 'var/soak-dist');
  buildSource = process.env.SOAK_RENDER ? null : process.env.SOAK_NO_BUILD ? 'existing var/soak-dist' : build(process.env.BENCH_DIST, Boolean(process.env.SOAK_BUILD_HEAD));
}

/**
 * Compiles src/ into `outDir`: the working tree's, or with --build-head the committed HEAD's
 * (`git archive HEAD` of src/ and the tsconfigs into var/soak-src), without the working tree's
 * uncommitted changes, which in a shared checkout may be someone else's unfinished work.
 * Packages resolve from the checkout's node_modules either way.
 */
function build(outDir, head) {
  const { rmSync, mkdirSync } = require('node:fs');
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  let project = join(ROOT, 'tsconfig.build.json');
  if (head) {
    const srcDir = join(ROOT, 'var/soak-src');
    rmSync(srcDir, { recursive: true, force: true });
    mkdirSync(srcDir, { recursive: true });
    const tar = execFileSync('git', ['archive', '--format=tar', 'HEAD', 'src', 'tsconfig.json', 'tsconfig.build.json'], { cwd: ROOT, maxBuffer: 1 << 30 });
    execFileSync('tar', ['-x', '-C', srcDir], { input: tar });
    project = join(srcDir, 'tsconfig.build.json');
  }
  rmSync(outDir, { recursive: true, force: true });
  console.log(`building ${head ? `HEAD (${commit})` : 'the working tree'} into ${outDir} ...`);
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', project, '--outDir', outDir], { stdio: 'inherit' });
  return head ? `git archive of HEAD ${commit}` : 'working tree';
}

const { DIST, REDIS_URL, closedLoop, createBenchDatabase, createProject, freePort, jsonPoster, percentile, startApp } = require('./support');
const { writeReport } = require('./soak-report');

const num = (name, fallback) => (process.env[name] === undefined || process.env[name] === '' ? fallback : Number(process.env[name]));
const MINUTES = num('SOAK_MINUTES', 10);
const LOAD = num('SOAK_LOAD', 0.8);
const TRACK_SHARE = num('SOAK_TRACK_SHARE', 0.5);
const SAMPLE_SECONDS = num('SOAK_SAMPLE_SECONDS', 10);
const MEASURE_SECONDS = num('SOAK_MEASURE_SECONDS', 15);
const MEASURE_EMAILS = num('SOAK_MEASURE_EMAILS', 8000);
const RECIPIENTS = num('SOAK_RECIPIENTS', 10);
const EMAIL_RATE = num('SOAK_EMAIL_RATE', 1_000_000);
const DRAIN_LIMIT_SECONDS = 60;
const DRAIN_WAIT_SECONDS = num('SOAK_DRAIN_WAIT_SECONDS', 300);
const RSS_WINDOW_SECONDS = Math.min(300, (MINUTES * 60) / 2);
const OUT_DIR = resolve(ROOT, process.env.SOAK_OUT_DIR || 'docs/soak');

const TRACK_CONCURRENCY = 64; // as bench:track
const SEND_CONCURRENCY = 16;
const TRACK_EMAILS = 20_000;
const SEND_RECIPIENT_POOL = 50_000;
const EVENT_NAMES = ['signup', 'login', 'purchase', 'page_view', 'trial_started'];
/** monitorEventLoopDelay records whole timer intervals: an idle loop reads its resolution (prom-client's default, 10 ms). */
const LAG_RESOLUTION_S = 0.01;
const PREFIX = `mwsoak${process.pid}`;
const METRICS_TOKEN = `soak-metrics-token-${process.pid}-0123456789`;
const REQUEST_TIMEOUT_MS = 30_000;

// ---------------------------------------------------------------- requests

/** Every answer of the run, by phase and status ("200", "500", "ERR_ECONNRESET", "timeout"...). */
const ledger = { statuses: {}, firstErrors: [] };

function note(phase, status, detail) {
  const byPhase = (ledger.statuses[phase] ??= {});
  byPhase[status] = (byPhase[status] ?? 0) + 1;
  if (!/^2\d\d$/.test(status) && ledger.firstErrors.length < 10) ledger.firstErrors.push({ phase, status, detail: String(detail ?? '').slice(0, 300) });
}

/** POSTs JSON with `post` (jsonPoster); resolves `{status, ms}` and never rejects (a connection error or timeout is a status too). */
async function post(poster, body, phase) {
  const t0 = performance.now();
  let status;
  let detail;
  try {
    const answer = await poster(body);
    status = String(answer.status);
    detail = answer.text || undefined;
  } catch (error) {
    status = `ERR_${error.code ?? 'REQUEST'}`;
    detail = error.message;
  }
  note(phase, status, detail);
  return { status, ms: performance.now() - t0 };
}

function trackBody(i) {
  const n = Math.floor(Math.random() * TRACK_EMAILS);
  return {
    email: `user${n}@soak.example`,
    event: EVENT_NAMES[i % EVENT_NAMES.length],
    data: { plan: n % 3 ? 'free' : 'pro', step: i % 7, amount: { value: i % 100, persistent: false } },
  };
}

function sendBody(i) {
  const first = (i * RECIPIENTS) % SEND_RECIPIENT_POOL;
  return {
    to: Array.from({ length: RECIPIENTS }, (_, k) => `r${(first + k) % SEND_RECIPIENT_POOL}@soak.example`),
    from: { email: 'hello@soak.example', name: 'Soak' },
    subject: 'Your code {{ code }}',
    body: '<p>Hello {{ email }}, your code is <b>{{ code }}</b>.</p><p><a href="https://soak.example/account">Your account</a></p>',
    data: { code: String(100000 + (i % 900000)) },
  };
}

/**
 * An open loop: request i is issued at i / rate seconds whatever the earlier
 * ones are doing, up to `maxInFlight` at once (beyond that the request is
 * skipped and counted: the service is not keeping up). Per-window counters
 * are read and reset by `window()`.
 */
function openLoop(rate, maxInFlight, issue) {
  const state = { issued: 0, skipped: 0, inFlight: 0, answered: 0, ok: 0, errors: 0, latencies: [] };
  let win = { ok: 0, errors: 0, skipped: 0, latencies: [] };
  const started = performance.now();
  let seq = 0;
  const tick = () => {
    const due = Math.floor((rate * (performance.now() - started)) / 1000);
    while (seq < due) {
      seq++;
      if (state.inFlight >= maxInFlight) {
        state.skipped++;
        win.skipped++;
        continue;
      }
      state.issued++;
      state.inFlight++;
      issue(seq).then(({ status, ms }) => {
        state.inFlight--;
        state.answered++;
        if (/^2\d\d$/.test(status)) {
          state.ok++;
          win.ok++;
          state.latencies.push(ms);
          win.latencies.push(ms);
        } else {
          state.errors++;
          win.errors++;
        }
      });
    }
  };
  const timer = setInterval(tick, 5);
  return {
    state,
    window() {
      const w = win;
      win = { ok: 0, errors: 0, skipped: 0, latencies: [] };
      w.latencies.sort((a, b) => a - b);
      return { ok: w.ok, errors: w.errors, skipped: w.skipped, p50: percentile(w.latencies, 50), p99: percentile(w.latencies, 99) };
    },
    async stop() {
      clearInterval(timer);
      while (state.inFlight > 0) await sleep(20);
      state.latencies.sort((a, b) => a - b);
      const seconds = (performance.now() - started) / 1000;
      return {
        seconds,
        issued: state.issued,
        ok: state.ok,
        errors: state.errors,
        skipped: state.skipped,
        okPerSecond: state.ok / seconds,
        p50: percentile(state.latencies, 50),
        p99: percentile(state.latencies, 99),
        max: state.latencies[state.latencies.length - 1] ?? NaN,
      };
    },
  };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --------------------------------------------------------------- processes

function startSink() {
  const child = fork(join(__dirname, 'smtp-sink.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ask = (type) =>
    new Promise((resolveAsk) => {
      const onMessage = (m) => {
        if (m.type === type) {
          child.off('message', onMessage);
          resolveAsk(m);
        }
      };
      child.on('message', onMessage);
      child.send({ type });
    });
  return new Promise((resolveSink) => {
    child.once('message', (m) => resolveSink({ port: m.port, stats: () => ask('stats'), reset: () => ask('reset'), child }));
  });
}

/** The worker, with the lag probe preloaded and an IPC channel to it; ready when its heartbeat file lists no problem. */
async function startWorker(env) {
  const child = spawn(process.execPath, ['-r', join(__dirname, 'soak-probe.js'), join(DIST, 'main.js')], {
    env: {
      PATH: process.env.PATH || '',
      NODE_PATH: join(ROOT, 'node_modules'),
      REDIS_URL,
      APP_SECRET: 'bench-secret-bench-secret-bench-secret-0123456789',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const heartbeat = join(os.tmpdir(), `mailwright-worker-${env.QUEUE_PREFIX}.json`);
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the worker exited with code ${child.exitCode}`);
    try {
      const beat = JSON.parse(readFileSync(heartbeat, 'utf8'));
      if (beat.pid === child.pid && beat.problems.length === 0) break;
    } catch {
      // not written yet
    }
    if (Date.now() > deadline) throw new Error('the worker did not report a healthy heartbeat');
    await sleep(200);
  }
  return {
    child,
    probe: () =>
      new Promise((resolveProbe) => {
        const timer = setTimeout(() => {
          child.off('message', onMessage);
          resolveProbe(null);
        }, 5000);
        const onMessage = (m) => {
          if (m?.type !== 'sample') return;
          clearTimeout(timer);
          child.off('message', onMessage);
          resolveProbe(m);
        };
        child.on('message', onMessage);
        child.send({ type: 'sample' });
      }),
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

function procRss(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** Unlabelled samples and the HTTP request counts of a Prometheus text body. */
function parseMetrics(text) {
  const values = {};
  const http = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    if (!m[2]) values[m[1]] = Number(m[4]);
    else if (m[1] === 'mailwright_http_request_duration_seconds_count') {
      const labels = Object.fromEntries([...m[3].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
      http.push({ ...labels, count: Number(m[4]) });
    }
  }
  return { values, http };
}

// -------------------------------------------------------------------- main

async function main() {
  if (process.env.SOAK_RENDER) {
    const result = JSON.parse(readFileSync(resolve(process.env.SOAK_RENDER), 'utf8'));
    const paths = await writeReport(result, OUT_DIR);
    console.log(`written: ${Object.values(paths).join(', ')}`);
    return;
  }
  const { Queue } = require('bullmq');
  const { Redis } = require('ioredis');
  const { Client } = require('pg');
  const { QUEUES } = require(join(DIST, 'queue/queue.constants.js'));

  const result = {
    startedAt: new Date().toISOString(),
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memoryGiB: Math.round(os.totalmem() / 2 ** 30), loadAverageAtStart: os.loadavg().map((x) => +x.toFixed(2)) },
    build: buildInfo(),
    settings: {
      minutes: MINUTES,
      sampleSeconds: SAMPLE_SECONDS,
      load: LOAD,
      trackShare: TRACK_SHARE,
      recipientsPerSend: RECIPIENTS,
      emailRatePerSecond: EMAIL_RATE,
      measureSeconds: MEASURE_SECONDS,
      measureEmails: MEASURE_EMAILS,
      trackConcurrency: TRACK_CONCURRENCY,
      sendConcurrency: SEND_CONCURRENCY,
      rssWindowSeconds: RSS_WINDOW_SECONDS,
      drainLimitSeconds: DRAIN_LIMIT_SECONDS,
    },
    samples: [],
  };
  console.log(`soak: ${MINUTES} min at ${LOAD * 100}% of capacity (track share ${TRACK_SHARE}), build ${DIST}`);

  const sink = await startSink();
  const db = await createBenchDatabase('soak');
  const dbName = new URL(db.url).pathname.slice(1);
  const project = createProject(db.url, 'Soak');
  const common = {
    DATABASE_URL: db.url,
    QUEUE_PREFIX: PREFIX,
    SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
    EMAIL_RATE_PER_SECOND: String(EMAIL_RATE),
    DELIVERY_GROUP_RATES: require('./support').LIFTED_GROUP_RATES,
    API_RATE_LIMIT_PER_MINUTE: '10000000',
    METRICS_TOKEN,
  };
  const pg = new Client({ connectionString: db.url, application_name: 'mailwright-soak-monitor' });
  await pg.connect();
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 3 });
  result.build.postgres = (await pg.query('SHOW server_version')).rows[0].server_version;
  result.build.redis = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? null;
  const queues = Object.values(QUEUES).map((name) => new Queue(name, { connection: { url: REDIS_URL }, prefix: PREFIX }));
  let api;
  let worker;
  try {
    api = await startApp({ ...common, APP_ROLE: 'api', PORT: String(await freePort()) });
    const auth = { authorization: `Bearer ${project.secretKey}` };
    const domain = await (
      await fetch(`${api.base}/domains`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ domain: 'soak.example' }) })
    ).json();
    // No DNS here: the domain is marked verified directly, and its creation check dropped before
    // a worker could run it (as bench:delivery does); verified domains are re-checked after 24 h.
    await pg.query(`UPDATE domains SET status = 'VERIFIED', verified_at = now(), last_checked_at = now() WHERE id = $1`, [domain.data.id]);
    await queues.find((q) => q.name === QUEUES.DOMAINS).obliterate({ force: true });
    worker = await startWorker({ ...common, APP_ROLE: 'worker' });

    const unauthorized = await fetch(`${api.base}/metrics`);
    result.metricsWithoutToken = unauthorized.status;
    await unauthorized.arrayBuffer();

    const trackPoster = jsonPoster(api.base, '/v1/track', auth, TRACK_CONCURRENCY, REQUEST_TIMEOUT_MS);
    const sendPoster = jsonPoster(api.base, '/v1/send', auth, 32, REQUEST_TIMEOUT_MS);
    let trackSeq = 0;
    let sendSeq = 0;
    const track = (phase) => post(trackPoster, trackBody(trackSeq++), phase);
    const send = (phase) => post(sendPoster, sendBody(sendSeq++), phase);
    const asClosedLoopCall = (call, phase) => async () => {
      const { status } = await call(phase);
      if (!/^2\d\d$/.test(status)) throw new Error(`HTTP ${status}`);
    };

    // Queue depth: waiting + prioritized + delayed + active of every queue, less the recovery
    // schedulers' own next runs (job ids `repeat:<scheduler>:<time>`), which are always there.
    const queueDepth = async () => {
      let total = 0;
      const byQueue = {};
      for (const queue of queues) {
        const c = await queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'paused', 'waiting-children');
        let n = Object.values(c).reduce((a, b) => a + b, 0);
        if (c.delayed + c.active + c.waiting < 10_000) {
          const ids = await queue.getRanges(['delayed', 'active', 'waiting'], 0, -1);
          n -= ids.filter((id) => id.startsWith('repeat:')).length;
        }
        byQueue[queue.name] = n;
        total += n;
      }
      return { total, byQueue };
    };
    const openEmails = async () =>
      (await pg.query(`SELECT count(*)::int AS n FROM emails WHERE status IN ('QUEUED', 'SENDING')`)).rows[0].n;
    /** Seconds from `since` (epoch ms) until the queues are empty and until every email is final (null: not within `limitMs`). */
    const waitForDrain = async (limitMs, since = Date.now()) => {
      let queuesAt = null;
      for (;;) {
        const depth = (await queueDepth()).total;
        if (depth === 0) queuesAt ??= Date.now();
        else queuesAt = null;
        if (queuesAt !== null && (await openEmails()) === 0) return { queues: (queuesAt - since) / 1000, emails: (Date.now() - since) / 1000 };
        if (Date.now() - since > limitMs) return { queues: queuesAt === null ? null : (queuesAt - since) / 1000, emails: null };
        await sleep(250);
      }
    };

    // ---- 1. capacity
    await closedLoop(TRACK_CONCURRENCY, 5, asClosedLoopCall(track, 'warm-up'));
    await closedLoop(4, 2, asClosedLoopCall(send, 'warm-up'));
    const trackCapacityFlag = num('SOAK_TRACK_CAPACITY', null);
    if (trackCapacityFlag) {
      result.capacity = { track: { perSecond: trackCapacityFlag, measured: false } };
    } else {
      console.log(`measuring track capacity: ${TRACK_CONCURRENCY} connections, ${MEASURE_SECONDS} s ...`);
      const r = await closedLoop(TRACK_CONCURRENCY, MEASURE_SECONDS, asClosedLoopCall(track, 'capacity'));
      result.capacity = { track: { ...r, measured: true } };
      console.log(`  ${r.perSecond.toFixed(0)} req/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, ${r.errors} errors`);
    }
    const sendCapacityFlag = num('SOAK_SEND_CAPACITY', null);
    if (sendCapacityFlag) {
      result.capacity.send = { recipientsPerSecond: sendCapacityFlag, measured: false };
    } else {
      console.log(`measuring send capacity end to end: ${MEASURE_EMAILS} recipients, ${SEND_CONCURRENCY} connections, to the sink ...`);
      await sink.reset();
      const requests = Math.ceil(MEASURE_EMAILS / RECIPIENTS);
      const t0 = Date.now();
      let next = 0;
      let errors = 0;
      await Promise.all(
        Array.from({ length: SEND_CONCURRENCY }, async () => {
          while (next < requests) {
            next++;
            const { status } = await send('capacity');
            if (!/^2\d\d$/.test(status)) errors++;
          }
        }),
      );
      const acceptedAt = Date.now();
      const expected = (requests - errors) * RECIPIENTS;
      let stats;
      for (;;) {
        stats = await sink.stats();
        if (stats.count >= expected || Date.now() - acceptedAt > 600_000) break;
        await sleep(100);
      }
      const seconds = (stats.lastAt - t0) / 1000;
      result.capacity.send = {
        measured: true,
        recipients: expected,
        delivered: stats.count,
        errors,
        apiSeconds: (acceptedAt - t0) / 1000,
        apiRecipientsPerSecond: expected / ((acceptedAt - t0) / 1000),
        seconds,
        recipientsPerSecond: stats.count / seconds,
      };
      const s = result.capacity.send;
      console.log(
        `  ${s.recipientsPerSecond.toFixed(0)} recipients/s delivered end to end (${s.delivered} in ${seconds.toFixed(1)} s; the API took them at ${s.apiRecipientsPerSecond.toFixed(0)}/s), ${errors} errors`,
      );
    }
    const predrain = await waitForDrain(300_000);
    if (predrain.emails === null) throw new Error('the capacity measurement did not drain within 5 minutes');

    // ---- 2. the load
    const trackRate = num('SOAK_TRACK_RATE', null) ?? LOAD * TRACK_SHARE * result.capacity.track.perSecond;
    const sendRecipientRate = num('SOAK_SEND_RATE', null) ?? LOAD * (1 - TRACK_SHARE) * result.capacity.send.recipientsPerSecond;
    result.rates = { trackPerSecond: trackRate, sendRecipientsPerSecond: sendRecipientRate, sendRequestsPerSecond: sendRecipientRate / RECIPIENTS };
    console.log(
      `soak: ${trackRate.toFixed(0)} tracks/s + ${sendRecipientRate.toFixed(0)} recipients/s (${(sendRecipientRate / RECIPIENTS).toFixed(1)} sends/s) for ${MINUTES} min, a sample every ${SAMPLE_SECONDS} s`,
    );

    // CPU per sample, in % of one core: the API, the worker, the Postgres backends of the soak's
    // database (those alive at both readings), and the whole machine (all cores).
    const backendCpu = async () => {
      const { rows } = await pg.query(`SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [dbName]);
      return new Map(rows.map((r) => [r.pid, procCpuSeconds(r.pid)]));
    };
    const cpuNow = async () => ({
      api: procCpuSeconds(api.child.pid),
      worker: procCpuSeconds(worker.child.pid),
      harness: procCpuSeconds(process.pid) + procCpuSeconds(sink.child.pid),
      pg: await backendCpu(),
      machine: machineCpuSeconds(),
    });
    let lastCpu = await cpuNow();
    let lastSink = (await sink.stats()).count;
    let lastSampleAt = performance.now();
    let loads = null;
    let loadStartedAt = performance.now();
    const takeSample = async (phase) => {
      const now = performance.now();
      const seconds = (now - lastSampleAt) / 1000;
      lastSampleAt = now;
      const [metricsText, probe, conns, info, depth, sinkStats] = await Promise.all([
        fetch(`${api.base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
          .then(async (res) => {
            note('metrics', String(res.status));
            return res.ok ? res.text() : '';
          })
          .catch((error) => {
            note('metrics', 'ERR_FETCH', error.message);
            return '';
          }),
        worker.probe(),
        pg.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [dbName]),
        redis.info('memory'),
        queueDepth(),
        sink.stats(),
      ]);
      const cpu = await cpuNow();
      let pgCpu = 0;
      for (const [pid, sec] of cpu.pg) if (lastCpu.pg.has(pid) && Number.isFinite(sec)) pgCpu += sec - lastCpu.pg.get(pid);
      const cores = result.machine.cpus;
      const cpuPct = (a, b) => (Number.isFinite(a - b) ? Math.round(((a - b) / seconds) * 100) : null);
      const machineBusy = ((cpu.machine.busy - lastCpu.machine.busy) / (cpu.machine.total - lastCpu.machine.total)) * cores * 100;
      const apiCpuPct = cpuPct(cpu.api, lastCpu.api);
      const workerCpuPct = cpuPct(cpu.worker, lastCpu.worker);
      const harnessCpuPct = cpuPct(cpu.harness, lastCpu.harness);
      const pgCpuPct = Math.round((pgCpu / seconds) * 100);
      lastCpu = cpu;
      const m = parseMetrics(metricsText).values;
      const lag = (raw) => (Number.isFinite(raw) ? Math.max(0, raw - LAG_RESOLUTION_S) * 1000 : null);
      const t = loads ? (now - loadStartedAt) / 1000 : 0;
      const tw = loads?.track.window();
      const sw = loads?.send.window();
      const sample = {
        t: Math.round(t),
        phase,
        apiRssMB: mb(m.mailwright_process_resident_memory_bytes ?? procRss(api.child.pid)),
        apiHeapMB: mb(m.mailwright_nodejs_heap_size_used_bytes),
        apiLagP99Ms: lag(m.mailwright_nodejs_eventloop_lag_p99_seconds),
        apiLagMaxMs: lag(m.mailwright_nodejs_eventloop_lag_max_seconds),
        workerRssMB: mb(procRss(worker.child.pid)),
        workerHeapMB: probe ? mb(probe.heapUsed) : null,
        workerLagP99Ms: probe ? lag(probe.lagP99) : null,
        workerLagMaxMs: probe ? lag(probe.lagMax) : null,
        apiCpuPct,
        workerCpuPct,
        pgCpuPct,
        harnessCpuPct,
        // Redis (shared), other sessions' work, the kernel: what the machine did besides the soak's processes.
        othersCpuPct: Math.max(0, Math.round(machineBusy - apiCpuPct - workerCpuPct - pgCpuPct - harnessCpuPct)),
        machineCpuPct: Math.round(machineBusy),
        loadAverage: +os.loadavg()[0].toFixed(2),
        pgConnections: conns.rows[0].n,
        redisUsedMemoryMB: mb(Number(/used_memory:(\d+)/.exec(info)?.[1])),
        queueDepth: depth.total,
        deliveryDepth: depth.byQueue[QUEUES.DELIVERY],
        tracksPerSecond: tw ? tw.ok / seconds : 0,
        sendRecipientsPerSecond: sw ? (sw.ok * RECIPIENTS) / seconds : 0,
        deliveredPerSecond: (sinkStats.count - lastSink) / seconds,
        errors: (tw?.errors ?? 0) + (sw?.errors ?? 0),
        skipped: (tw?.skipped ?? 0) + (sw?.skipped ?? 0),
        trackP99Ms: tw && Number.isFinite(tw.p99) ? tw.p99 : null,
        sendP99Ms: sw && Number.isFinite(sw.p99) ? sw.p99 : null,
      };
      lastSink = sinkStats.count;
      result.samples.push(sample);
      console.log(
        `  t=${String(sample.t).padStart(4)}s ${phase.padEnd(5)} RSS api ${sample.apiRssMB} MB worker ${sample.workerRssMB} MB | lag p99 api ${fmt1(sample.apiLagP99Ms)} worker ${fmt1(sample.workerLagP99Ms)} ms | ` +
          `pg ${sample.pgConnections} | redis ${sample.redisUsedMemoryMB} MB | queued ${sample.queueDepth} | ${sample.tracksPerSecond.toFixed(0)} tracks/s ${sample.sendRecipientsPerSecond.toFixed(0)} rcpt/s ${sample.deliveredPerSecond.toFixed(0)} sent/s | ${sample.errors} errors`,
      );
    };

    // An idle sample first: 10 s with both processes up and no load. The lag histograms are
    // read (and so reset) once before, so every sample covers exactly the 10 s before it.
    await (await fetch(`${api.base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    await worker.probe();
    lastCpu = await cpuNow();
    lastSampleAt = performance.now();
    await sleep(SAMPLE_SECONDS * 1000);
    await takeSample('idle');
    loadStartedAt = performance.now();
    lastSampleAt = loadStartedAt;
    loads = {
      track: openLoop(trackRate, 512, () => track('soak')),
      send: openLoop(sendRecipientRate / RECIPIENTS, 128, () => send('soak')),
    };
    const loadMs = MINUTES * 60_000;
    for (let k = 1; k * SAMPLE_SECONDS * 1000 <= loadMs; k++) {
      await sleep(Math.max(0, loadStartedAt + k * SAMPLE_SECONDS * 1000 - performance.now()));
      await takeSample('load');
    }
    const loadEndedAt = performance.now();
    const loadEndedWall = Date.now();
    const [trackLoad, sendLoad] = await Promise.all([loads.track.stop(), loads.send.stop()]);
    result.load = { track: trackLoad, send: { ...sendLoad, recipientsPerSecond: sendLoad.okPerSecond * RECIPIENTS } };
    console.log(
      `load stopped: ${trackLoad.ok} tracks (${trackLoad.okPerSecond.toFixed(0)}/s, p99 ${trackLoad.p99.toFixed(1)} ms), ${sendLoad.ok * RECIPIENTS} recipients (${(sendLoad.okPerSecond * RECIPIENTS).toFixed(0)}/s, p99 ${sendLoad.p99.toFixed(1)} ms); ` +
        `${trackLoad.errors + sendLoad.errors} errors, ${trackLoad.skipped + sendLoad.skipped} skipped`,
    );

    // ---- 3. the drain, sampled on as before until the first sample after it
    const drain = { finished: false };
    const drainSampler = (async () => {
      for (let k = 1; ; k++) {
        await sleep(Math.max(0, loadEndedAt + k * SAMPLE_SECONDS * 1000 - performance.now()));
        await takeSample('drain');
        if (drain.finished) return;
      }
    })();
    const drained = await waitForDrain(DRAIN_WAIT_SECONDS * 1000, loadEndedWall);
    drain.finished = true;
    await drainSampler;
    result.drain = { queuesSeconds: drained.queues, emailsFinalSeconds: drained.emails, waitedUpTo: DRAIN_WAIT_SECONDS };
    console.log(`drain: queues empty ${fmt1(drained.queues)} s after the load stopped, every email final after ${fmt1(drained.emails)} s`);

    // ---- 4. what was recorded
    const { rows: statuses } = await pg.query(`SELECT status, count(*)::int AS n FROM emails GROUP BY status ORDER BY status`);
    const sinkStats = await sink.stats();
    const finalMetrics = parseMetrics(
      await (await fetch(`${api.base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text(),
    );
    result.emails = { byStatus: Object.fromEntries(statuses.map((r) => [r.status, r.n])), sinkSinceSendMeasure: sinkStats.count };
    result.apiHttpCounts = finalMetrics.http.filter((h) => h.route === '/v1/track' || h.route === '/v1/send' || h.route === '/metrics');
    result.answers = ledger;
    result.finishedAt = new Date().toISOString();
    result.verdict = verdict(result);
    const paths = await writeReport(result, OUT_DIR);
    console.log(`\nverdict: ${result.verdict.pass ? 'PASS' : 'FAIL'}`);
    for (const line of result.verdict.lines) console.log(`  ${line}`);
    console.log(`written: ${Object.values(paths).join(', ')}`);
    trackPoster.destroy();
    sendPoster.destroy();
  } finally {
    if (api) await api.stop();
    if (worker) await worker.stop();
    sink.child.send({ type: 'stop' });
    for (const queue of queues) await queue.close();
    await pg.end();
    await db.drop();
    const keys = await redis.keys(`${PREFIX}:*`);
    for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000));
    redis.disconnect();
  }
}

/** The three conditions of issue 15, with their figures. */
function verdict(result) {
  const loadSamples = result.samples.filter((s) => s.phase === 'load');
  const end = loadSamples[loadSamples.length - 1].t;
  const windowSamples = loadSamples.filter((s) => s.t >= end - result.settings.rssWindowSeconds);
  const rss = {};
  for (const [who, key] of [
    ['api', 'apiRssMB'],
    ['worker', 'workerRssMB'],
  ]) {
    const points = windowSamples.map((s) => [s.t, s[key]]);
    const first = points[0][1];
    const last = points[points.length - 1][1];
    const fit = leastSquares(points);
    const fitStart = fit.at(points[0][0]);
    const fitGrowth = (fit.at(points[points.length - 1][0]) - fitStart) / fitStart;
    rss[who] = { first, last, growth: (last - first) / first, fitGrowth, peak: Math.max(...result.samples.map((s) => s[key])), pass: fitGrowth < 0.1 };
  }
  const errorsByPhase = {};
  let errors = 0;
  for (const [phase, statuses] of Object.entries(result.answers.statuses)) {
    for (const [status, n] of Object.entries(statuses)) {
      if (/^2\d\d$/.test(status)) continue;
      errorsByPhase[phase] = (errorsByPhase[phase] ?? 0) + n;
      errors += n;
    }
  }
  const drainPass = result.drain.queuesSeconds !== null && result.drain.queuesSeconds <= result.settings.drainLimitSeconds;
  const pct = (x) => `${(x * 100).toFixed(1)}%`;
  const lines = [
    ...Object.entries(rss).map(
      ([who, r]) =>
        `${r.pass ? 'pass' : 'FAIL'}: ${who} RSS growth over the last ${result.settings.rssWindowSeconds / 60} min ${pct(r.fitGrowth)} (fitted line; first to last sample ${r.first} -> ${r.last} MB, ${pct(r.growth)}; peak ${r.peak} MB), limit 10%`,
    ),
    `${errors === 0 ? 'pass' : 'FAIL'}: ${errors} error responses${errors ? ` (${JSON.stringify(errorsByPhase)})` : ''} of ${Object.values(result.answers.statuses).reduce((a, s) => a + Object.values(s).reduce((x, y) => x + y, 0), 0)} requests`,
    `${drainPass ? 'pass' : 'FAIL'}: queues empty ${result.drain.queuesSeconds === null ? `not within ${result.drain.waitedUpTo}` : result.drain.queuesSeconds.toFixed(1)} s after the load stopped, limit ${result.settings.drainLimitSeconds} s`,
  ];
  return { pass: Object.values(rss).every((r) => r.pass) && errors === 0 && drainPass, rss, errors, errorsByPhase, drainPass, lines };
}

function leastSquares(points) {
  const n = points.length;
  const mx = points.reduce((a, p) => a + p[0], 0) / n;
  const my = points.reduce((a, p) => a + p[1], 0) / n;
  const sxx = points.reduce((a, p) => a + (p[0] - mx) ** 2, 0);
  const slope = sxx === 0 ? 0 : points.reduce((a, p) => a + (p[0] - mx) * (p[1] - my), 0) / sxx;
  return { slope, at: (x) => my + slope * (x - mx) };
}

function buildInfo() {
  const git = (...args) => {
    try {
      return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
    } catch {
      return null;
    }
  };
  return {
    commit: git('rev-parse', '--short', 'HEAD'),
    source: buildSource,
    srcChanged: buildSource !== null && buildSource.startsWith('git archive') ? false : git('status', '--porcelain', '--', 'src') !== '',
    dist: DIST.startsWith(ROOT) ? DIST.slice(ROOT.length + 1) : DIST,
    distBuiltAt: existsSync(join(DIST, 'main.js')) ? new Date(require('node:fs').statSync(join(DIST, 'main.js')).mtimeMs).toISOString() : null,
    node: process.version,
    postgres: null,
    redis: null,
  };
}

const mb = (bytes) => (Number.isFinite(bytes) ? Math.round(bytes / 2 ** 20) : null);
const fmt1 = (x) => (x === null || x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(1));

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
