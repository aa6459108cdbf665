'use strict';
/**
 * Dropping a month of events under retention (issue 28: "a month of 10M events: under 1 s, no lock
 * wait seen by a concurrent bench:track"; not in CI). A migrated database of its own gets BENCH_EVENTS
 * events (default 1,000,000; 10,000,000 for the issue's figure) in the month before last
 * (generate_series, triggers off while loading, then VACUUM ANALYZE as an old month would be),
 * and the month's event_name_stats rows. The built app (APP_ROLE=api) serves POST /v1/track to
 * BENCH_WRITERS clients (default 4, closed loop, as bench:track sends them: a contact upsert and an
 * event of this month each) for BENCH_BASELINE_SECONDS (default 5) without a drop, then while the
 * maintenance's drop runs on that month as PartitionMaintenance does: DETACH PARTITION CONCURRENTLY,
 * the detached month's foreign keys dropped one short transaction each, then its event_name_stats
 * rows deleted and DROP TABLE in one transaction. Reports each step's time, the track requests'
 * latency without and during the drop, every moment a backend other than the drop's waited on a
 * lock (pg_stat_activity polled every 10 ms), and the tables other than the month itself that the
 * DROP's transaction held locks on (pg_locks, before its commit). Before the drop it also times a
 * lookup of an event by id alone (one primary-key probe per month kept).
 *
 *   npm run bench:partitions          (builds first)
 *   BENCH_EVENTS=10000000 node bench/partition-drop.js
 */
const { join } = require('node:path');
const { Client } = require('pg');
const {
  DIST,
  createBenchDatabase,
  createProject,
  deleteRedisKeys,
  latencySummary,
  okPoster,
  sleep,
  startApp,
  timedLoops,
} = require('./support');

const EVENTS = Number(process.env.BENCH_EVENTS || 1_000_000);
const WRITERS = Number(process.env.BENCH_WRITERS || 4);
const BASELINE_SECONDS = Number(process.env.BENCH_BASELINE_SECONDS || 5);
const CONTACTS = 10_000;
/** Distinct contacts the track requests upsert. */
const TRACKED_EMAILS = 20_000;

async function load(url) {
  const c = new Client({ connectionString: url });
  await c.connect();
  await c.query(`SET session_replication_role = replica`);
  const [{ id: projectId }] = (
    await c.query(`INSERT INTO projects (id, name) VALUES (mw_uuid_v7(), 'bench') RETURNING id`)
  ).rows;
  await c.query(
    `INSERT INTO contacts (id, project_id, email, subscribed)
     SELECT mw_uuid_v7(), $1, 'c' || i || '@example.com', true FROM generate_series(1, $2) i`,
    [projectId, CONTACTS],
  );
  const [{ start, name }] = (
    await c.query(
      `SELECT lower AS start, name FROM mw_partitions('events')
        WHERE lower = (date_trunc('month', now() AT TIME ZONE 'UTC') - interval '2 months') AT TIME ZONE 'UTC'`,
    )
  ).rows;
  const t0 = Date.now();
  await c.query(
    `WITH ids AS (SELECT row_number() OVER () AS n, id FROM contacts)
     INSERT INTO events (id, created_at, project_id, contact_id, name, data)
     SELECT mw_uuid_v7(), $3::timestamptz + (i % 2400000) * interval '1 second', $1, ids.id, 'visit-' || (i % 20), '{}'
       FROM generate_series(0, $2 - 1) i JOIN ids ON ids.n = i % ${CONTACTS} + 1`,
    [projectId, EVENTS, start],
  );
  // A build from before event_name_stats had months (BENCH_DIST, to compare) gets its one bucket.
  const [{ months }] = (
    await c.query(
      `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'event_name_stats'::regclass AND attname = 'month') AS months`,
    )
  ).rows;
  await c.query(
    months
      ? `INSERT INTO event_name_stats (project_id, name, month, shard, count, last_seen_at)
         SELECT project_id, name, $1::date, 0, count(*), max(created_at) FROM ${name} GROUP BY 1, 2`
      : `INSERT INTO event_name_stats (project_id, name, shard, count, last_seen_at)
         SELECT project_id, name, 0, count(*), max(created_at) FROM ${name} GROUP BY 1, 2`,
    months ? [start.toISOString().slice(0, 10)] : [],
  );
  await c.query(`VACUUM ANALYZE ${name}`);
  const [{ size }] = (
    await c.query(`SELECT pg_size_pretty(pg_total_relation_size($1)) AS size`, [name])
  ).rows;
  await c.end();
  console.log(
    `loaded ${EVENTS} events into ${name} (${size}) in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
  return { partition: name };
}

/**
 * 1,000 lookups of an event by id alone through the parent (one primary-key probe per month
 * kept), beside the same lookups on the one partition that holds them, in the same run: planned
 * each time (as TypeORM's queries are) and as a named prepared statement (as preparedRows runs).
 */
async function lookups(url, partition) {
  const c = new Client({ connectionString: url });
  await c.connect();
  const ids = (
    await c.query(`SELECT id FROM ${partition} TABLESAMPLE SYSTEM (1) LIMIT 1000`)
  ).rows.map((r) => r.id);
  const [{ n }] = (await c.query(`SELECT count(*)::int AS n FROM mw_partitions('events')`)).rows;
  const time = async (table, prepared) => {
    const text = `SELECT id, name FROM ${table} WHERE id = $1`;
    const t0 = process.hrtime.bigint();
    for (const id of ids)
      await c.query(
        prepared ? { name: `by-id-${table}`, text, values: [id] } : { text, values: [id] },
      );
    return (Number(process.hrtime.bigint() - t0) / 1e6 / ids.length).toFixed(2);
  };
  for (const prepared of [false, true])
    console.log(
      `lookup by id alone${prepared ? ', prepared' : ''}: through the parent (${n} partitions) ` +
        `${await time('events', prepared)} ms, on the partition itself ${await time(partition, prepared)} ms ` +
        `(per query, round trip included)`,
    );
  await c.end();
}

/**
 * `count` clients POSTing /v1/track in a closed loop (keep-alive, one request each at a time)
 * until stopped, in timedLoops (every request's start time and latency kept).
 */
function startTrackers(base, key, count) {
  const track = okPoster(base, '/v1/track', key, count);
  const post = (i) =>
    track({
      email: `user${Math.floor(Math.random() * TRACKED_EMAILS)}@bench.example`,
      event: `step-${i % 10}`,
      data: { step: i % 7 },
    });
  let seq = 0;
  const loops = timedLoops(count, 'track', () => post(seq++));
  return {
    ...loops,
    stop: async () => {
      await loops.stop();
      track.destroy();
    },
  };
}

/**
 * Polls pg_stat_activity every 10 ms for backends of the database (other than `exclude`, the
 * drop's own) waiting on a lock; each sighting is kept with its time, wait event and query.
 */
function startLockWatch(url, exclude) {
  const sightings = [];
  let running = true;
  const c = new Client({ connectionString: url });
  const done = (async () => {
    await c.connect();
    while (running) {
      const { rows } = await c.query(
        `SELECT a.pid, a.wait_event, left(a.query, 60) AS query,
                (SELECT string_agg(CASE WHEN b.pid = ANY($1::int[]) THEN 'the drop: ' ELSE '' END || left(b.query, 60), '; ')
                   FROM pg_stat_activity b WHERE b.pid = ANY(pg_blocking_pids(a.pid))) AS blocker
           FROM pg_stat_activity a
          WHERE a.datname = current_database() AND a.wait_event_type = 'Lock' AND a.pid <> pg_backend_pid()
            AND NOT (a.pid = ANY($1::int[]))`,
        [exclude],
      );
      const at = Date.now();
      for (const row of rows) sightings.push({ at, ...row });
      await sleep(10);
    }
    await c.end();
  })();
  return {
    sightings,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

async function main() {
  const db = await createBenchDatabase('partdrop');
  const prefix = `mwbenchdrop${process.pid}`;
  let app;
  try {
    const { partition } = await load(db.url);
    const { DataSource } = require('typeorm');
    const { dataSourceOptions } = require(join(DIST, 'database/data-source-options.js'));
    const { PartitionsRepository } = require(join(DIST, 'partitions/partitions.repository.js'));
    const ds = new DataSource(dataSourceOptions(db.url, 2));
    await ds.initialize();
    const repository = new PartitionsRepository();
    await lookups(db.url, partition);
    const tracked = createProject(db.url, 'bench-track');
    app = await startApp({
      DATABASE_URL: db.url,
      APP_ROLE: 'api',
      QUEUE_PREFIX: prefix,
      API_RATE_LIMIT_PER_MINUTE: '10000000',
    });
    // The month's own relations (table, indexes, TOAST): the only ones its DROP should lock.
    const own = new Set(
      (
        await ds.query(
          `SELECT c.oid::int AS oid FROM pg_class c WHERE c.oid = $1::regclass
            UNION SELECT i.indexrelid::int FROM pg_index i WHERE i.indrelid = $1::regclass
            UNION SELECT c.reltoastrelid::int FROM pg_class c WHERE c.oid = $1::regclass AND c.reltoastrelid <> 0
            UNION SELECT i.indexrelid::int FROM pg_class c JOIN pg_index i ON i.indrelid = c.reltoastrelid
             WHERE c.oid = $1::regclass`,
          [partition],
        )
      ).map((r) => r.oid),
    );
    const runner = ds.createQueryRunner();
    await runner.connect();
    const [{ pid: dropPid }] = await runner.query(`SELECT pg_backend_pid() AS pid`);
    const trackers = startTrackers(app.base, tracked.secretKey, WRITERS);
    const watch = startLockWatch(db.url, [dropPid]);
    await sleep(1000); // warm-up: connections open, plans cached
    const baselineFrom = Date.now();
    await sleep(BASELINE_SECONDS * 1000);
    // As PartitionMaintenance does: DETACH CONCURRENTLY outside a transaction (the only step that
    // touches the parent), the detached month's foreign keys, then the bookkeeping and DROP TABLE.
    const started = Date.now();
    await repository.lockMaintenanceSession(runner);
    await repository.detach(runner, 'events', partition);
    const detached = Date.now();
    if (repository.dropForeignKeys) await repository.dropForeignKeys(runner, partition);
    const keysDropped = Date.now();
    let dropStarted = 0;
    let foreignLocks = [];
    await runner.manager.transaction(async (manager) => {
      await repository.lockMaintenance(manager);
      const query = manager.query.bind(manager);
      manager.query = async (text, params) => {
        if (/^DROP TABLE/.test(text)) dropStarted = Date.now();
        const result = await query(text, params);
        if (/^DROP TABLE/.test(text))
          foreignLocks = (
            await query(
              `SELECT relation::int AS oid, relation::regclass::text AS name, mode FROM pg_locks
                WHERE pid = pg_backend_pid() AND locktype = 'relation' AND relation <> 'pg_locks'::regclass`,
            )
          ).filter((l) => !own.has(l.oid));
        return result;
      };
      await repository.dropDetached(manager, 'events', partition);
    });
    await repository.unlockMaintenanceSession(runner);
    const ended = Date.now();
    await sleep(2000);
    await trackers.stop();
    await watch.stop();
    await runner.release();
    await ds.destroy();
    const fmt = (s) =>
      `${s.writes} requests, p50 ${s.p50?.toFixed(1)} ms, p99 ${s.p99?.toFixed(1)} ms, longest ${s.max?.toFixed(1)} ms`;
    console.log(
      `drop of ${partition}: ${ended - started} ms in all: DETACH CONCURRENTLY ${detached - started} ms, ` +
        `foreign keys ${keysDropped - detached} ms, event_name_stats rows ${dropStarted - keysDropped} ms, ` +
        `DROP TABLE and commit ${ended - dropStarted} ms`,
    );
    // Modes that conflict with a writer's RowExclusiveLock (the DELETE of the month's event_name_stats
    // rows takes RowExclusiveLock itself, which blocks no reader or writer).
    const blocking = foreignLocks.filter((l) => /^(Share|ShareRowExclusive|Exclusive|AccessExclusive)Lock$/.test(l.mode));
    const list = (locks) => (locks.length === 0 ? 'none' : locks.map((l) => `${l.name} ${l.mode}`).join(', '));
    console.log(`tables other than the month locked by the DROP's transaction: ${list(foreignLocks)}`);
    console.log(`  of which in a mode that blocks writers: ${list(blocking)}`);
    console.log(`POST /v1/track (${WRITERS} clients) without a drop: ${fmt(latencySummary(trackers.samples, baselineFrom, started))}`);
    console.log(`POST /v1/track during the drop:      ${fmt(latencySummary(trackers.samples, started, ended))}`);
    console.log(`POST /v1/track after the drop:       ${fmt(latencySummary(trackers.samples, ended, Date.now()))}`);
    const waits = (from, to) => watch.sightings.filter((w) => w.at >= from && w.at < to);
    const describe = (list) =>
      list.length === 0
        ? 'none'
        : `${list.length}: ` +
          [...new Set(list.map((w) => `${w.wait_event} (${w.query}) behind [${w.blocker}] at +${w.at - started} ms`))].join('; ');
    console.log(`lock waits seen (other backends, 10 ms polls) without a drop: ${describe(waits(baselineFrom, started))}`);
    console.log(`lock waits seen during the drop: ${describe(waits(started, ended))}`);
    console.log(
      `(steps from the drop's start: detach until +${detached - started} ms, foreign keys until +${keysDropped - started} ms, ` +
        `DROP TABLE from +${dropStarted - started} ms)`,
    );
    console.log(`track errors: ${trackers.errors()}`);
    if (trackers.errors() > 0) process.exitCode = 1;
  } finally {
    await app?.stop();
    await deleteRedisKeys(`${prefix}*`);
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
