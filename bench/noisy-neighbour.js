'use strict';
/**
 * Noisy neighbour (issue 29, "Tests and benchmark"): can one tenant's
 * pathological work slow another tenant down?
 *
 * (a) Latency. One API process (APP_ROLE=api, the build under test, its
 *     defaults for RENDER_TIMEOUT_MS and API_STATEMENT_TIMEOUT_MS) and two
 *     projects. Tenant B sends a steady open-loop load (BENCH_RATE requests a
 *     second, default 15, within the default request limit: half
 *     `GET /contacts?limit=50` over its 10,000 contacts, half `POST /v1/send`
 *     to one recipient) for BENCH_SECONDS (default 40: 300 requests of each
 *     kind, so a p99 is the 4th-worst request rather than the 2nd-worst of
 *     20 s) twice: first with tenant A idle (the baseline, same run),
 *     then while A runs BENCH_A_LOOPS (default 2) closed loops of each of:
 *       - `POST /templates` with the review's 80-character Liquid body
 *         `{% assign a = (1..3000000) %}{{ a | where_exp: "i", "i > 0" | size }}`
 *         (rendered at save as a trial: it runs to the render deadline);
 *       - `POST /v1/send` of `<ul><li>` nested 40,000 deep (HTML to text);
 *       - `POST /segments/preview` with 50 rules (25 data, 25 event counts, OR)
 *         over A's 82,000 contacts and 250,000 events.
 *     A runs on a thread of its own (its own client). Printed: B's p50/p99
 *     for each kind idle and noisy, the ratio of the p99s (target: noisy p99
 *     <= 2 x idle p99), what A's requests answered, and the CPU time the API
 *     process (event loop, other threads) and the database's backends used
 *     in each window (a figure that a loaded machine does not distort much).
 *
 * (b) Memory. A worker process (APP_ROLE=worker) with the compose file's
 *     NODE_OPTIONS (its heap cap `--max-old-space-size=256`) delivers to a local SMTP sink while A
 *     sends BENCH_CAMPAIGNS (default 200) campaigns with distinct bodies of
 *     about 1 MB (each to 2 contacts of a third project, so the work is
 *     rendering and holding bodies, not volume). Printed: the worker's RSS
 *     idle and at its peak (the whole process: the main heap, the render
 *     threads' heaps, buffers), the main thread's V8 heap at its peak (what
 *     the cap bounds; read from the worker's GET /metrics), whether it lived,
 *     how many messages arrived. Targets (issue 29): peak RSS under the cap;
 *     the worker lives and every message arrives.
 *
 *   npm run bench:noisy-neighbour
 *   BENCH_PART=latency|memory ...     (one part only)
 *   BENCH_A_KINDS=segment ...         (A runs only these of template,deep-html,segment)
 *   BENCH_API_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof'   (node flags of the API process)
 *   BENCH_RUNS=5 ...                  (the latency part five times: every run's ratios and their medians)
 *   BENCH_TRACE=/tmp/noisy.json ...   (every request of B's noisy window and of A, with its start and
 *                                      duration, to line B's slowest requests up with A's work)
 */
const { isMainThread, parentPort, Worker, workerData } = require('node:worker_threads');
const { readdirSync, readFileSync, readlinkSync } = require('node:fs');
const { setPriority } = require('node:os');
const { join } = require('node:path');
const { Client } = require('pg');
const {
  createBenchDatabase,
  createProject,
  freePort,
  percentile,
  rssBytes,
  sleep,
  startApp,
  startSink,
  startWorker,
} = require('./support');

const RATE = Number(process.env.BENCH_RATE || 15);
/** Requests per project per minute: the service's default unless set; B's steady load (RATE x 60) fits within it. */
const API_RATE_LIMIT = process.env.BENCH_API_RATE_LIMIT || '1000';
const SECONDS = Number(process.env.BENCH_SECONDS || 40);
const A_LOOPS = Number(process.env.BENCH_A_LOOPS || 2);
const CAMPAIGNS = Number(process.env.BENCH_CAMPAIGNS || 200);
const PART = process.env.BENCH_PART || 'both';
/** A's kinds of pathological request (a subset shows which one hurts). */
const A_KINDS = new Set((process.env.BENCH_A_KINDS || 'template,deep-html,segment').split(','));
const TRACE = process.env.BENCH_TRACE || '';
/** Latency runs, each on a fresh database and service (BENCH_RUNS, default 1). */
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS || 1));
const PREFIX = `mwbenchnoisy${process.pid}`;
/** The worker's node options as deployed: the NODE_OPTIONS of docker-compose.yml's worker (as bench/campaign.js). */
const WORKER_NODE_OPTIONS = (
  (/^\s*NODE_OPTIONS:\s*"([^"]*)"/m.exec(
    readFileSync(join(__dirname, '..', 'docker-compose.yml'), 'utf8'),
  ) ?? [])[1] ?? '--max-old-space-size=256'
)
  .split(' ')
  .filter(Boolean);
const HEAP_CAP_MB = Number(
  (WORKER_NODE_OPTIONS.find((o) => o.startsWith('--max-old-space-size=')) ?? '=256').split('=')[1],
);

const POISON_LIQUID = '{% assign a = (1..3000000) %}{{ a | where_exp: "i", "i > 0" | size }}';
const DEEP_HTML = '<ul><li>'.repeat(40_000) + 'x' + '</li></ul>'.repeat(40_000);

async function api(base, key, method, route, body) {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, json };
}

async function verifiedDomain(pg, base, key, domain) {
  const res = await api(base, key, 'POST', '/domains', { domain });
  if (res.status !== 201)
    throw new Error(`domain create answered ${res.status}: ${JSON.stringify(res.json)}`);
  await pg.query(`UPDATE domains SET status = 'VERIFIED', verified_at = now() WHERE id = $1`, [
    res.json.data.id,
  ]);
}

async function seedContacts(pg, projectId, n, tag) {
  await pg.query(
    `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
     SELECT gen_random_uuid(), $1, $2 || i || '@example.org', true,
            jsonb_build_object('plan', (ARRAY['free','pro','team'])[1 + i % 3], 'age', i % 90, 'city', 'c' || (i % 500)),
            now() - interval '1 day', now() - interval '1 day'
       FROM generate_series(1, $3::int) AS i`,
    [projectId, tag, n],
  );
}

async function seedEvents(pg, projectId, n) {
  await pg.query(
    `INSERT INTO events (id, project_id, contact_id, name, data, created_at)
     SELECT gen_random_uuid(), $1, c.id, 'ev' || ((c.r + g) % 25), '{}', now() - ((c.r * 7 + g) % 40) * interval '1 day'
       FROM (SELECT id, row_number() OVER () AS r FROM contacts WHERE project_id = $1) c
       JOIN generate_series(1, 3) AS g ON true
      WHERE c.r * 3 <= $2::int`,
    [projectId, n],
  );
  await pg.query('ANALYZE contacts, events');
}

function fiftyRules() {
  const conditions = [];
  for (let i = 0; i < 25; i++)
    conditions.push({ field: `data.city`, operator: 'contains', value: `zz${i}` });
  for (let i = 0; i < 25; i++)
    conditions.push({
      field: `event.ev${i}`,
      operator: 'triggeredAtLeast',
      value: { count: 3, amount: 30, unit: 'days' },
    });
  return { logic: 'OR', conditions };
}

/** B's open-loop load: a request every 1000/RATE ms, alternating the two kinds; latencies by kind. */
async function tenantB(base, key, seconds) {
  const lat = { contacts: [], send: [] };
  const trace = [];
  const failures = {};
  const pending = [];
  const interval = 1000 / RATE;
  const start = Date.now();
  for (let i = 0; Date.now() - start < seconds * 1000; i++) {
    const due = start + i * interval;
    if (due > Date.now()) await sleep(due - Date.now());
    const kind = i % 2 === 0 ? 'contacts' : 'send';
    const t0 = performance.now();
    const call =
      kind === 'contacts'
        ? api(base, key, 'GET', '/contacts?limit=50')
        : api(base, key, 'POST', '/v1/send', {
            to: `b${i}@example.org`,
            from: 'hello@b.example',
            subject: 'Hello {{ email }}',
            body: '<p>Hi {{ email }}, your code is <b>{{ code }}</b>.</p>',
            data: { code: String(i) },
          });
    pending.push(
      call.then(
        (res) => {
          const expected = kind === 'contacts' ? 200 : 200;
          if (res.status !== expected)
            failures[`${kind} ${res.status}`] = (failures[`${kind} ${res.status}`] ?? 0) + 1;
          else lat[kind].push(performance.now() - t0);
          trace.push({
            at: Date.now() - (performance.now() - t0),
            kind,
            status: res.status,
            ms: performance.now() - t0,
          });
        },
        (error) => {
          failures[`${kind} ${error.message}`] = (failures[`${kind} ${error.message}`] ?? 0) + 1;
        },
      ),
    );
  }
  await Promise.all(pending);
  for (const k of Object.keys(lat)) lat[k].sort((a, b) => a - b);
  return { lat, failures, trace };
}

/** A's loops until `stop` is set; answers by kind and status. */
function tenantALoops(base, key, state) {
  const answers = {};
  const trace = [];
  const count = (kind, status, started) => {
    answers[`${kind} ${status}`] = (answers[`${kind} ${status}`] ?? 0) + 1;
    if (TRACE) trace.push({ at: started, kind, status, ms: Date.now() - started });
  };
  const loop = async (kind, fn) => {
    if (!A_KINDS.has(kind)) return;
    while (!state.stop) {
      const started = Date.now();
      try {
        const res = await fn();
        count(kind, res.status, started);
      } catch (error) {
        count(kind, error.message, started);
      }
    }
  };
  const loops = [];
  for (let i = 0; i < A_LOOPS; i++) {
    loops.push(
      loop('template', () =>
        api(base, key, 'POST', '/templates', {
          name: `poison ${i}`,
          type: 'TRANSACTIONAL',
          subject: 'x',
          body: POISON_LIQUID,
        }),
      ),
    );
    loops.push(
      loop('deep-html', () =>
        api(base, key, 'POST', '/v1/send', {
          to: 'victim@example.org',
          from: 'hello@a.example',
          subject: 'x',
          body: DEEP_HTML,
        }),
      ),
    );
    loops.push(
      loop('segment', () =>
        api(base, key, 'POST', '/segments/preview', { condition: fiftyRules() }),
      ),
    );
  }
  return { answers, trace, done: Promise.all(loops) };
}

/**
 * Tenant A as a client of its own, on a thread of its own: its loops' client work (a 720 kB JSON
 * body built for each deep-HTML request, hundreds of answers a second) would otherwise run on the
 * event loop that times B's requests, and B's latencies would include A's client as well as the
 * service. A neighbour's client is not on the other tenant's machine; here it at least has its
 * own event loop. Returns stop() and A's answers once its loops ended.
 */
function tenantA(base, key) {
  const thread = new Worker(__filename, { workerData: { role: 'tenant-a', base, key } });
  const done = new Promise((resolve, reject) => {
    thread.once('message', resolve);
    thread.once('error', reject);
  });
  return { stop: () => thread.postMessage('stop'), done };
}

function runTenantAThread() {
  // A's client runs at the lowest priority: on this machine it shares two cores with the service
  // and with B's client, where a real neighbour's client runs on its own machine. What A's
  // requests cost the service stays in the measure; what building them costs A's client does not.
  try {
    setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), 19);
  } catch {
    // not Linux: A's client keeps its priority
  }
  const state = { stop: false };
  const a = tenantALoops(workerData.base, workerData.key, state);
  parentPort.once('message', () => (state.stop = true));
  a.done.then(() => {
    parentPort.postMessage({ answers: a.answers, trace: a.trace });
    parentPort.close();
  });
}

/** CPU seconds a thread or process has used (utime + stime from /proc; Linux clock ticks of 10 ms). */
function cpuSeconds(statPath) {
  try {
    const stat = readFileSync(statPath, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/**
 * Where the CPU went: the API process's main thread (the event loop), its other threads (render
 * threads, GC and libuv helpers), and the Postgres backends connected to the bench database. A
 * thread that ended within the window (a render thread stopped at its deadline) is not counted.
 */
async function cpuUse(appPid, pg, database) {
  const tasks = readdirSync(`/proc/${appPid}/task`);
  let other = 0;
  for (const tid of tasks)
    if (tid !== String(appPid)) other += cpuSeconds(`/proc/${appPid}/task/${tid}/stat`);
  const { rows } = await pg.query(
    'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
    [database],
  );
  const backends = {};
  for (const { pid } of rows) backends[pid] = cpuSeconds(`/proc/${pid}/stat`);
  return { main: cpuSeconds(`/proc/${appPid}/task/${appPid}/stat`), other, backends };
}

function cpuSpent(before, after) {
  let postgres = 0;
  // A backend that ended within the window is not seen: the pool keeps its connections, but drops
  // one whose statement failed (a preview stopped by the statement timeout), and its CPU with it.
  for (const [pid, s] of Object.entries(after.backends))
    postgres += s - (before.backends[pid] ?? 0);
  return `API main thread ${(after.main - before.main).toFixed(1)} s, API other threads ${(after.other - before.other).toFixed(1)} s, Postgres backends ${postgres.toFixed(1)} s`;
}

function summary(label, r) {
  const row = (k) =>
    `${k.padEnd(9)} n=${String(r.lat[k].length).padStart(4)} p50 ${percentile(r.lat[k], 50).toFixed(1).padStart(7)} ms  p99 ${percentile(
      r.lat[k],
      99,
    )
      .toFixed(1)
      .padStart(7)} ms`;
  console.log(`  B with A ${label}:`);
  console.log(`    ${row('contacts')}`);
  console.log(`    ${row('send')}`);
  if (Object.keys(r.failures).length)
    console.log(`    not answered as expected: ${JSON.stringify(r.failures)}`);
}

async function latencyPart() {
  const db = await createBenchDatabase('noisy');
  const pg = new Client({ connectionString: db.url });
  await pg.connect();
  let app;
  try {
    const a = createProject(db.url, 'Tenant A (noisy)');
    const b = createProject(db.url, 'Tenant B');
    console.log('seeding: A 82,000 contacts and 246,000 events, B 10,000 contacts ...');
    await seedContacts(pg, a.project.id, 82_000, 'a');
    await seedEvents(pg, a.project.id, 246_000);
    await seedContacts(pg, b.project.id, 10_000, 'b');
    await pg.query('VACUUM ANALYZE contacts, events');
    const appSpawnedAt = Date.now();
    app = await startApp(
      {
        DATABASE_URL: db.url,
        APP_ROLE: 'api',
        QUEUE_PREFIX: PREFIX,
        API_RATE_LIMIT_PER_MINUTE: API_RATE_LIMIT,
      },
      (process.env.BENCH_API_NODE_ARGS || '').split(' ').filter(Boolean),
    );
    await verifiedDomain(pg, app.base, a.secretKey, 'a.example');
    await verifiedDomain(pg, app.base, b.secretKey, 'b.example');
    // Warm-up: connections, caches, render threads.
    await tenantB(app.base, b.secretKey, 3);

    const database = new URL(db.url).pathname.slice(1);
    console.log(`(a) B at ${RATE} requests/s for ${SECONDS} s, A idle ...`);
    const idleCpu = await cpuUse(app.child.pid, pg, database);
    const idle = await tenantB(app.base, b.secretKey, SECONDS);
    const idleCpuEnd = await cpuUse(app.child.pid, pg, database);
    console.log(
      `(a) B at ${RATE} requests/s for ${SECONDS} s, A running ${A_LOOPS} loops of each pathological request ...`,
    );
    const noisyA = tenantA(app.base, a.secretKey);
    await sleep(2000);
    const noisyCpu = await cpuUse(app.child.pid, pg, database);
    const noisy = await tenantB(app.base, b.secretKey, SECONDS);
    const noisyCpuEnd = await cpuUse(app.child.pid, pg, database);
    noisyA.stop();
    const { answers: answersA, trace: traceA } = await noisyA.done;
    if (TRACE) {
      require('node:fs').writeFileSync(
        TRACE,
        JSON.stringify({ appSpawnedAt, b: noisy.trace, a: traceA }),
      );
      console.log(`  trace of B's noisy window and of A: ${TRACE}`);
    }

    console.log('Results (a):');
    summary('idle (baseline)', idle);
    summary('noisy', noisy);
    console.log(`  A's requests answered: ${JSON.stringify(answersA)}`);
    console.log(`  CPU in B's window, A idle: ${cpuSpent(idleCpu, idleCpuEnd)}`);
    console.log(`  CPU in B's window, A noisy: ${cpuSpent(noisyCpu, noisyCpuEnd)}`);
    let met = true;
    const ratios = {};
    for (const k of ['contacts', 'send']) {
      const ratio = percentile(noisy.lat[k], 99) / percentile(idle.lat[k], 99);
      ratios[k] = ratio;
      const ok = ratio <= 2 && Object.keys(noisy.failures).length === 0;
      met &&= ok;
      console.log(
        `  ratio B ${k} p99 noisy/idle: ${ratio.toFixed(2)}x  (target <= 2x: ${ok ? 'met' : 'MISSED'})`,
      );
    }
    return { met, ratios, failed: Object.keys(noisy.failures).length > 0 };
  } finally {
    await app?.stop();
    await pg.end();
    await db.drop();
  }
}

async function memoryPart() {
  const db = await createBenchDatabase('noisymem');
  const pg = new Client({ connectionString: db.url });
  await pg.connect();
  const sink = await startSink();
  let app;
  let worker;
  try {
    const a = createProject(db.url, 'Tenant A (big bodies)');
    await seedContacts(pg, a.project.id, 2, 'm');
    // No DNS here: the sender's domain stays unverified and the mail goes out unsigned (as bench/campaign.js).
    const common = {
      DATABASE_URL: db.url,
      QUEUE_PREFIX: `${PREFIX}m`,
      REQUIRE_VERIFIED_SENDER: 'false',
    };
    // This part measures the worker; the API only creates the campaigns. Saving a 1 MB body renders
    // it once as a trial, which can take more than the free 25 ms, and 200 of them would spend the
    // project's budget of expensive work: lifted here.
    app = await startApp({
      ...common,
      APP_ROLE: 'api',
      API_RATE_LIMIT_PER_MINUTE: API_RATE_LIMIT,
      EXPENSIVE_WORK_BUDGET_MS: '3600000',
    });
    const metricsPort = await freePort();
    worker = await startWorker(
      {
        ...common,
        APP_ROLE: 'worker',
        SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
        EMAIL_RATE_PER_SECOND: '1000',
        DELIVERY_GROUP_RATES: require('./support').LIFTED_GROUP_RATES,
        WORKER_METRICS_PORT: String(metricsPort),
      },
      WORKER_NODE_OPTIONS,
    );
    await sleep(1000);
    const idleRss = rssBytes(worker.pid);
    console.log(
      `(b) ${CAMPAIGNS} campaigns with distinct ~1 MB bodies, 2 recipients each, worker heap capped at ${HEAP_CAP_MB} MB (${WORKER_NODE_OPTIONS.join(' ')}) ...`,
    );
    const ids = [];
    for (let i = 0; i < CAMPAIGNS; i++) {
      // Distinct sources: the parsed-template cache cannot share them.
      const filler = `<p>campaign ${i} ${'lorem ipsum dolor sit amet '.repeat(64)}</p>\n`.repeat(
        520,
      );
      const body = `<html><body><p>Hello {{ contact.email }}</p>${filler}<a href="{{ unsubscribeUrl }}">Unsubscribe</a></body></html>`;
      const res = await api(app.base, a.secretKey, 'POST', '/campaigns', {
        name: `big ${i}`,
        subject: `Big ${i} for {{ contact.email }}`,
        body,
        from: 'news@a.example',
        audienceType: 'ALL',
      });
      if (res.status !== 201)
        throw new Error(
          `campaign create answered ${res.status}: ${JSON.stringify(res.json).slice(0, 300)}`,
        );
      ids.push(res.json.data.id);
    }
    await sink.reset();
    let peakRss = idleRss;
    const sampler = setInterval(() => {
      try {
        peakRss = Math.max(peakRss, rssBytes(worker.pid));
      } catch {
        // gone: reported below
      }
    }, 100);
    // The main thread's heap from prom-client's default metrics, every half second (a scrape costs
    // the worker a little; RSS above is read from /proc for free).
    let peakHeap = 0;
    let heapSampling = true;
    const heapSampler = (async () => {
      while (heapSampling) {
        try {
          const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
          const used = /^mailwright_nodejs_heap_size_used_bytes (\S+)$/m.exec(text);
          if (used) peakHeap = Math.max(peakHeap, Number(used[1]));
        } catch {
          // gone or busy: the next sample
        }
        await sleep(500);
      }
    })();
    const t0 = Date.now();
    for (const id of ids) {
      const res = await api(app.base, a.secretKey, 'POST', `/campaigns/${id}/send`, {});
      if (res.status !== 202) throw new Error(`send answered ${res.status}`);
    }
    const expected = CAMPAIGNS * 2;
    let arrived = 0;
    let alive = true;
    const deadline = Date.now() + 15 * 60_000;
    while (Date.now() < deadline) {
      arrived = (await sink.stats()).count;
      try {
        rssBytes(worker.pid);
      } catch {
        alive = false;
        break;
      }
      if (arrived >= expected) break;
      await sleep(250);
    }
    clearInterval(sampler);
    heapSampling = false;
    await heapSampler;
    const mb = (n) => (n / 1024 / 1024).toFixed(0);
    console.log('Results (b):');
    console.log(
      `  worker RSS idle ${mb(idleRss)} MB, peak ${mb(peakRss)} MB (heap cap ${HEAP_CAP_MB} MB; RSS also holds the render threads)`,
    );
    console.log(
      `  worker main-thread V8 heap used, peak ${peakHeap ? `${mb(peakHeap)} MB` : 'not read'}`,
    );
    console.log(
      `  worker alive: ${alive ? 'yes' : 'NO'}; messages arrived ${arrived}/${expected} in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    );
    const lived = alive && arrived >= expected;
    const underCap = peakRss < HEAP_CAP_MB * 1024 * 1024;
    console.log(`  target (the worker lives, every message arrives): ${lived ? 'met' : 'MISSED'}`);
    console.log(
      `  target (peak RSS under the ${HEAP_CAP_MB} MB cap): ${underCap ? 'met' : 'MISSED'}`,
    );
    return lived && underCap;
  } finally {
    await worker?.stop();
    await app?.stop();
    sink.child.kill();
    await pg.end();
    await db.drop();
  }
}

/**
 * The latency part RUNS times over (each on a fresh database and service), then every run's ratios
 * and their medians: one run's p99 is its 3rd-worst request of 300, and runs of one build spread
 * widely (send 1.5-4.3x in the eleventh session). With RUNS > 1 the target is judged on the medians.
 */
async function latencyRuns() {
  const runs = [];
  for (let i = 1; i <= RUNS; i++) {
    if (RUNS > 1) console.log(`--- latency run ${i} of ${RUNS}`);
    runs.push(await latencyPart());
  }
  if (RUNS === 1) return runs[0].met;
  const median = (values) => {
    const sorted = [...values].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  };
  let met = !runs.some((r) => r.failed);
  console.log(`Latency over ${RUNS} runs:`);
  for (const k of ['contacts', 'send']) {
    const values = runs.map((r) => r.ratios[k]);
    const m = median(values);
    met &&= m <= 2;
    console.log(
      `  B ${k} p99 noisy/idle: ${values.map((v) => v.toFixed(2) + 'x').join(', ')}; median ${m.toFixed(2)}x  (target <= 2x: ${m <= 2 ? 'met' : 'MISSED'})`,
    );
  }
  return met;
}

async function main() {
  let ok = true;
  if (PART === 'both' || PART === 'latency') ok = (await latencyRuns()) && ok;
  if (PART === 'both' || PART === 'memory') ok = (await memoryPart()) && ok;
  process.exitCode = ok ? 0 : 1;
}

if (!isMainThread && workerData?.role === 'tenant-a') {
  runTenantAThread();
} else {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
