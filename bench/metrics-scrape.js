'use strict';
/**
 * GET /metrics latency with large tables: BENCH_EMAILS (default 10,000,000)
 * email rows, a tenth as many webhook deliveries and workflow executions,
 * written with INSERT … SELECT generate_series into a private database, in
 * batches of a million rows (the emails without triggers or per-row index
 * updates, their counters and indexes built after; the others through the
 * triggers), then VACUUM ANALYZE. An API process (APP_ROLE=api) of the build under test
 * is scraped BENCH_SCRAPES (20) times, each scrape more than the database
 * TTL (1 s, src/operations/metrics.service.ts) after the last, so every one
 * reads the counts; right after each, a second scrape serves the counts it
 * keeps: the baseline, measured in the same run, is that scrape (the
 * process metrics, the HTTP histograms and the rendering, no database read).
 * Target: the scrape's p50 under 50 ms whatever the table sizes. Also shown:
 * the grouped count(*) the scrape ran before the counters (the four
 * queries at once, as it ran them), timed on the same tables.
 *
 *   npm run bench:metrics     (BENCH_EMAILS=10000000 BENCH_SCRAPES=20)
 */
const { Client } = require('pg');
const { createBenchDatabase, createProject, startApp, percentile } = require('./support');

const EMAILS = Number(process.env.BENCH_EMAILS || 10_000_000);
const SCRAPES = Number(process.env.BENCH_SCRAPES || 20);
const OTHERS = Math.max(1, Math.floor(EMAILS / 10));
const CONTACTS = 10_000;
const CHUNK = 1_000_000;
const TOKEN = 'bench-metrics-token-0123456789';

const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const sleep = (n) => new Promise((resolve) => setTimeout(resolve, n));

async function api(base, key, method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()).data;
}

/** Inserts `total` rows with `insert(from, to)` (a statement over generate_series(from, to)), a million at a time. */
async function fill(pg, label, total, insert) {
  const t0 = process.hrtime.bigint();
  for (let from = 1; from <= total; from += CHUNK) {
    await pg.query(insert(from, Math.min(total, from + CHUNK - 1)));
    process.stderr.write(
      `\r${label}: ${Math.min(total, from + CHUNK - 1).toLocaleString('en')} rows`,
    );
  }
  process.stderr.write(` (${(ms(t0) / 1000).toFixed(0)} s)\n`);
}

async function scrape(base) {
  const t0 = process.hrtime.bigint();
  const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /metrics: ${res.status}`);
  return { ms: ms(t0), text };
}

function gauge(text, family) {
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^mailwright_${family}\\{[^}]*\\} (\\S+)$`, 'gm')))
    sum += Number(m[1]);
  return sum;
}

async function main() {
  const db = await createBenchDatabase('metrics');
  const project = createProject(db.url, 'Bench metrics');
  const app = await startApp({
    DATABASE_URL: db.url,
    APP_ROLE: 'api',
    METRICS_TOKEN: TOKEN,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    LOG_LEVEL: 'error',
  });
  const pg = new Client({ connectionString: db.url });
  await pg.connect();
  try {
    const key = project.secretKey;
    const endpoint = await api(app.base, key, 'POST', '/webhooks', {
      url: 'http://127.0.0.1:9/in',
      events: ['email.*'],
    });
    const workflow = await api(app.base, key, 'POST', '/workflows', {
      name: 'Bench',
      trigger: { type: 'MANUAL' },
      steps: [{ id: 'd', type: 'DELAY', amount: 1, unit: 'hours' }],
    });
    const pid = project.project?.id ?? project.id;
    await fill(
      pg,
      'contacts',
      CONTACTS,
      (a, b) => `INSERT INTO contacts (id, project_id, email, subscribed)
                 SELECT md5('c' || g)::uuid, '${pid}', 'c' || g || '@example.org', true FROM generate_series(${a}, ${b}) g`,
    );
    // The secondary indexes of emails are built once after the rows (as a restore would), not row by row: minutes saved.
    const indexes = (
      await pg.query(
        `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'emails' AND indexdef NOT LIKE '%UNIQUE INDEX "PK_%'`,
      )
    ).rows;
    for (const i of indexes) await pg.query(`DROP INDEX "${i.indexname}"`);
    // Without triggers (session_replication_role = replica: no foreign-key check per row either); the
    // counters get what the migration's backfill would give them, as the triggers would have.
    await pg.query(`SET session_replication_role = replica`);
    // Statuses and sources in the proportions of a service that has sent for a while; ids ascending as uuidv7's are.
    await fill(
      pg,
      'emails',
      EMAILS,
      (
        a,
        b,
      ) => `INSERT INTO emails (id, project_id, contact_id, source, to_email, from_email, subject, html, text, status, priority, attempts)
                 SELECT lpad(to_hex(g), 32, '0')::uuid, '${pid}', md5('c' || (g % ${CONTACTS} + 1))::uuid,
                        (ARRAY['TRANSACTIONAL','TRANSACTIONAL','CAMPAIGN','WORKFLOW'])[g % 4 + 1]::email_source,
                        'c' || (g % ${CONTACTS} + 1) || '@example.org', 'hello@bench.example', 'Hello', '<p>Hello</p>', 'Hello',
                        (CASE WHEN g % 100 < 90 THEN 'SENT' WHEN g % 100 < 94 THEN 'BOUNCED' WHEN g % 100 < 96 THEN 'FAILED'
                              WHEN g % 100 < 98 THEN 'SUPPRESSED' WHEN g % 100 < 99 THEN 'QUEUED' ELSE 'CANCELLED' END)::email_status, 1, 1
                   FROM generate_series(${a}, ${b}) g`,
    );
    await pg.query(`SET session_replication_role = DEFAULT`);
    await pg.query(`INSERT INTO status_counters (family, status, source, slot, n)
                    SELECT 'emails', status::text, source::text, 0, count(*) FROM emails GROUP BY 2, 3`);
    let t0 = process.hrtime.bigint();
    for (const i of indexes) await pg.query(i.indexdef);
    process.stderr.write(
      `emails: ${indexes.length} indexes built (${(ms(t0) / 1000).toFixed(0)} s)\n`,
    );
    await fill(
      pg,
      'webhook_deliveries',
      OTHERS,
      (
        a,
        b,
      ) => `INSERT INTO webhook_deliveries (id, project_id, endpoint_id, event_type, payload, status, attempts)
                 SELECT lpad(to_hex(g), 32, '0')::uuid, '${pid}', '${endpoint.id}', 'email.sent', '{}',
                        (CASE WHEN g % 100 < 97 THEN 'SUCCEEDED' WHEN g % 100 < 99 THEN 'FAILED' ELSE 'PENDING' END)::webhook_delivery_status, 1
                   FROM generate_series(${a}, ${b}) g`,
    );
    // Finished executions (an open one per contact at most: the open index is unique per workflow and contact).
    await fill(
      pg,
      'workflow_executions',
      OTHERS,
      (
        a,
        b,
      ) => `INSERT INTO workflow_executions (id, project_id, workflow_id, contact_id, status, version)
                 SELECT lpad(to_hex(g), 32, '0')::uuid, '${pid}', '${workflow.id}', md5('c' || (g % ${CONTACTS} + 1))::uuid,
                        (CASE WHEN g % 100 < 90 THEN 'COMPLETED' WHEN g % 100 < 96 THEN 'EXITED' WHEN g % 100 < 98 THEN 'FAILED' ELSE 'CANCELLED' END)::workflow_execution_status, 4
                   FROM generate_series(${a}, ${b}) g`,
    );
    t0 = process.hrtime.bigint();
    await pg.query('VACUUM ANALYZE');
    process.stderr.write(`VACUUM ANALYZE (${(ms(t0) / 1000).toFixed(0)} s)\n`);

    // The grouped counts the scrape ran before the counters, at once as it ran them (3 times, the middle one shown).
    const old = [];
    for (let i = 0; i < 3; i++) {
      t0 = process.hrtime.bigint();
      const clients = await Promise.all(
        Array.from({ length: 4 }, async () => {
          const c = new Client({ connectionString: db.url });
          await c.connect();
          return c;
        }),
      );
      const t1 = process.hrtime.bigint();
      await Promise.all([
        clients[0].query(
          'SELECT status, source, count(*) AS n FROM emails GROUP BY status, source',
        ),
        clients[1].query('SELECT status, count(*) AS n FROM webhook_deliveries GROUP BY status'),
        clients[2].query('SELECT status, count(*) AS n FROM campaigns GROUP BY status'),
        clients[3].query('SELECT status, count(*) AS n FROM workflow_executions GROUP BY status'),
      ]);
      old.push(ms(t1));
      await Promise.all(clients.map((c) => c.end()));
    }
    old.sort((a, b) => a - b);

    await scrape(app.base); // warm-up: connections, prepared plans
    const fresh = [];
    const cached = [];
    let text = '';
    for (let i = 0; i < SCRAPES; i++) {
      await sleep(1_100);
      const f = await scrape(app.base);
      fresh.push(f.ms);
      text = f.text;
      cached.push((await scrape(app.base)).ms);
    }
    fresh.sort((a, b) => a - b);
    cached.sort((a, b) => a - b);
    const emails = gauge(text, 'emails');
    if (emails !== EMAILS)
      throw new Error(`mailwright_emails sums to ${emails}, expected ${EMAILS}`);
    if (
      gauge(text, 'workflow_executions') !== OTHERS ||
      gauge(text, 'webhook_deliveries') !== OTHERS
    )
      throw new Error('a status gauge is wrong');
    const counterRows = (await pg.query('SELECT count(*)::int AS n FROM status_counters')).rows[0]
      .n;
    // The scrape's database read alone (the statement OperationsRepository.statusCounts runs).
    const reads = [];
    for (let i = 0; i < SCRAPES; i++) {
      const t1 = process.hrtime.bigint();
      await pg.query(
        `SELECT family, status, source, sum(n) AS n FROM status_counters GROUP BY 1, 2, 3 HAVING sum(n) <> 0 ORDER BY 1, 2, 3`,
      );
      reads.push(ms(t1));
    }
    reads.sort((a, b) => a - b);

    const f = (n) => n.toFixed(1);
    console.log(
      `\nGET /metrics, ${EMAILS.toLocaleString('en')} emails, ${OTHERS.toLocaleString('en')} webhook deliveries and workflow executions (${counterRows} counter rows)`,
    );
    console.log(
      `  scrape reading the counts:   p50 ${f(percentile(fresh, 50))} ms, max ${f(fresh[fresh.length - 1])} ms (${SCRAPES} scrapes)`,
    );
    console.log(
      `  baseline (counts kept):      p50 ${f(percentile(cached, 50))} ms, max ${f(cached[cached.length - 1])} ms`,
    );
    console.log(
      `  ratio scrape / baseline:     ${(percentile(fresh, 50) / percentile(cached, 50)).toFixed(2)}`,
    );
    console.log(
      `  its database read alone:     p50 ${f(percentile(reads, 50))} ms (the counters' sum)`,
    );
    console.log(
      `  grouped count(*) as before:  ${f(old[1])} ms (median of 3; the old scrape's database read)`,
    );
    const os = require('node:os');
    console.log(
      `  load average at the end:     ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} (${os.cpus().length} CPUs)`,
    );
    console.log(`  target: scrape p50 < 50 ms: ${percentile(fresh, 50) < 50 ? 'met' : 'NOT met'}`);
  } finally {
    await pg.end();
    await app.stop();
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
