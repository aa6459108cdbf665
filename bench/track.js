'use strict';
/**
 * POST /v1/track at 64 concurrent connections against the built service (a
 * child `node dist/main.js`, APP_ROLE=api, its own database), beside a
 * baseline measured in the same run: the same SQL work (upsert contact +
 * insert event in one transaction) issued directly with pg at the same
 * concurrency and the same pool size as the app (20). The baseline writes one
 * track per statement, as the issue defines it; the service shares statements
 * between concurrent tracks (group commit, src/tracking/track-writer.ts).
 *
 *   npm run bench:track            (builds first)
 *   BENCH_SECONDS=15 npm run bench:track
 */
const http = require('node:http');
const { join } = require('node:path');
const { Pool } = require('pg');
const { v7: uuidv7 } = require('uuid');
const { DIST, closedLoop, createBenchDatabase, createProject, startApp } = require('./support');

// The baseline applies the service's own data rule, from the build under test.
const { toTrackedDataPatch } = require(join(DIST, 'contacts/contact-data.js'));

/**
 * The baseline's statement: one track's contact upsert and event insert as
 * one plain statement with parameters, the fastest way to do that work one
 * track per transaction. (The service runs the same rule through the SQL
 * functions upsert_contacts / record_tracks, migration ContactUpsertRule;
 * this statement is the reference it is measured against, kept as it was
 * so figures stay comparable across versions.) $1 contact id, $2 project id,
 * $3 email, $4 data to merge, $5 keys to remove, $6 event id, $7 event name,
 * $8 event data.
 */
const UPSERT_CONTACT_AND_INSERT_EVENT = `WITH c AS (
    INSERT INTO contacts AS c (id, project_id, email, subscribed, suppressed, data, created_at, updated_at)
    VALUES ($1, $2, $3, true, false, $4::jsonb, now(), now())
    ON CONFLICT (project_id, email) DO UPDATE
      SET data = (c.data || $4::jsonb) - $5::text[], updated_at = now()
    RETURNING c.id, c.email
  ), e AS (
    INSERT INTO events (id, project_id, contact_id, email_id, name, data, created_at)
    SELECT $6, $2, c.id, NULL, $7, $8::jsonb, now() FROM c
    RETURNING id, created_at
  )
  SELECT c.id AS "contactId", c.email, e.id AS "eventId", e.created_at AS "createdAt" FROM c, e`;

const CONCURRENCY = 64;
const SECONDS = Number(process.env.BENCH_SECONDS || 10);
const WARMUP_SECONDS = 2;
const EMAILS = 20_000;
const NAMES = ['signup', 'login', 'purchase', 'page_view', 'trial_started'];
const POOL_SIZE = 20; // the app's TypeORM pool (src/database/data-source-options.ts)

function workload(i) {
  const n = Math.floor(Math.random() * EMAILS);
  return {
    email: `user${n}@bench.example`,
    event: NAMES[i % NAMES.length],
    data: { plan: n % 3 ? 'free' : 'pro', step: i % 7, amount: { value: i % 100, persistent: false } },
  };
}

function apiCaller(base, key) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const url = new URL('/v1/track', base);
  return (i) =>
    new Promise((resolve, reject) => {
      const body = JSON.stringify(workload(i));
      const req = http.request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
}

/**
 * The same SQL work the service does for a track without `subscribed`: the
 * contact upsert and the event insert as one atomic statement, one round
 * trip, through a pg pool.
 */
function baselineCaller(pool, projectId) {
  return async (i) => {
    const w = workload(i);
    const patch = toTrackedDataPatch(w.data);
    await pool.query(UPSERT_CONTACT_AND_INSERT_EVENT, [
      uuidv7(),
      projectId,
      w.email,
      JSON.stringify(patch.set),
      patch.remove,
      uuidv7(),
      w.event,
      JSON.stringify(w.data),
    ]);
  };
}

function fmt(r) {
  return `${r.perSecond.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(1).padStart(5)} ms  p99 ${r.p99
    .toFixed(1)
    .padStart(5)} ms  (${r.requests} ok, ${r.errors} errors)`;
}

async function main() {
  const db = await createBenchDatabase('track');
  const api = createProject(db.url, 'bench-api');
  const base = createProject(db.url, 'bench-baseline');
  const app = await startApp({
    DATABASE_URL: db.url,
    APP_ROLE: 'api',
    API_RATE_LIMIT_PER_MINUTE: '10000000',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL || 'info',
  });
  const pool = new Pool({ connectionString: db.url, max: POOL_SIZE });
  try {
    const callApi = apiCaller(app.base, api.secretKey);
    const callBaseline = baselineCaller(pool, base.project.id);
    await closedLoop(CONCURRENCY, WARMUP_SECONDS, callBaseline);
    await closedLoop(CONCURRENCY, WARMUP_SECONDS, callApi);
    const baseline = await closedLoop(CONCURRENCY, SECONDS, callBaseline);
    const service = await closedLoop(CONCURRENCY, SECONDS, callApi);
    const ratio = service.perSecond / baseline.perSecond;
    console.log(`POST /v1/track, ${CONCURRENCY} concurrent, ${SECONDS}s each, ${EMAILS} distinct emails`);
    console.log(`  baseline (pg, same SQL): ${fmt(baseline)}`);
    console.log(`  service  (HTTP API):     ${fmt(service)}`);
    console.log(`  ratio service/baseline:  ${(ratio * 100).toFixed(1)}%  (target >= 50%)`);
    console.log(`  service p99:             ${service.p99.toFixed(1)} ms (target < 50 ms)`);
    console.log(`  targets met:             ${ratio >= 0.5 && service.p99 < 50 ? 'yes' : 'NO'}`);
  } finally {
    await pool.end();
    await app.stop();
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
