'use strict';
/**
 * Bulk import of 100,000 contacts through the service (CSV body, POST
 * /contacts/import, a child `node dist/main.js` with APP_ROLE=all and its own
 * database), timed from the request to status COMPLETED. Baseline in the same
 * run: the same rows written directly with pg, in the same batch size, with
 * the statement the worker uses (upsert_contacts: jsonb_to_recordset ... ON CONFLICT).
 *
 *   npm run bench:import           (builds first)
 *   BENCH_ROWS=50000 npm run bench:import
 */
const { join } = require('node:path');
const { Client } = require('pg');
const { DIST, createBenchDatabase, createProject, startApp } = require('./support');

// The baseline runs the worker's own statement and input, from the build under test.
const { UPSERT_CONTACTS_COUNTED } = require(join(DIST, 'contacts/contacts.repository.js'));
const { contactUpsertInput } = require(join(DIST, 'contacts/contact-upsert.js'));

const ROWS = Number(process.env.BENCH_ROWS || 100_000);
const BATCH = Number(process.env.IMPORT_BATCH_SIZE || 1000);
const PLANS = ['free', 'pro', 'team'];

function row(i) {
  return { email: `person${i}@import-bench.example`, first_name: `Name${i}`, plan: PLANS[i % 3], city: `City ${i % 97}` };
}

async function serviceImport(base, key) {
  const lines = ['email,first_name,plan,city'];
  for (let i = 0; i < ROWS; i++) {
    const r = row(i);
    lines.push(`${r.email},${r.first_name},${r.plan},${r.city}`);
  }
  const csv = lines.join('\n');
  const started = process.hrtime.bigint();
  const res = await fetch(`${base}/contacts/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'text/csv' },
    body: csv,
  });
  const accepted = await res.json();
  if (res.status !== 202) throw new Error(`import refused: ${res.status} ${JSON.stringify(accepted)}`);
  const acceptedAfter = Number(process.hrtime.bigint() - started) / 1e9;
  let job;
  for (;;) {
    const poll = await fetch(`${base}/contacts/imports/${accepted.data.id}`, { headers: { authorization: `Bearer ${key}` } });
    job = (await poll.json()).data;
    if (job.status === 'COMPLETED' || job.status === 'FAILED') break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { seconds, acceptedAfter, job, bytes: Buffer.byteLength(csv) };
}

async function baselineImport(databaseUrl, projectId) {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  const started = process.hrtime.bigint();
  for (let from = 0; from < ROWS; from += BATCH) {
    const batch = [];
    for (let i = from; i < Math.min(from + BATCH, ROWS); i++) {
      const r = row(i);
      batch.push(
        contactUpsertInput(i - from, {
          projectId,
          email: r.email,
          patch: { set: { first_name: r.first_name, plan: r.plan, city: r.city }, remove: [] },
          subscribed: null,
          subscribedIfNew: true,
        }),
      );
    }
    await client.query('BEGIN');
    await client.query(UPSERT_CONTACTS_COUNTED, [JSON.stringify(batch)]);
    await client.query('COMMIT');
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await client.end();
  return { seconds };
}

async function main() {
  const db = await createBenchDatabase('import');
  const api = createProject(db.url, 'bench-import');
  const base = createProject(db.url, 'bench-import-baseline');
  const app = await startApp({ DATABASE_URL: db.url, APP_ROLE: 'all', IMPORT_BATCH_SIZE: String(BATCH) });
  try {
    const baseline = await baselineImport(db.url, base.project.id);
    const service = await serviceImport(app.base, api.secretKey);
    if (service.job.status !== 'COMPLETED' || service.job.created !== ROWS) {
      throw new Error(`unexpected import result: ${JSON.stringify(service.job).slice(0, 500)}`);
    }
    const serviceRate = ROWS / service.seconds;
    const baselineRate = ROWS / baseline.seconds;
    console.log(`Import of ${ROWS} contacts (CSV ${(service.bytes / 1e6).toFixed(1)} MB, batches of ${BATCH})`);
    console.log(`  baseline (pg, same upsert): ${baselineRate.toFixed(0).padStart(7)} contacts/s  (${baseline.seconds.toFixed(2)} s)`);
    console.log(
      `  service  (POST -> COMPLETED): ${serviceRate.toFixed(0).padStart(5)} contacts/s  (${service.seconds.toFixed(2)} s; 202 after ${service.acceptedAfter.toFixed(2)} s)`,
    );
    console.log(`  ratio service/baseline:     ${((serviceRate / baselineRate) * 100).toFixed(1)}%`);
    console.log(`  target >= 10,000/s met:     ${serviceRate >= 10_000 ? 'yes' : 'NO'}`);
  } finally {
    await app.stop();
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
