'use strict';
/**
 * Campaign fan-out at a million recipients: 1,000,000 subscribed contacts
 * (seeded by SQL), one campaign (20 KB HTML body with a Liquid variable,
 * audienceType ALL) sent through POST /campaigns/{id}/send to an API process
 * (APP_ROLE=api), fanned out and delivered by a separate worker process
 * (APP_ROLE=worker) to a local SMTP sink (bench/smtp-sink.js). Measured:
 *
 *   (a) fan-out rate: records/s from POST /send until campaigns.fanout_done,
 *       beside a baseline measured in the same run: one direct
 *       `INSERT INTO emails (...) SELECT ... FROM contacts` writing the same
 *       columns insertBulk writes, for a throwaway campaign whose counter rows
 *       exist (so the counters trigger does its work). Target >= 50 %.
 *   (b) peak worker RSS during the fan-out (/proc/<pid>/status every 100 ms). Target < 200 MB.
 *   (c) database growth per recipient (emails with indexes and TOAST,
 *       campaign_counters, email_contents, events), over the fan-out. Target <= 1 KB.
 *   (d) POST /send to the first message accepted by the sink. Target < 1 s.
 *   (e) GET /campaigns/{id}/stats at a million recipients while delivery runs,
 *       200 sequential requests: median (target < 50 ms) and p95.
 *
 * Order: the baseline runs first, on the empty emails table the migrations
 * left, then the table is emptied with TRUNCATE (a new, empty file for the
 * table and each index: no dead tuples or half-empty index pages left behind),
 * vacuumed and checkpointed, so the service starts from the same empty table
 * with the same warm contacts. Run second, the baseline would insert into a
 * table already holding the service's million rows (bigger indexes, rows being
 * updated by delivery), which is not the same work. Both phases start right
 * after a CHECKPOINT. No worker runs during the baseline (its recovery sweep
 * would pick up the baseline's QUEUED rows).
 *
 * The baseline's email ids are time-ordered (UUIDv7 layout, built in SQL),
 * like the service's (uuid v7 in Node): random v4 ids (gen_random_uuid())
 * would scatter the primary-key inserts and make the baseline slower and
 * larger than the service for a reason that is not the fan-out's.
 *
 * Delivery runs during the fan-out as in production (one worker process does
 * both), by default with the rate limit lifted as in bench/delivery.js: the
 * worst case for the fan-out on a small machine, since every message of a
 * 20 KB body is rendered, link-tracked and MIME-encoded on the same event
 * loop. BENCH_RATE=14 (the service's default limit) leaves the fan-out nearly
 * alone. The CPU line splits the machine's busy time by process group; "other"
 * is whatever else ran on the machine (a large share means a noisy run).
 * The worker gets SIGKILL when it has not exited 10 s after SIGTERM: a RUN job
 * of a campaign still sending holds its shutdown.
 *
 *   npm run bench:campaign                       (builds first; BENCH_CONTACTS=1000000)
 *   BENCH_CONTACTS=50000 node bench/campaign.js  (against dist/, or BENCH_DIST=<build>)
 *   BENCH_RATE=100 ...                           (the worker's EMAIL_RATE_PER_SECOND; default lifted)
 *   BENCH_NODE_ARGS=--cpu-prof ...               (more node options of the worker, e.g. a CPU profile; it
 *                                                 always gets the NODE_OPTIONS of docker-compose.yml's worker,
 *                                                 or BENCH_WORKER_NODE_OPTIONS instead)
 *   BENCH_CANCEL=1 ...                           (cancel the campaign at the end and time it; lets the
 *                                                 worker exit cleanly, which a --cpu-prof profile needs;
 *                                                 small audiences only: the cancel grows faster than linearly,
 *                                                 22 s at 50,000)
 */
const { existsSync, readFileSync } = require('node:fs');
const path = require('node:path');
const { join } = path;

const ROOT = join(__dirname, '..');
// A private build (BENCH_DIST outside the repository) resolves its packages from the repository's node_modules.
process.env.NODE_PATH = [join(ROOT, 'node_modules'), process.env.NODE_PATH].filter(Boolean).join(path.delimiter);
require('node:module').Module._initPaths();

const { Client } = require('pg');
const { v7: uuidv7 } = require('uuid');
const { DIST, REDIS_URL, createBenchDatabase, createProject, percentile, rssBytes, sleep, startApp, startSink, startWorker, deleteRedisKeys } = require('./support');

const { COUNTER_SLOTS } = require(join(DIST, 'campaigns/campaign-counter.entity.js'));
const { FANOUT_BATCH } = require(join(DIST, 'campaigns/campaign-runner.js'));
const { PRIORITY } = require(join(DIST, 'queue/queue.constants.js'));

const CONTACTS = Number(process.env.BENCH_CONTACTS || 1_000_000);
const RATE = Number(process.env.BENCH_RATE || 1_000_000);
const STATS_REQUESTS = Number(process.env.BENCH_STATS_REQUESTS || 200);
const CANCEL = process.env.BENCH_CANCEL === '1';
const SEED_CHUNK = 200_000;
const PREFIX = `mwbenchcp${process.pid}`;
const FROM = 'news@campaign-bench.example';
const FROM_NAME = 'Bench News';
const SUBJECT = 'News for {{ firstName | default: "you" }}';
const FANOUT_TIMEOUT_MS = 60 * 60_000;
/**
 * The worker's node options as deployed: the NODE_OPTIONS of the worker
 * service in docker-compose.yml (its heap cap). BENCH_WORKER_NODE_OPTIONS
 * replaces them (an empty value: V8's defaults).
 */
const WORKER_NODE_OPTIONS = (
  process.env.BENCH_WORKER_NODE_OPTIONS ??
  (/^\s*NODE_OPTIONS:\s*"([^"]*)"/m.exec(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8')) ?? [])[1] ??
  ''
).split(' ').filter(Boolean);

const TARGETS = { ratio: 0.5, rssMb: 200, bytesPerRecipient: 1024, firstMessageS: 1, statsMedianMs: 50 };

/** A newsletter of about 20 KB: paragraphs and links, one Liquid variable. */
function campaignBody() {
  const parts = ['<html><body><h1>Hello {{ firstName | default: "there" }},</h1>'];
  for (let i = 0; parts.join('').length < 20_000; i++) {
    parts.push(
      `<p>Story ${i}: lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. ` +
        `Ut enim ad minim veniam, quis nostrud exercitation. <a href="https://news.example/stories/${i}">Read more</a></p>`,
    );
  }
  parts.push('<p><a href="{{ unsubscribeUrl }}">Unsubscribe</a></p></body></html>');
  return parts.join('\n');
}

/** CPU seconds (user + system) of a process so far. */
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU seconds of a process that may be gone (0 then). */
function cpuSecondsOr0(pid) {
  try {
    return cpuSeconds(pid);
  } catch {
    return 0;
  }
}

/**
 * CPU seconds so far by group: the processes of this run, Postgres (backends
 * of this database, and the background processes), Redis, the whole machine.
 */
async function cpuSnapshot(ctx) {
  const { rows } = await ctx.pg.query(
    `SELECT pid, datname = current_database() AS ours FROM pg_stat_activity WHERE datname = current_database() OR datname IS NULL`,
  );
  const pgPids = {};
  for (const r of rows) pgPids[r.pid] = { ours: r.ours, cpu: cpuSecondsOr0(r.pid) };
  return {
    worker: cpuSecondsOr0(ctx.worker.pid),
    api: cpuSecondsOr0(ctx.apiPid),
    sink: cpuSecondsOr0(ctx.sink.child.pid),
    redis: ctx.redisPid ? cpuSecondsOr0(ctx.redisPid) : 0,
    bench: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
    pgPids,
    machine: machineJiffies(),
  };
}

/** The CPU each group used between two snapshots (Postgres processes seen only at the end count from 0). */
function cpuUsed(a, b) {
  const pg = { ours: 0, other: 0 };
  for (const [pid, end] of Object.entries(b.pgPids)) {
    const start = a.pgPids[pid] ? a.pgPids[pid].cpu : 0;
    pg[end.ours ? 'ours' : 'other'] += end.cpu - start;
  }
  return {
    worker: b.worker - a.worker,
    api: b.api - a.api,
    sink: b.sink - a.sink,
    redis: b.redis - a.redis,
    bench: b.bench - a.bench,
    pgOurs: pg.ours,
    pgOther: pg.other,
    machineBusy: (b.machine.busy - a.machine.busy) / 100,
    machineTotal: (b.machine.total - a.machine.total) / 100,
  };
}

/** Busy and total jiffies of the whole machine. */
function machineJiffies() {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = cpu[3] + cpu[4];
  const total = cpu.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

/** Contact ids in the UUIDv7 layout, time-ordered like the service's; 3 in 4 contacts have data. */
async function seedContacts(pg, projectId) {
  const baseMs = Date.now() - 86_400_000 - CONTACTS;
  for (let from = 1; from <= CONTACTS; from += SEED_CHUNK) {
    const to = Math.min(CONTACTS, from + SEED_CHUNK - 1);
    await pg.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, suppressed, data, created_at, updated_at)
       SELECT (lpad(to_hex($2::bigint + i), 12, '0') || '7' || substr(md5(i::text), 1, 3) || '8' || substr(md5(i::text), 4, 15))::uuid,
              $1, 'person' || i || '@campaign-bench.example', TRUE, FALSE,
              CASE WHEN i % 4 = 0 THEN '{}'::jsonb ELSE jsonb_build_object('firstName', 'N' || i) END,
              now() - interval '1 day', now() - interval '1 day'
         FROM generate_series($3::int, $4::int) AS i`,
      [projectId, baseMs, from, to],
    );
  }
  await pg.query('VACUUM ANALYZE contacts');
}

const SIZED = ['emails', 'campaign_counters', 'email_contents', 'events'];

async function sizes(pg) {
  const { rows } = await pg.query(
    // A partitioned table (emails, events) has no storage of its own: its partitions' sizes are summed.
    // (pg_partition_tree lists nothing for a plain table: the table itself then).
    `SELECT c.relname AS name, sum(pg_relation_size(r.oid))::bigint AS heap,
            sum(pg_indexes_size(r.oid))::bigint AS indexes, sum(pg_total_relation_size(r.oid))::bigint AS total
       FROM pg_class c
       CROSS JOIN LATERAL (SELECT relid AS oid FROM pg_partition_tree(c.oid) WHERE c.relkind = 'p'
                           UNION ALL SELECT c.oid WHERE c.relkind = 'r') r
      WHERE c.relkind IN ('r', 'p') AND c.relnamespace = 'public'::regnamespace AND c.relname = ANY($1)
      GROUP BY c.relname`,
    [SIZED],
  );
  const out = {};
  for (const r of rows) out[r.name] = { heap: Number(r.heap), indexes: Number(r.indexes), total: Number(r.total) };
  return out;
}

/**
 * The baseline: the same rows insertBulk writes (same columns and values,
 * time-ordered ids), for every subscribed, non-suppressed contact, in one
 * statement, for a throwaway campaign whose counter rows exist first.
 * Answers its rate and the emails table's size afterwards; then leaves the
 * tables as it found them (TRUNCATE emails, the throwaway rows deleted).
 */
async function baseline(pg, projectId, body) {
  const campaignId = uuidv7();
  const contentId = uuidv7();
  await pg.query(
    `INSERT INTO campaigns (id, project_id, name, subject, body, from_email, from_name, audience_type, status)
     VALUES ($1, $2, 'baseline (throwaway)', $3, $4, $5, $6, 'ALL', 'DRAFT')`,
    [campaignId, projectId, SUBJECT, body, FROM, FROM_NAME],
  );
  await pg.query('INSERT INTO email_contents (id, project_id, subject, body) VALUES ($1, $2, $3, $4)', [contentId, projectId, SUBJECT, body]);
  await pg.query('INSERT INTO campaign_counters (campaign_id, slot) SELECT $1, s FROM generate_series(0, $2 - 1) AS s', [campaignId, COUNTER_SLOTS]);
  await pg.query('CHECKPOINT');
  const backendPid = (await pg.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  const cpuBefore = cpuSeconds(backendPid);
  const started = process.hrtime.bigint();
  const result = await pg.query(
    `INSERT INTO emails (id, project_id, contact_id, campaign_id, content_id, source, marketing, track_opens, track_clicks,
                         to_email, from_email, from_name, reply_to, subject, status, priority)
     SELECT (lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') || '7'
             || substr(replace(gen_random_uuid()::text, '-', ''), 14))::uuid,
            c.project_id, c.id, $2, $3, 'CAMPAIGN', TRUE, TRUE, TRUE, c.email, $4, $5, NULL, $6, 'QUEUED', $7
       FROM contacts c
      WHERE c.project_id = $1 AND c.subscribed = TRUE AND c.suppressed = FALSE`,
    [projectId, campaignId, contentId, FROM, FROM_NAME, SUBJECT, PRIORITY.CAMPAIGN],
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const backendCpu = cpuSeconds(backendPid) - cpuBefore;
  const {
    rows: [counted],
  } = await pg.query('SELECT sum(queued)::int AS n FROM campaign_counters WHERE campaign_id = $1', [campaignId]);
  if (result.rowCount !== CONTACTS || counted.n !== CONTACTS) {
    throw new Error(`baseline inserted ${result.rowCount} rows, counters say ${counted.n}, expected ${CONTACTS}`);
  }
  const size = (await sizes(pg)).emails;
  await pg.query('TRUNCATE emails');
  await pg.query('DELETE FROM campaign_counters WHERE campaign_id = $1', [campaignId]);
  await pg.query('DELETE FROM email_contents WHERE id = $1', [contentId]);
  await pg.query('DELETE FROM campaigns WHERE id = $1', [campaignId]);
  await pg.query('VACUUM ANALYZE emails, campaign_counters, email_contents, campaigns');
  await pg.query('CHECKPOINT');
  return { seconds, backendCpu, rate: CONTACTS / seconds, emailsBytesPerRow: size.total / CONTACTS, size };
}

async function api(base, key, method, route, body) {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  return { status: res.status, json };
}

/**
 * POST /send, then polls the campaign (every 100 ms) until fanout_done, the
 * sink until its first message, and the worker's RSS every 100 ms.
 */
async function sendAndWatch(ctx) {
  const { pg, sink, worker, base, key, campaignId } = ctx;
  let peakRss = 0;
  let watching = true;
  const sampler = setInterval(() => {
    if (!watching) return;
    try {
      peakRss = Math.max(peakRss, rssBytes(worker.pid));
    } catch {
      // the worker is gone: the poll below reports it
    }
  }, 100);
  const cpu0 = await cpuSnapshot(ctx);
  await sink.reset();
  const t0 = Date.now();
  const sent = await api(base, key, 'POST', `/campaigns/${campaignId}/send`, {});
  const acceptedMs = Date.now() - t0;
  if (sent.status !== 202) throw new Error(`send answered ${sent.status}: ${JSON.stringify(sent.json)}`);

  let firstAt = 0;
  const firstMessage = (async () => {
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      const stats = await sink.stats();
      if (stats.firstAt > 0) {
        firstAt = stats.firstAt;
        return;
      }
      await sleep(20);
    }
  })();

  let firstRecordMs = null;
  let firstClaimMs = null;
  let allRecordsMs = null;
  let doneMs = null;
  let lastReport = t0;
  const deadline = t0 + FANOUT_TIMEOUT_MS;
  while (doneMs === null) {
    const {
      rows: [row],
    } = await pg.query(
      `SELECT c.fanout_done AS done, c.status,
              (SELECT coalesce(sum(queued + sending + sent + failed + bounced + suppressed + cancelled), 0)::int
                 FROM campaign_counters k WHERE k.campaign_id = c.id) AS records,
              (SELECT coalesce(sum(sending + sent + failed + bounced), 0)::int
                 FROM campaign_counters k WHERE k.campaign_id = c.id) AS claimed
         FROM campaigns c WHERE c.id = $1`,
      [campaignId],
    );
    const now = Date.now();
    if (firstRecordMs === null && row.records > 0) firstRecordMs = now - t0;
    if (firstClaimMs === null && row.claimed > 0) firstClaimMs = now - t0;
    if (allRecordsMs === null && row.records >= CONTACTS) allRecordsMs = now - t0;
    if (row.done) doneMs = now - t0;
    if (row.status !== 'SENDING' && !row.done) throw new Error(`campaign is ${row.status} before its fan-out finished`);
    if (now - lastReport >= 10_000) {
      lastReport = now;
      const rate = row.records / ((now - t0) / 1000);
      console.log(`  ${((now - t0) / 1000).toFixed(0)} s: ${row.records} records (${rate.toFixed(0)}/s), worker RSS peak ${mb(peakRss)} MB`);
    }
    if (now > deadline) throw new Error(`fan-out not done after ${FANOUT_TIMEOUT_MS / 1000} s (${row.records} records)`);
    if (doneMs === null) await sleep(100);
  }
  watching = false;
  clearInterval(sampler);
  const cpu = cpuUsed(cpu0, await cpuSnapshot(ctx));
  await firstMessage;
  return { t0, acceptedMs, firstRecordMs, firstClaimMs, allRecordsMs, doneMs, peakRss, firstMessageMs: firstAt ? firstAt - t0 : null, cpu };
}

async function statsLatency(base, key, campaignId) {
  const get = async () => {
    const res = await api(base, key, 'GET', `/campaigns/${campaignId}/stats`);
    if (res.status !== 200) throw new Error(`stats answered ${res.status}: ${JSON.stringify(res.json)}`);
    return res.json.data;
  };
  for (let i = 0; i < 5; i++) await get(); // warm-up, not counted
  const latencies = [];
  let last;
  for (let i = 0; i < STATS_REQUESTS; i++) {
    const t = process.hrtime.bigint();
    last = await get();
    latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  latencies.sort((a, b) => a - b);
  return { median: percentile(latencies, 50), p95: percentile(latencies, 95), max: latencies[latencies.length - 1], last };
}

async function main() {
  console.log(
    `Campaign benchmark: ${CONTACTS} contacts, fan-out batches up to ${FANOUT_BATCH}, worker EMAIL_RATE_PER_SECOND=${RATE}, worker node options [${WORKER_NODE_OPTIONS.join(' ')}] (docker-compose.yml), build ${DIST}`,
  );
  const sink = await startSink();
  const db = await createBenchDatabase('campaign');
  const project = createProject(db.url, 'Campaign bench');
  const projectId = project.project.id;
  const key = project.secretKey;
  const pg = new Client({ connectionString: db.url });
  await pg.connect();
  const common = { DATABASE_URL: db.url, QUEUE_PREFIX: PREFIX, REQUIRE_VERIFIED_SENDER: 'false' };
  let app;
  let worker;
  try {
    let t = Date.now();
    console.log(`seeding ${CONTACTS} contacts (SQL) ...`);
    await seedContacts(pg, projectId);
    console.log(`  ${((Date.now() - t) / 1000).toFixed(1)} s (with VACUUM ANALYZE)`);

    app = await startApp({ ...common, APP_ROLE: 'api', API_RATE_LIMIT_PER_MINUTE: '10000000' });
    const body = campaignBody();

    console.log('baseline: one INSERT INTO emails ... SELECT FROM contacts (no worker running) ...');
    const base = await baseline(pg, projectId, body);
    console.log(`  ${base.rate.toFixed(0)} records/s (${base.seconds.toFixed(2)} s); emails table ${kb(base.emailsBytesPerRow)} KB/row; then TRUNCATE, VACUUM, CHECKPOINT`);

    const created = await api(app.base, key, 'POST', '/campaigns', {
      name: 'Bench newsletter',
      subject: SUBJECT,
      body,
      from: FROM,
      fromName: FROM_NAME,
      audienceType: 'ALL',
    });
    if (created.status !== 201) throw new Error(`campaign create answered ${created.status}: ${JSON.stringify(created.json)}`);
    const campaignId = created.json.data.id;

    worker = await startWorker(
      { ...common, APP_ROLE: 'worker', SMTP_URL: `smtp://127.0.0.1:${sink.port}`, EMAIL_RATE_PER_SECOND: String(RATE), DELIVERY_GROUP_RATES: require('./support').LIFTED_GROUP_RATES },
      [...WORKER_NODE_OPTIONS, ...(process.env.BENCH_NODE_ARGS || '').split(' ').filter(Boolean)],
    );
    await sleep(1000);
    const idleRss = rssBytes(worker.pid);
    const before = await sizes(pg);

    console.log(`service: POST /campaigns/{id}/send (body ${(Buffer.byteLength(body) / 1024).toFixed(1)} KB), worker pid ${worker.pid} ...`);
    const redisPid = await redisProcessId();
    const run = await sendAndWatch({ pg, sink, worker, base: app.base, key, campaignId, apiPid: app.child.pid, redisPid });
    const after = await sizes(pg);
    const serviceRate = CONTACTS / (run.doneMs / 1000);
    console.log(
      `  fan-out done after ${(run.doneMs / 1000).toFixed(2)} s: ${serviceRate.toFixed(0)} records/s ` +
        `(202 after ${run.acceptedMs} ms, first records seen at ${run.firstRecordMs} ms, all ${CONTACTS} at ${run.allRecordsMs} ms)`,
    );

    console.log(`stats: ${STATS_REQUESTS} sequential GET /campaigns/{id}/stats while delivery runs ...`);
    const stats = await statsLatency(app.base, key, campaignId);
    const sinkStats = await sink.stats();
    const {
      rows: [check],
    } = await pg.query(
      `SELECT (SELECT count(*)::int FROM emails WHERE campaign_id = $1) AS records, (SELECT status FROM campaigns WHERE id = $1) AS status`,
      [campaignId],
    );
    const recipients = stats.last.recipients;
    if (check.records !== CONTACTS || recipients !== CONTACTS) {
      console.error(`!! expected ${CONTACTS} records: count(*) says ${check.records}, stats.recipients ${recipients}`);
    }
    console.log(
      `  campaign ${check.status}; ${check.records} email records; stats: queued ${stats.last.queued}, sending ${stats.last.sending}, ` +
        `sent ${stats.last.sent}; sink received ${sinkStats.count}`,
    );

    // Not a target, opt-in (BENCH_CANCEL=1): what stopping a campaign of this size costs (every QUEUED
    // record becomes CANCELLED in the request). It also lets the worker exit cleanly (a --cpu-prof profile).
    let cancel = null;
    if (CANCEL) {
      const cancelStarted = Date.now();
      const res = await api(app.base, key, 'POST', `/campaigns/${campaignId}/cancel`, {});
      cancel = { status: res.status, ms: Date.now() - cancelStarted, emails: res.status === 200 ? stats.last.queued : null };
      if (res.status !== 200) console.error(`!! cancel answered ${res.status}: ${JSON.stringify(res.json)}`);
    }

    const growth = {};
    let growthTotal = 0;
    for (const name of SIZED) {
      growth[name] = after[name].total - before[name].total;
      growthTotal += growth[name];
    }
    const perRecipient = growthTotal / CONTACTS;
    const ratio = serviceRate / base.rate;
    const worst = (ok) => (ok ? 'met' : 'MISSED');

    console.log('');
    console.log(`Results (${CONTACTS} recipients; worker EMAIL_RATE_PER_SECOND=${RATE}):`);
    const rows = [
      ['measure', 'service', 'baseline', 'ratio', 'target', 'result'],
      [
        '(a) fan-out, records/s',
        serviceRate.toFixed(0),
        base.rate.toFixed(0),
        `${(ratio * 100).toFixed(1)} %`,
        '>= 50 % of baseline',
        worst(ratio >= TARGETS.ratio),
      ],
      ['(b) peak worker RSS in fan-out', `${mb(run.peakRss)} MB`, `idle ${mb(idleRss)} MB`, '', '< 200 MB', worst(run.peakRss < TARGETS.rssMb * 1024 * 1024)],
      [
        '(c) DB growth per recipient',
        `${perRecipient.toFixed(0)} B`,
        `${base.emailsBytesPerRow.toFixed(0)} B (emails only)`,
        `${((after.emails.total - before.emails.total) / CONTACTS / base.emailsBytesPerRow).toFixed(2)}x emails`,
        '<= 1 KB',
        worst(perRecipient <= TARGETS.bytesPerRecipient),
      ],
      [
        '(d) POST /send -> first message at sink',
        run.firstMessageMs === null ? 'none in 120 s' : `${run.firstMessageMs} ms`,
        '',
        '',
        '< 1 s',
        worst(run.firstMessageMs !== null && run.firstMessageMs < TARGETS.firstMessageS * 1000),
      ],
      [
        `(e) GET stats, ${STATS_REQUESTS} sequential`,
        `median ${stats.median.toFixed(1)} ms`,
        `p95 ${stats.p95.toFixed(1)} ms`,
        `max ${stats.max.toFixed(1)} ms`,
        'median < 50 ms',
        worst(stats.median < TARGETS.statsMedianMs),
      ],
    ];
    const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
    for (const [i, r] of rows.entries()) {
      console.log(`  ${r.map((cell, j) => cell.padEnd(widths[j])).join(' | ')}`);
      if (i === 0) console.log(`  ${widths.map((w) => '-'.repeat(w)).join('-|-')}`);
    }
    console.log('');
    console.log('Details:');
    console.log(
      `  fan-out (polled every 100 ms): 202 after ${run.acceptedMs} ms; first records at ${run.firstRecordMs} ms; first email claimed by delivery at ` +
        `${run.firstClaimMs} ms; first message at the sink at ${run.firstMessageMs} ms; ${CONTACTS} records at ${run.allRecordsMs} ms; ` +
        `fanout_done at ${run.doneMs} ms; baseline ${(base.seconds * 1000).toFixed(0)} ms`,
    );
    const c = run.cpu;
    const named = c.worker + c.api + c.sink + c.redis + c.bench + c.pgOurs + c.pgOther;
    console.log(
      `  CPU during the fan-out (${(run.doneMs / 1000).toFixed(1)} s wall = ${c.machineTotal.toFixed(1)} core-s on this machine), ` +
        `busy ${c.machineBusy.toFixed(1)} core-s: worker ${c.worker.toFixed(1)}, Postgres backends of this database ${c.pgOurs.toFixed(1)}, ` +
        `Postgres background ${c.pgOther.toFixed(1)}, Redis ${c.redis.toFixed(1)}, api ${c.api.toFixed(1)}, sink ${c.sink.toFixed(1)}, ` +
        `bench ${c.bench.toFixed(1)}, other ${(c.machineBusy - named).toFixed(1)}`,
    );
    console.log(`  baseline INSERT: ${base.seconds.toFixed(2)} s wall, its Postgres backend ${base.backendCpu.toFixed(1)} CPU-s`);
    console.log(`  messages accepted by the sink by the end of the fan-out + stats: ${sinkStats.count}`);
    if (cancel) console.log(`  POST /campaigns/{id}/cancel afterwards (not a target): ${cancel.status} after ${cancel.ms} ms`);
    console.log('  growth by table (bytes; heap / indexes / total incl. TOAST):');
    for (const name of SIZED) {
      const d = (k) => after[name][k] - before[name][k];
      console.log(`    ${name.padEnd(18)} ${String(d('heap')).padStart(12)} ${String(d('indexes')).padStart(12)} ${String(d('total')).padStart(12)}  (${(d('total') / CONTACTS).toFixed(1)} B/recipient)`);
    }
    console.log(
      `    baseline emails    ${String(base.size.heap).padStart(12)} ${String(base.size.indexes).padStart(12)} ${String(base.size.total).padStart(12)}  (${base.emailsBytesPerRow.toFixed(1)} B/row)`,
    );
  } finally {
    await pg.end().catch(() => undefined);
    if (app) await app.stop();
    if (worker && (await worker.stop())) console.log('note: the worker did not exit within 10 s of SIGTERM (campaign still sending); killed');
    sink.child.send({ type: 'stop' });
    await db.drop();
    await deleteRedisKeys(`${PREFIX}:*`);
  }
}

/** The Redis server's pid when it runs on this machine (INFO server), else null. */
async function redisProcessId() {
  const { Redis } = require('ioredis');
  const redis = new Redis(REDIS_URL);
  try {
    const info = await redis.info('server');
    const pid = Number(/process_id:(\d+)/.exec(info)?.[1]);
    return pid && existsSync(`/proc/${pid}/stat`) ? pid : null;
  } finally {
    redis.disconnect();
  }
}


function mb(bytes) {
  return (bytes / 1024 / 1024).toFixed(1);
}

function kb(bytes) {
  return (bytes / 1024).toFixed(2);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
