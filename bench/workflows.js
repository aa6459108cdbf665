'use strict';
/**
 * Workflow engine throughput and entry latency (issue 13, "Benchmarks").
 *
 * Setup (the real path end to end): its own database and queue prefix; an
 * API process (APP_ROLE=api) and, later, one worker process
 * (APP_ROLE=worker) of the build under test; a local SMTP sink
 * (bench/smtp-sink.js) the worker delivers to. The sender's domain is not
 * verified (there is no DNS here): both processes run with
 * REQUIRE_VERIFIED_SENDER=false, as bench/campaign.js does, so the mail goes
 * out unsigned. One TRANSACTIONAL template (`from` on that domain, Liquid in
 * subject and body) and one enabled EVENT workflow on `bench-signup`:
 *
 *   1 UPDATE_CONTACT  data {stage: 'x'}
 *   2 CONDITION       data.stage equals 'x'; then [] else [EXIT]
 *   3 DELAY           1 second
 *   4 SEND_EMAIL      the template
 *
 * (a) Steps per second. BENCH_EXECUTIONS (default 10,000) contacts each send
 *     one POST /v1/track {event: 'bench-signup'} while no worker runs: the
 *     events trigger starts one execution per track in the track's
 *     transaction and the API's dispatcher adds its first job after commit,
 *     so the queue is pre-filled. Then the worker is started. Rate = step
 *     records finished (4 per execution: 40,000) / (the first step record's
 *     started_at - the last COMPLETED execution's finished_at), both written
 *     by Postgres (now(): the time the step's transaction began). The
 *     worker's boot is not counted. The engine runs four workflow jobs per
 *     execution, as the baseline's chain has links (the CONDITION's job also
 *     enters the DELAY, recording it WAITING; the DELAY's own job, delayed
 *     1 s, completes it), plus one delivery job for the SEND_EMAIL's message
 *     (the baseline has none: it models no delivery).
 *
 *     Baseline (same run, before and after the service; the figure is their
 *     mean, as the machine's load drifts): a child process (this file, role
 *     `chains`) with a bare BullMQ Worker of the same concurrency as the
 *     service's workflow worker (WORKFLOW_CONCURRENCY,
 *     src/workflows/workflows.processor.ts), on the same Redis, whose
 *     processor does nothing but add the next job of its chain: 10,000
 *     chains of 4 jobs (40,000 jobs), the 4th link added with a 1 s delay by
 *     the 3rd (as the DELAY step adds its wake-up), the jobs added with the
 *     service's options (deterministic job id, removeOnComplete/Fail,
 *     attempts 3). Its first links are added before its worker starts, as
 *     the service's queue is pre-filled. Rate = 40,000 / (first job started
 *     - last job's processor done). Target: service >= 40 % of baseline.
 *
 * (b) Entry latency. With the worker running and idle, tracks of new
 *     contacts are sent open-loop at BENCH_LATENCY_RATE (default 500/s) for
 *     BENCH_LATENCY_SECONDS (default 10): for each, from the moment its HTTP
 *     answer arrived to its execution's first step record's started_at
 *     (Postgres clock, same machine). Printed: p50, p99, max, and the same
 *     from the execution's created_at (the track's transaction) to the
 *     first step; the HTTP answer times too (the client keeps at most 64
 *     requests in flight, over kept-alive connections: when answers take
 *     longer than 128 ms, requests wait in the client and that wait is in
 *     the HTTP figure; a pool of 1,024 sockets instead opened hundreds of
 *     connections at once and put 11 s in the HTTP tail, presumably SYN
 *     retries on the listen backlog). Target: p99 < 1 s. The workflow (its
 *     own event name): by default `entry`, whose only step is a DELAY of 1 hour (the first
 *     step record is written and nothing more runs during the bench: one job
 *     per track, what starting an execution costs when the engine is not
 *     also busy with later steps); BENCH_LATENCY=four measures instead a copy
 *     of the 4-step workflow above (at 500 tracks/s it asks the worker for
 *     2,000 steps/s, 2,500 jobs/s, and its later steps keep running after the
 *     measurement), BENCH_LATENCY=both measures the two one after the other
 *     (entry first), BENCH_LATENCY=none skips (b).
 *
 * Also printed: the CPU each step cost the worker, the database's backends
 * and the shared redis-server (less sensitive to the machine's other load
 * than the rate); the sink's count of delivered messages.
 *
 *   npm run bench:workflows                       (builds first; about 5 minutes here at ~190 steps/s)
 *   BENCH_DIST=$PWD/var/bench-dist node bench/workflows.js   (a private build; an absolute path)
 *   BENCH_EXECUTIONS=2000 BENCH_LATENCY=none node bench/workflows.js
 *   BENCH_RATE=14 ...          (the worker's EMAIL_RATE_PER_SECOND; default lifted, as bench/delivery.js)
 *   BENCH_BODY_KB=20 ...      (the template's body padded to about 20 KB of HTML with Liquid in every paragraph;
 *                               default: two short lines. The worker's peak RSS is printed either way.)
 *   BENCH_KEEP_DB=1 ...        (the database is kept at the end, its URL printed: EXPLAIN the engine's statements on it)
 *   BENCH_PROFILE=var/prof ... (the worker writes a V8 CPU profile of the steps phase only, from the
 *                               first step record to the last COMPLETED, into that directory: this
 *                               file, preloaded into the worker with --require, starts and stops the
 *                               inspector's profiler on SIGWINCH; open the .cpuprofile in Chrome DevTools.
 *                               Beside it, worker-<pid>.commands.json counts every Postgres statement
 *                               (by text) and Redis command the worker sent meanwhile (the counting
 *                               costs the worker about 1.5 %); with BENCH_POOL_WAITERS=1 too, callers
 *                               that waited > 10 s for a pool connection have their stacks in
 *                               worker-<pid>.pool-waiters.txt.)
 *
 * When no execution moves (no step's transaction commits) for BENCH_STALL_SECONDS
 * (default 30), the bench stops and prints what the worker's Postgres
 * connections are doing and where its active jobs' executions are (a pool
 * starved by transactions waiting for a second connection wedged the worker
 * before 5a284b2: all 20 connections idle in transaction).
 */
const { fork, spawn } = require('node:child_process');
const { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } = require('node:fs');
const { backendsDelta, machineCpuSeconds, postgresCpuSeconds, procCpuSeconds, procCpuSplit, redisCpuSeconds } = require('./cpu');
const path = require('node:path');
const { join } = path;
const { performance } = require('node:perf_hooks');

const ROOT = join(__dirname, '..');
// A private build (BENCH_DIST outside the repository) resolves its packages from the repository's node_modules.
process.env.NODE_PATH = [join(ROOT, 'node_modules'), process.env.NODE_PATH].filter(Boolean).join(path.delimiter);
require('node:module').Module._initPaths();

const ROLE = process.argv[2];
const CHAIN_LENGTH = 4;
const DELAYED_LINK = 4; // the 3rd link adds the 4th with the delay, as the DELAY (3rd step) adds its wake-up
const DELAY_MS = 1000;

/* -------------------------------------------------------------- baseline child */

function redisOptions(redisUrl) {
  // As the service does (src/queue/redis.ts).
  const url = new URL(redisUrl);
  const db = url.pathname && url.pathname !== '/' ? Number(url.pathname.slice(1)) : 0;
  return {
    host: url.hostname,
    port: url.port ? Number(url.port) : 6379,
    username: url.username ? decodeURIComponent(url.username) : undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    db,
    maxRetriesPerRequest: null,
  };
}

/** The service's job options (src/workflows/workflow-dispatcher.ts enqueue). */
function jobOptions(chain, link) {
  return {
    jobId: `chain-${chain}-${link}`,
    delay: link === DELAYED_LINK ? DELAY_MS : 0,
    removeOnComplete: true,
    removeOnFail: true,
    attempts: 3,
    backoff: { type: 'exponential', delay: 1000 },
  };
}

function runChains() {
  process.once('message', async ({ redisUrl, prefix, queueName, chains, concurrency }) => {
    const { Queue, Worker } = require('bullmq');
    const connection = redisOptions(redisUrl);
    const queue = new Queue(queueName, { connection, prefix });
    for (let from = 0; from < chains; from += 1000) {
      const jobs = [];
      for (let chain = from; chain < Math.min(chains, from + 1000); chain++) {
        jobs.push({ name: 'link', data: { chain, link: 1 }, opts: jobOptions(chain, 1) });
      }
      await queue.addBulk(jobs);
    }
    const total = chains * CHAIN_LENGTH;
    let done = 0;
    let firstAt = 0;
    let lastAt = 0;
    let failed = 0;
    let cpuAtFirst = null;
    let finish;
    const finished = new Promise((resolve) => (finish = resolve));
    const worker = new Worker(
      queueName,
      async (job) => {
        if (firstAt === 0) {
          firstAt = performance.timeOrigin + performance.now();
          cpuAtFirst = process.cpuUsage();
        }
        const { chain, link } = job.data;
        if (link < CHAIN_LENGTH) await queue.add('link', { chain, link: link + 1 }, jobOptions(chain, link + 1));
        lastAt = performance.timeOrigin + performance.now();
        if (++done === total) finish();
      },
      { connection, prefix, concurrency },
    );
    worker.on('failed', () => failed++);
    worker.on('error', (error) => console.error('chains worker:', error.message));
    await finished;
    const cpu = process.cpuUsage(cpuAtFirst);
    await worker.close();
    await queue.obliterate({ force: true });
    await queue.close();
    process.send({ type: 'done', done, failed, firstAt, lastAt, cpu: (cpu.user + cpu.system) / 1e6 });
    process.disconnect();
  });
  process.send({ type: 'ready' });
}

/* ------------------------------------------------------------------------ main */

async function main() {
  const { Client } = require('pg');
  const { DIST, REDIS_URL, createBenchDatabase, createProject, jsonPoster, percentile, startApp, startSink, deleteRedisKeys } = require('./support');
  const { WORKFLOW_CONCURRENCY } = require(join(DIST, 'workflows/workflows.processor.js'));

  const EXECUTIONS = Number(process.env.BENCH_EXECUTIONS || 10_000);
  const STEPS = 4;
  const RATE = Number(process.env.BENCH_RATE || 1_000_000);
  const LATENCY = process.env.BENCH_LATENCY || 'entry';
  const LATENCY_RATE = Number(process.env.BENCH_LATENCY_RATE || 500);
  const LATENCY_SECONDS = Number(process.env.BENCH_LATENCY_SECONDS || 10);
  const PRODUCER_CONCURRENCY = 32;
  const PREFIX = `mwbenchwf${process.pid}`;
  const SECRET = 'bench-secret-bench-secret-bench-secret-0123456789';
  const FROM = 'hello@workflows-bench.example';
  const EVENT = 'bench-signup';
  const STALL_MS = Number(process.env.BENCH_STALL_SECONDS || 30) * 1000;
  const PROFILE_DIR = process.env.BENCH_PROFILE ? path.resolve(process.env.BENCH_PROFILE) : null;
  const NODE_ARGS = (process.env.BENCH_NODE_ARGS || '').split(' ').filter(Boolean);
  const BODY_KB = Number(process.env.BENCH_BODY_KB || 0);

  console.log(
    `Workflows benchmark: ${EXECUTIONS} executions x ${STEPS} steps, workflow worker concurrency ${WORKFLOW_CONCURRENCY}, ` +
      `worker EMAIL_RATE_PER_SECOND=${RATE}, build ${DIST}`,
  );
  const sink = await startSink();
  const db = await createBenchDatabase('workflows');
  const { project, secretKey } = createProject(db.url, 'Workflows bench');
  const common = { DATABASE_URL: db.url, QUEUE_PREFIX: PREFIX, APP_SECRET: SECRET, REQUIRE_VERIFIED_SENDER: 'false' };
  const pg = new Client({ connectionString: db.url });
  await pg.connect();
  const dbName = new URL(db.url).pathname.slice(1);
  let api;
  let worker;
  try {
    api = await startApp({ ...common, APP_ROLE: 'api', API_RATE_LIMIT_PER_MINUTE: '10000000' });
    const auth = { authorization: `Bearer ${secretKey}`, 'content-type': 'application/json' };
    const post = async (url, body) => {
      const res = await fetch(`${api.base}${url}`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
      const json = await res.json();
      if (res.status !== 201) throw new Error(`POST ${url} answered ${res.status}: ${JSON.stringify(json)}`);
      return json.data;
    };
    const template = await post('/templates', {
      name: 'Bench welcome',
      type: 'TRANSACTIONAL',
      from: FROM,
      fromName: 'Bench',
      subject: 'Welcome {{ contact.email }} ({{ contact.data.stage }})',
      body: '<h1>Hello {{ contact.email }}</h1><p>You are at stage {{ contact.data.stage }}.</p>' + filler(BODY_KB),
    });
    const fourSteps = (event) => ({
      name: `Bench ${event}`,
      enabled: true,
      trigger: { type: 'EVENT', event },
      steps: [
        { id: 'update', type: 'UPDATE_CONTACT', data: { stage: 'x' } },
        {
          id: 'branch',
          type: 'CONDITION',
          condition: { logic: 'AND', conditions: [{ field: 'data.stage', operator: 'equals', value: 'x' }] },
          then: [],
          else: [{ id: 'bye', type: 'EXIT' }],
        },
        { id: 'wait', type: 'DELAY', amount: 1, unit: 'seconds' },
        { id: 'mail', type: 'SEND_EMAIL', templateId: template.id },
      ],
    });
    const workflow = await post('/workflows', fourSteps(EVENT));

    // (a) baseline, before.
    const baselineBefore = await runBaseline('before');

    // (a) service: the queue pre-filled through the API, then the worker.
    console.log(`producing ${EXECUTIONS} executions: POST /v1/track {event: '${EVENT}'} per contact, ${PRODUCER_CONCURRENCY} in flight, no worker ...`);
    const tracks = jsonPoster(api.base, '/v1/track', { authorization: `Bearer ${secretKey}` }, 64);
    const producedAt = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: PRODUCER_CONCURRENCY }, async () => {
        while (next < EXECUTIONS) {
          const i = next++;
          const { status } = await track(tracks, { email: `user${i}@bench.example`, event: EVENT, data: { n: i } });
          if (status !== 200) throw new Error(`POST /v1/track answered ${status}`);
        }
      }),
    );
    const { Queue } = require('bullmq');
    const queue = new Queue('workflows', { connection: redisOptions(REDIS_URL), prefix: PREFIX });
    // The dispatcher adds jobs after commit, a few ms after the answer: wait for them.
    let queued;
    for (let k = 0; k < 50; k++) {
      queued = await queue.getJobCounts('waiting', 'delayed', 'prioritized');
      if (queued.waiting >= EXECUTIONS) break;
      await sleep(100);
    }
    const { rows: made } = await pg.query(`SELECT status, count(*)::int AS n FROM workflow_executions WHERE workflow_id = $1 GROUP BY 1`, [workflow.id]);
    console.log(
      `  ${((Date.now() - producedAt) / 1000).toFixed(1)} s; executions ${JSON.stringify(Object.fromEntries(made.map((r) => [r.status, r.n])))}; ` +
        `workflows queue: ${queued.waiting} waiting, ${queued.delayed} delayed`,
    );
    await pg.query('VACUUM ANALYZE workflow_executions, contacts, events');

    console.log(`service: one worker process (APP_ROLE=worker) on the pre-filled queue ...`);
    const bootAt = Date.now();
    const profileArgs = PROFILE_DIR ? ['--require', __filename] : [];
    worker = startWorker(
      { ...common, APP_ROLE: 'worker', SMTP_URL: `smtp://127.0.0.1:${sink.port}`, EMAIL_RATE_PER_SECOND: String(RATE), DELIVERY_GROUP_RATES: require('./support').LIFTED_GROUP_RATES, ...(PROFILE_DIR ? { BENCH_PROFILE_DIR: PROFILE_DIR, BENCH_POOL_WAITERS: process.env.BENCH_POOL_WAITERS || '' } : {}) },
      [...NODE_ARGS, ...profileArgs],
    );
    const snapshot = () => ({
      worker: procCpuSeconds(worker.pid),
      workerSplit: procCpuSplit(worker.pid),
      api: procCpuSeconds(api.child.pid),
      postgres: postgresCpuSeconds(dbName),
      redis: redisCpuSeconds(),
      machine: machineCpuSeconds(),
    });
    let first = null;
    let progressAt = Date.now();
    let lastProgress = -1;
    let lastChangeAt = Date.now();
    let lastChangeCpu = 0;
    const deadline = Date.now() + 20 * 60_000;
    for (;;) {
      const {
        rows: [p],
      } = await pg.query(
        // Progress from the executions alone: each move of an execution raises its version (counting the
        // step records, two scans of a table four times as big, took 15 ms of the database's CPU per poll
        // at 10,000 executions, a share of the CPU the service is measured by).
        `SELECT count(*) FILTER (WHERE status = 'COMPLETED')::int AS completed,
                count(*) FILTER (WHERE status NOT IN ('RUNNING', 'WAITING', 'COMPLETED'))::int AS other,
                count(*) FILTER (WHERE version > 0 OR current_step_id IS NOT NULL)::int AS begun,
                coalesce(sum(version), 0)::int AS moves
           FROM workflow_executions WHERE workflow_id = $1`,
        [workflow.id],
      );
      const started = p.begun > 0;
      // Progress: an execution moved (each step's transaction moves its execution).
      const progress = p.moves;
      if (!first && started) {
        first = snapshot();
        if (PROFILE_DIR) process.kill(worker.pid, 'SIGWINCH'); // start the profile
      }
      if (p.completed + p.other >= EXECUTIONS) break;
      if (Date.now() > deadline) throw new Error(`only ${p.completed} executions COMPLETED (${p.other} otherwise ended)`);
      if (progress !== lastProgress) {
        lastProgress = progress;
        lastChangeAt = Date.now();
        lastChangeCpu = procCpuSeconds(worker.pid);
      } else if (started && Date.now() - lastChangeAt > STALL_MS) {
        // No step finished for a while: say what the worker's connections are doing, and stop.
        const { rows } = await pg.query(
          `SELECT state, left(regexp_replace(query, '\\s+', ' ', 'g'), 100) AS query, count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND application_name = 'mailwright' GROUP BY 1, 2 ORDER BY 3 DESC`,
        );
        const c = await queue.getJobCounts('waiting', 'active', 'delayed');
        console.log(
          `  !! no execution moved for ${STALL_MS / 1000} s (${p.begun} executions begun, ${p.moves} moves, ` +
            `${p.completed} executions COMPLETED); queue ${JSON.stringify(c)}`,
        );
        console.log(
          `     worker meanwhile: ${(procCpuSeconds(worker.pid) - lastChangeCpu).toFixed(1)} CPU seconds, ${procStatus(worker.pid)}; ` +
            `machine load ${readFileSync('/proc/loadavg', 'utf8').trim()}`,
        );
        for (const r of rows) console.log(`     ${String(r.n).padStart(3)} connection(s) ${r.state}: ${r.query}`);
        const active = (await queue.getJobs(['active'], 0, 100)).filter(Boolean).map((job) => job.data.executionId);
        const { rows: at } = await pg.query(
          `SELECT status, current_step_id AS step, count(*)::int AS n FROM workflow_executions WHERE id = ANY($1::uuid[]) GROUP BY 1, 2 ORDER BY 3 DESC`,
          [active],
        );
        console.log(`     the executions of the ${active.length} active jobs: ${at.map((r) => `${r.n} ${r.status} at ${r.step}`).join(', ')}`);
        if (PROFILE_DIR) {
          process.kill(worker.pid, 'SIGWINCH'); // stop and write the profile: what the worker did meanwhile
          const profile = join(PROFILE_DIR, `worker-${worker.pid}.cpuprofile`);
          for (let k = 0; k < 100 && !existsSync(profile); k++) await sleep(100);
          console.log(`     CPU profile of the worker up to now: ${existsSync(profile) ? profile : 'NOT WRITTEN'}`);
          const file = join(PROFILE_DIR, `worker-${worker.pid}.pool-waiters.txt`);
          for (let k = 0; k < 70 && !existsSync(file); k++) await sleep(100);
          if (existsSync(file)) console.log(`     callers waiting for a pool connection (${file}):\n${readFileSync(file, 'utf8').split('\n').slice(0, 40).join('\n')}`);
        }
        throw new Error('the workflow worker stalled');
      }
      if (process.env.BENCH_VERBOSE && Date.now() - progressAt > 2000) {
        progressAt = Date.now();
        const c = await queue.getJobCounts('waiting', 'active', 'delayed');
        console.log(`    completed ${p.completed}, ${p.moves} moves; queue ${JSON.stringify(c)}`);
      }
      await sleep(started ? 500 : 100);
    }
    const last = snapshot();
    if (PROFILE_DIR) {
      process.kill(worker.pid, 'SIGWINCH'); // stop and write the profile
      const file = join(PROFILE_DIR, `worker-${worker.pid}.cpuprofile`);
      for (let k = 0; k < 100 && !existsSync(file); k++) await sleep(100);
      console.log(`  CPU profile of the worker (steps phase): ${existsSync(file) ? file : 'NOT WRITTEN'}`);
    }
    const {
      rows: [m],
    } = await pg.query(
      `SELECT (SELECT count(*)::int FROM workflow_execution_steps s JOIN workflow_executions x ON x.id = s.execution_id
                WHERE x.workflow_id = $1 AND s.status = 'COMPLETED' AND s.finished_at IS NOT NULL) AS steps,
              (SELECT extract(epoch FROM min(s.started_at)) * 1000 FROM workflow_execution_steps s JOIN workflow_executions x ON x.id = s.execution_id
                WHERE x.workflow_id = $1) AS "firstMs",
              (SELECT extract(epoch FROM max(finished_at)) * 1000 FROM workflow_executions WHERE workflow_id = $1 AND status = 'COMPLETED') AS "lastMs",
              (SELECT count(*)::int FROM workflow_executions WHERE workflow_id = $1 AND status = 'COMPLETED') AS completed,
              (SELECT json_object_agg(status, n) FROM (SELECT status, count(*)::int AS n FROM workflow_executions WHERE workflow_id = $1 GROUP BY 1) s) AS statuses,
              (SELECT count(*)::int FROM emails WHERE workflow_execution_id IS NOT NULL) AS emails`,
      [workflow.id],
    );
    const seconds = (Number(m.lastMs) - Number(m.firstMs)) / 1000;
    const serviceRate = m.steps / seconds;
    console.log(
      `  ${serviceRate.toFixed(0)} steps/s: ${m.steps} step records finished in ${seconds.toFixed(2)} s (first step started ${(
        (Number(m.firstMs) - bootAt) /
        1000
      ).toFixed(1)} s after the worker's spawn); executions ${JSON.stringify(m.statuses)}; ${m.emails} email records`,
    );
    const stepCpu = {
      worker: last.worker - first.worker,
      postgres: backendsDelta(first.postgres, last.postgres),
      redis: last.redis - first.redis,
      api: last.api - first.api,
    };
    console.log(
      `  CPU from the first step to the last (sampled every 500 ms): worker ${perStep(stepCpu.worker, m.steps)}, postgres backends of this database ` +
        `${perStep(stepCpu.postgres, m.steps)}, redis-server (shared) ${perStep(stepCpu.redis, m.steps)}, API ${stepCpu.api.toFixed(1)} s, ` +
        `machine busy ${usage(first.machine, last.machine)}`,
    );
    console.log(
      `  worker CPU split: user ${perStep(last.workerSplit.user - first.workerSplit.user, m.steps)}, ` +
        `system ${perStep(last.workerSplit.system - first.workerSplit.system, m.steps)}; worker peak RSS so far ${procPeakRss(worker.pid)}`,
    );
    const sinkDeadline = Date.now() + (RATE >= 1000 ? 120_000 : 0);
    let sunk = await sink.stats();
    while (sunk.count < m.emails && Date.now() < sinkDeadline) {
      await sleep(200);
      sunk = await sink.stats();
    }
    console.log(
      `  sink: ${sunk.count} of ${m.emails} messages delivered` +
        (sunk.count > 0 ? `, first to last ${((sunk.lastAt - sunk.firstAt) / 1000).toFixed(1)} s; last ${((sunk.lastAt - Number(m.lastMs)) / 1000).toFixed(1)} s after the last step` : ''),
    );

    // (b) entry latency, the worker running (and idle).
    const latencies = [];
    if (LATENCY !== 'none') {
      const cases = [];
      if (LATENCY === 'entry' || LATENCY === 'both') {
        cases.push([
          'entry (DELAY 1 h)',
          await post('/workflows', {
            name: 'Bench entry',
            enabled: true,
            trigger: { type: 'EVENT', event: 'bench-entry' },
            steps: [{ id: 'hold', type: 'DELAY', amount: 1, unit: 'hours' }],
          }),
        ]);
      }
      if (LATENCY === 'four' || LATENCY === 'both') cases.push(['4 steps', await post('/workflows', fourSteps('bench-latency'))]);
      for (const [label, w] of cases) {
        latencies.push(await entryLatency(label, w, tracks));
      }
    }
    tracks.destroy();
    await worker.stop();
    worker = null;
    await queue.close();

    // (a) baseline, after.
    const baselineAfter = await runBaseline('after');
    const baselineRate = (baselineBefore.rate + baselineAfter.rate) / 2;
    const baselineCpu = (baselineBefore.cpu + baselineAfter.cpu) / 2;
    const ratio = serviceRate / baselineRate;
    const stepsOk = m.completed === EXECUTIONS && m.steps === EXECUTIONS * STEPS;

    console.log('');
    console.log(`Results (${EXECUTIONS} executions x ${STEPS} steps; ${EXECUTIONS * CHAIN_LENGTH} baseline jobs; concurrency ${WORKFLOW_CONCURRENCY}):`);
    console.log(
      `  baseline (bare BullMQ chains): ${baselineRate.toFixed(0).padStart(6)} jobs/s (mean of ${baselineBefore.rate.toFixed(0)} before and ${baselineAfter.rate.toFixed(0)} after); ` +
        `CPU ${((baselineCpu / (EXECUTIONS * CHAIN_LENGTH)) * 1e6).toFixed(0)} us/job in its process`,
    );
    console.log(`  service  (workflow worker):    ${serviceRate.toFixed(0).padStart(6)} steps/s  (all ${EXECUTIONS} COMPLETED with ${STEPS} step records: ${stepsOk ? 'yes' : 'NO'})`);
    console.log(`  ratio service/baseline:        ${(ratio * 100).toFixed(1)}%  (target >= 40%: ${ratio >= 0.4 ? 'met' : 'MISSED'})`);
    for (const l of latencies) {
      console.log(
        `  entry latency, ${l.label.padEnd(17)} ${l.sent} tracks at ${l.rate.toFixed(0)}/s (HTTP p99 ${l.httpP99.toFixed(0)} ms): answer -> first step p50 ${l.p50.toFixed(0)} ms, p99 ${l.p99.toFixed(0)} ms, ` +
          `max ${l.max.toFixed(0)} ms (created_at -> first step p50 ${l.createdP50.toFixed(0)} ms, p99 ${l.createdP99.toFixed(0)} ms); ` +
          `worker started ${l.startedRate.toFixed(0)}/s; ${l.missing ? `${l.missing} without a step record! ` : ''}target p99 < 1 s: ${l.p99 < 1000 && !l.missing ? 'met' : 'MISSED'}`,
      );
    }
  } finally {
    if (worker) await worker.stop();
    if (api) await api.stop();
    await pg.end();
    sink.child.send({ type: 'stop' });
    if (process.env.BENCH_KEEP_DB) console.log(`database kept (BENCH_KEEP_DB): ${db.url}`);
    else await db.drop();
    await deleteRedisKeys(`${PREFIX}*`);
  }

  async function runBaseline(label) {
    console.log(`baseline ${label}: ${EXECUTIONS} chains of ${CHAIN_LENGTH} bare BullMQ jobs, concurrency ${WORKFLOW_CONCURRENCY}, child process ...`);
    const child = fork(__filename, ['chains'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise((resolve) => child.once('message', resolve));
    const redis0 = redisCpuSeconds();
    const done = new Promise((resolve) => child.once('message', resolve));
    child.send({ redisUrl: REDIS_URL, prefix: `${PREFIX}bl`, queueName: `chains-${label}`, chains: EXECUTIONS, concurrency: WORKFLOW_CONCURRENCY });
    const r = await done;
    const rate = r.done / ((r.lastAt - r.firstAt) / 1000);
    console.log(
      `  ${rate.toFixed(0)} jobs/s (${r.done} jobs, ${r.failed} failed, ${((r.lastAt - r.firstAt) / 1000).toFixed(2)} s); ` +
        `CPU: its process ${perStep(r.cpu, r.done)}, redis-server (shared, incl. setup) ${(redisCpuSeconds() - redis0).toFixed(1)} s`,
    );
    return { rate, cpu: r.cpu };
  }

  /** Open loop at LATENCY_RATE for LATENCY_SECONDS, new contacts, then answer -> first step record per track. */
  async function entryLatency(label, w, tracks) {
    const total = Math.round(LATENCY_RATE * LATENCY_SECONDS);
    const event = w.trigger.event;
    console.log(`entry latency (${label}): ${total} POST /v1/track {event: '${event}'}, new contacts, open loop at ${LATENCY_RATE}/s ...`);
    const answeredAt = new Array(total);
    const httpMs = [];
    const inFlight = [];
    let errors = 0;
    const start = performance.now() + 50;
    let sent = 0;
    while (sent < total) {
      const now = performance.now();
      const due = Math.min(total, Math.floor(((now - start) / 1000) * LATENCY_RATE) + 1);
      for (; sent < due; sent++) {
        const i = sent;
        const sentAt = performance.timeOrigin + performance.now();
        inFlight.push(
          track(tracks, { email: `${event}-${i}@bench.example`, event, data: { n: i } }).then(
            ({ status, at }) => {
              httpMs.push(at - sentAt);
              if (status === 200) answeredAt[i] = at;
              else errors++;
            },
            () => errors++,
          ),
        );
      }
      await sleep(1);
    }
    const sendSeconds = (performance.now() - start) / 1000;
    await Promise.all(inFlight);
    httpMs.sort((a, b) => a - b);
    // Every execution has its first step record (or give up after 120 s).
    const until = Date.now() + 120_000;
    let rows;
    for (;;) {
      ({ rows } = await pg.query(
        `SELECT c.email, extract(epoch FROM x.created_at) * 1000 AS "createdMs", extract(epoch FROM min(s.started_at)) * 1000 AS "stepMs"
           FROM workflow_executions x JOIN contacts c ON c.id = x.contact_id
           LEFT JOIN workflow_execution_steps s ON s.execution_id = x.id
          WHERE x.workflow_id = $1 GROUP BY c.email, x.created_at`,
        [w.id],
      ));
      if ((rows.length >= total - errors && rows.every((r) => r.stepMs !== null)) || Date.now() > until) break;
      await sleep(250);
    }
    const fromAnswer = [];
    const fromCreated = [];
    let missing = total - errors - rows.length;
    for (const r of rows) {
      if (r.stepMs === null) {
        missing++;
        continue;
      }
      const i = Number(r.email.slice(event.length + 1, r.email.indexOf('@')));
      if (answeredAt[i] !== undefined) fromAnswer.push(Number(r.stepMs) - answeredAt[i]);
      fromCreated.push(Number(r.stepMs) - Number(r.createdMs));
    }
    fromAnswer.sort((a, b) => a - b);
    fromCreated.sort((a, b) => a - b);
    const stepTimes = rows.filter((r) => r.stepMs !== null).map((r) => Number(r.stepMs));
    // How fast the worker started executions meanwhile (below the sending rate: a backlog built up).
    const startedRate = stepTimes.length / ((Math.max(...stepTimes) - Math.min(...stepTimes)) / 1000);
    const result = {
      label,
      sent: total,
      rate: total / sendSeconds,
      startedRate,
      httpP50: percentile(httpMs, 50),
      httpP99: percentile(httpMs, 99),
      errors,
      missing,
      p50: percentile(fromAnswer, 50),
      p99: percentile(fromAnswer, 99),
      max: fromAnswer[fromAnswer.length - 1],
      createdP50: percentile(fromCreated, 50),
      createdP99: percentile(fromCreated, 99),
    };
    console.log(
      `  sent at ${result.rate.toFixed(0)}/s (${errors} errors; HTTP answer p50 ${result.httpP50.toFixed(1)} ms, p99 ${result.httpP99.toFixed(1)} ms); answer -> first step: p50 ${result.p50.toFixed(0)} ms, p99 ${result.p99.toFixed(0)} ms, max ${result.max.toFixed(0)} ms, ` +
        `${fromAnswer.filter((v) => v < 0).length} negative; created_at -> first step p50 ${result.createdP50.toFixed(0)} ms, p99 ${result.createdP99.toFixed(0)} ms` +
        `; the worker started ${startedRate.toFixed(0)} executions/s` +
        (missing ? `; ${missing} executions without a step record after 120 s` : ''),
    );
    return result;
  }

  /** A worker process listens on no port: started without waiting for /health/ready. */
  function startWorker(env, nodeArgs) {
    const child = spawn(process.execPath, [...nodeArgs, join(DIST, 'main.js')], {
      env: { PATH: process.env.PATH || '', NODE_PATH: join(ROOT, 'node_modules'), REDIS_URL, LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    return {
      pid: child.pid,
      stop: async () => {
        // Nest re-raises SIGTERM after its shutdown, so the child ends by signal (exitCode stays null).
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(timer);
      },
    };
  }
}

/** One POST /v1/track through `post` (jsonPoster); resolves with the status and the wall-clock time (ms, fractional) the answer ended. */
async function track(post, body) {
  const { status } = await post(body);
  return { status, at: performance.timeOrigin + performance.now() };
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function perStep(cpuSeconds, steps) {
  return `${cpuSeconds.toFixed(1)} s (${((cpuSeconds / steps) * 1e6).toFixed(0)} us/step)`;
}

function usage(before, after) {
  const busy = after.busy - before.busy;
  const total = after.total - before.total;
  return `${((busy / total) * 100).toFixed(0)}% (${busy.toFixed(1)} of ${total.toFixed(1)} core-seconds)`;
}

/** A process's state, threads and memory (Linux /proc). */
function procStatus(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name) => (status.match(new RegExp(`^${name}:\\s+(.*)$`, 'm')) || [])[1];
    return `state ${field('State')}, RSS ${field('VmRSS')}, ${field('Threads')} threads`;
  } catch {
    return 'gone';
  }
}

/** The process's peak resident set size (VmHWM), as /proc prints it. */
function procPeakRss(pid) {
  try {
    return (readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmHWM:\s+(.*)$/m) || [])[1] || 'unknown';
  } catch {
    return 'gone';
  }
}

/** About `kb` KB of HTML with Liquid in every paragraph (BENCH_BODY_KB: a template of a realistic size), or nothing. */
function filler(kb) {
  if (!kb) return '';
  const paragraph =
    '<p>Hello again {{ contact.email }}: lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod ' +
    'tempor incididunt ut labore et dolore magna aliqua. <a href="https://example.com/docs">Read the docs</a>.</p>\n';
  return paragraph.repeat(Math.ceil((kb * 1024) / paragraph.length));
}

/**
 * Preloaded into the worker (--require) when BENCH_PROFILE_DIR is set: the
 * first SIGWINCH starts the inspector's CPU profiler, the second stops it and
 * writes worker-<pid>.cpuprofile there. (node --cpu-prof writes nothing: the
 * worker ends by the SIGTERM Nest re-raises after its shutdown. SIGWINCH,
 * ignored by default, because Nest's shutdown hooks take SIGUSR2.)
 */
function installProfiler(dir) {
  const inspector = require('node:inspector');
  const session = new inspector.Session();
  session.connect();
  let running = false;
  // Meanwhile, every Postgres statement and Redis command the process sends is counted (by its text /
  // name), written beside the profile as worker-<pid>.commands.json: round trips per step.
  const counts = { postgres: new Map(), redis: new Map() };
  const count = (map, key) => running && map.set(key, (map.get(key) || 0) + 1);
  const pg = require('pg');
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (config, ...rest) {
    const text = typeof config === 'string' ? config : config?.text;
    if (running && typeof text === 'string') count(counts.postgres, text.slice(0, 200).replace(/\s+/g, ' ').trim().slice(0, 110));
    return query.call(this, config, ...rest);
  };
  if (process.env.BENCH_POOL_WAITERS === '1') recordPoolWaiters(pg, dir);
  const { Redis } = require('ioredis');
  const sendCommand = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function (command, ...rest) {
    count(counts.redis, command?.name === 'evalsha' ? `evalsha ${String(command.args?.[0]).slice(0, 8)}` : command?.name);
    return sendCommand.call(this, command, ...rest);
  };
  process.on('SIGWINCH', () => {
    if (!running) {
      running = true;
      session.post('Profiler.enable', () => session.post('Profiler.start'));
      return;
    }
    running = false;
    session.post('Profiler.stop', (error, result) => {
      if (error) return console.error('profile:', error.message);
      mkdirSync(dir, { recursive: true });
      const file = join(dir, `worker-${process.pid}.cpuprofile`);
      const sorted = (map) => Object.fromEntries([...map].sort((a, b) => b[1] - a[1]));
      writeFileSync(join(dir, `worker-${process.pid}.commands.json`), JSON.stringify({ postgres: sorted(counts.postgres), redis: sorted(counts.redis) }, null, 1));
      writeFileSync(`${file}.tmp`, JSON.stringify(result.profile));
      renameSync(`${file}.tmp`, file);
    });
  });
}

/**
 * BENCH_POOL_WAITERS=1 (with BENCH_PROFILE): callers waiting more than 10 s for a pool connection (a
 * pool starved by transactions that need a second connection) have their stacks written to
 * worker-<pid>.pool-waiters.txt every 5 s. Off by default: capturing a stack whenever the pool is
 * momentarily full (often, at 32 jobs on 20 connections) costs the worker about 3 %.
 */
function recordPoolWaiters(pg, dir) {
  const waiters = new Map();
  const connect = pg.Pool.prototype.connect;
  Error.stackTraceLimit = Math.max(Error.stackTraceLimit, 30);
  pg.Pool.prototype.connect = function (callback) {
    // Only a caller that will have to wait (no idle connection, the pool full) pays for a stack.
    if (this.idleCount > 0 || this.totalCount < this.options.max) return connect.call(this, callback);
    const token = {};
    // The Error's frames are captured now; formatting them (the costly part) waits until they are written.
    waiters.set(token, { at: Date.now(), error: new Error('waiting for a pool connection') });
    if (typeof callback === 'function') {
      return connect.call(this, (...args) => {
        waiters.delete(token);
        return callback(...args);
      });
    }
    return connect.call(this).finally(() => waiters.delete(token));
  };
  setInterval(() => {
    const old = [...waiters.values()].filter((w) => Date.now() - w.at > 10_000);
    if (old.length === 0) return;
    const byStack = new Map();
    for (const w of old) byStack.set(w.error.stack, (byStack.get(w.error.stack) || 0) + 1);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, `worker-${process.pid}.pool-waiters.txt`),
      [...byStack].map(([stack, n]) => `${n} waiting:\n${stack}\n`).join('\n'),
    );
  }, 5_000).unref();
}

if (require.main !== module) {
  if (process.env.BENCH_PROFILE_DIR) installProfiler(process.env.BENCH_PROFILE_DIR);
} else if (ROLE === 'chains') runChains();
else {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
