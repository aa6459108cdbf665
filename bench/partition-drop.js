'use strict';
/**
 * Dropping a month of events under retention (issue 28: "a month of 10M events: under 1 s, no lock
 * wait seen by a concurrent writer"; not in CI). A migrated database of its own gets BENCH_EVENTS
 * events (default 1,000,000; 10,000,000 for the issue's figure) in the month before last
 * (generate_series, triggers off while loading, then VACUUM ANALYZE as an old month would be),
 * and the month's event_name_stats. While BENCH_WRITERS clients (default 4) record events of this
 * month, as POST /v1/track does (one INSERT per statement, the foreign key to contacts checked),
 * the maintenance's drop runs on that month as PartitionMaintenance does: DETACH PARTITION
 * CONCURRENTLY (the only step that locks the parent, in SHARE UPDATE EXCLUSIVE), then on the detached
 * table the month's counts leave event_name_stats and DROP TABLE, in one transaction. Reports each
 * step's time and the writers' statements before, during and after. Before the drop it
 * also times a lookup of an event by id alone (one primary-key probe per month kept).
 *
 *   npm run bench:partitions          (builds first)
 *   BENCH_EVENTS=10000000 node bench/partition-drop.js
 */
const { join } = require('node:path');
const { Client } = require('pg');
const { DIST, createBenchDatabase, latencySummary, sleep, startWriters } = require('./support');

const EVENTS = Number(process.env.BENCH_EVENTS || 1_000_000);
const WRITERS = Number(process.env.BENCH_WRITERS || 4);
const CONTACTS = 10_000;

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
  await c.query(
    `INSERT INTO event_name_stats (project_id, name, shard, count, last_seen_at)
     SELECT project_id, name, 0, count(*), max(created_at) FROM ${name} GROUP BY 1, 2`,
  );
  await c.query(`VACUUM ANALYZE ${name}`);
  const contacts = (await c.query(`SELECT id FROM contacts LIMIT 100`)).rows.map((r) => r.id);
  const [{ size }] = (
    await c.query(`SELECT pg_size_pretty(pg_total_relation_size($1)) AS size`, [name])
  ).rows;
  await c.end();
  console.log(
    `loaded ${EVENTS} events into ${name} (${size}) in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
  return { projectId, contacts, partition: name };
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

async function main() {
  const db = await createBenchDatabase('partdrop');
  try {
    const { projectId, contacts, partition } = await load(db.url);
    const { DataSource } = require('typeorm');
    const { dataSourceOptions } = require(join(DIST, 'database/data-source-options.js'));
    const { PartitionsRepository } = require(join(DIST, 'partitions/partitions.repository.js'));
    const ds = new DataSource(dataSourceOptions(db.url, 2));
    await ds.initialize();
    const repository = new PartitionsRepository();
    await lookups(db.url, partition);
    const writers = startWriters(db.url, WRITERS, (c, w, i) =>
      c.query(`INSERT INTO events (id, project_id, contact_id, name, data) VALUES (gen_random_uuid(), $1, $2, 'track', '{}')`, [
        projectId,
        contacts[(w * 31 + i) % contacts.length],
      ]),
    );
    const baselineFrom = Date.now();
    await sleep(3000);
    // As PartitionMaintenance does: DETACH CONCURRENTLY outside a transaction (the only step that
    // touches the parent), then the bookkeeping and DROP TABLE on the detached month.
    const started = Date.now();
    const runner = ds.createQueryRunner();
    await runner.connect();
    await repository.lockMaintenanceSession(runner);
    await repository.detach(runner, 'events', partition);
    const detached = Date.now();
    let dropStarted = 0;
    await runner.manager.transaction(async (manager) => {
      await repository.lockMaintenance(manager);
      const query = manager.query.bind(manager);
      manager.query = (text, params) => {
        if (/^DROP TABLE/.test(text)) dropStarted = Date.now();
        return query(text, params);
      };
      await repository.dropDetached(manager, 'events', partition);
    });
    await repository.unlockMaintenanceSession(runner);
    await runner.release();
    const ended = Date.now();
    await sleep(2000);
    await writers.stop();
    await ds.destroy();
    const fmt = (s) =>
      `${s.writes} writes, p50 ${s.p50?.toFixed(1)} ms, p99 ${s.p99?.toFixed(1)} ms, longest ${s.max?.toFixed(1)} ms`;
    console.log(
      `drop of ${partition}: ${ended - started} ms in all: DETACH CONCURRENTLY ${detached - started} ms, ` +
        `event_name_stats ${dropStarted - detached} ms, DROP TABLE and commit ${ended - dropStarted} ms`,
    );
    console.log(`writers before: ${fmt(latencySummary(writers.samples, baselineFrom, started))}`);
    console.log(`writers during: ${fmt(latencySummary(writers.samples, started, ended))}`);
    console.log(`writers after:  ${fmt(latencySummary(writers.samples, ended, Date.now()))}`);
    console.log(`write errors: ${writers.errors()}`);
    if (writers.errors() > 0) process.exitCode = 1;
  } finally {
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
