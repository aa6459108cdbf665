'use strict';
/**
 * The migration that partitions `emails` and `events` (PartitionEmailsEvents) on a populated
 * database, with a concurrent writer (issue 28: "without holding an exclusive lock for more than a
 * few seconds"; not in CI). A database of its own is migrated up to the migration before it, loaded
 * with BENCH_ROWS emails (default 1,000,000; a tenth of them campaign mail, one per recipient) and
 * as many events over the past six months (generate_series, triggers off while loading), then the
 * migration runs while BENCH_WRITERS clients (default 4) insert one email or one event per
 * statement. Reports the migration's time and the writers' longest statement before and during it
 * (the longest lock wait a writer saw is at most that), and checks that nothing was lost.
 *
 *   npm run bench:partition-migration      (builds first)
 *   BENCH_ROWS=200000 node bench/partition-migration.js
 */
const { readdirSync } = require('node:fs');
const { randomBytes } = require('node:crypto');
const { join } = require('node:path');
const { Client } = require('pg');
const { DIST, latencySummary, sleep, startWriters } = require('./support');

const ROWS = Number(process.env.BENCH_ROWS || 1_000_000);
const WRITERS = Number(process.env.BENCH_WRITERS || 4);
const CONTACTS = 10_000;
const MIGRATION = 'PartitionEmailsEvents';
const PG_ADMIN_URL = process.env.BENCH_PG_URL || 'postgresql://postgres@127.0.0.1:5432/postgres';

async function migrateBefore(url) {
  const { DataSource } = require('typeorm');
  const { dataSourceOptions } = require(join(DIST, 'database/data-source-options.js'));
  const dir = join(DIST, 'database/migrations');
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.js'))
    .sort();
  const stop = files.findIndex((f) => f.includes(MIGRATION));
  const options = {
    ...dataSourceOptions(url),
    migrations: files.slice(0, stop).map((f) => join(dir, f)),
  };
  const ds = new DataSource(options);
  await ds.initialize();
  await ds.runMigrations({ transaction: 'each' });
  await ds.destroy();
}

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
  await c.query(`CREATE TEMP TABLE ids AS SELECT row_number() OVER () AS n, id FROM contacts`);
  const t0 = Date.now();
  // A tenth is campaign mail: campaign k sends to every contact once.
  await c.query(
    `INSERT INTO emails (id, created_at, project_id, contact_id, campaign_id, source, to_email, from_email, subject, status, priority)
     SELECT mw_uuid_v7(), now() - random() * interval '180 days', $1, ids.id,
            CASE WHEN i % 10 = 0 THEN ('00000000-0000-7000-8000-' || lpad(((i / 10) / $3)::text, 12, '0'))::uuid END,
            CASE WHEN i % 10 = 0 THEN 'CAMPAIGN' ELSE 'TRANSACTIONAL' END::email_source,
            'c@example.com', 'news@example.com', 'subject', 'SENT', 1
       FROM generate_series(0, $2 - 1) i JOIN ids ON ids.n = (CASE WHEN i % 10 = 0 THEN (i / 10) % $3 ELSE i % $3 END) + 1`,
    [projectId, ROWS, CONTACTS],
  );
  await c.query(
    `INSERT INTO events (id, created_at, project_id, contact_id, name, data)
     SELECT mw_uuid_v7(), now() - random() * interval '180 days', $1, ids.id, 'visit', '{}'
       FROM generate_series(0, $2 - 1) i JOIN ids ON ids.n = i % $3 + 1`,
    [projectId, ROWS, CONTACTS],
  );
  await c.query(`VACUUM ANALYZE emails`);
  await c.query(`VACUUM ANALYZE events`);
  const contacts = (await c.query(`SELECT id FROM contacts LIMIT 100`)).rows.map((r) => r.id);
  await c.end();
  console.log(
    `loaded ${ROWS} emails and ${ROWS} events in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
  return { projectId, contacts };
}

/** Writers inserting one row per statement until stop(); each statement's start and duration. */
async function main() {
  const name = `mw_bench_partmig_${process.pid}_${randomBytes(3).toString('hex')}`;
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  const admin = new Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  try {
    await migrateBefore(url.toString());
    const { projectId, contacts } = await load(url.toString());
    // Events and emails in turn, as the service writes both while the migration runs.
    const writers = startWriters(url.toString(), WRITERS, (c, w, i) => {
      const contact = contacts[(w * 31 + i) % contacts.length];
      return i % 2 === 0
        ? c.query(`INSERT INTO events (id, project_id, contact_id, name, data) VALUES (gen_random_uuid(), $1, $2, 'write', '{}')`, [projectId, contact])
        : c.query(
            `INSERT INTO emails (id, project_id, contact_id, source, to_email, from_email, subject, priority)
             VALUES (gen_random_uuid(), $1, $2, 'TRANSACTIONAL', 'c@example.com', 'news@example.com', 'write', 1)`,
            [projectId, contact],
          );
    });
    const baselineFrom = Date.now();
    await sleep(3000);
    const started = Date.now();
    const { runMigrations } = require(join(DIST, 'database/prepare-database.js'));
    const applied = await runMigrations(url.toString());
    const ended = Date.now();
    await sleep(2000);
    await writers.stop();
    const fmt = (s) =>
      `${s.writes} writes, p50 ${s.p50?.toFixed(1)} ms, p99 ${s.p99?.toFixed(1)} ms, longest ${s.max?.toFixed(1)} ms`;
    console.log(`applied: ${applied.join(', ')} in ${((ended - started) / 1000).toFixed(1)} s`);
    console.log(`writers before: ${fmt(latencySummary(writers.samples, baselineFrom, started))}`);
    console.log(`writers during: ${fmt(latencySummary(writers.samples, started, ended))}`);
    console.log(`writers after:  ${fmt(latencySummary(writers.samples, ended, Date.now()))}`);
    const c = new Client({ connectionString: url.toString() });
    await c.connect();
    const written = writers.samples.length;
    const [check] = (
      await c.query(
        `SELECT (SELECT relkind FROM pg_class WHERE relname = 'emails') AS emails_kind,
                (SELECT count(*)::int FROM emails) + (SELECT count(*)::int FROM events) AS rows,
                (SELECT count(*)::int FROM campaign_recipients) AS recipients,
                (SELECT count(*)::int FROM emails WHERE campaign_id IS NOT NULL) AS campaign_emails`,
      )
    ).rows;
    await c.end();
    console.log(
      `after: emails relkind ${check.emails_kind}; rows ${check.rows} (expected ${2 * ROWS + written}); ` +
        `campaign_recipients ${check.recipients} (campaign emails ${check.campaign_emails}); write errors ${writers.errors()}`,
    );
    if (
      check.rows !== 2 * ROWS + written ||
      check.recipients !== check.campaign_emails ||
      writers.errors() > 0
    )
      process.exitCode = 1;
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
