'use strict';
/**
 * DomainsService.assertCanSend, the per-message sender check of the delivery
 * worker (uncached by design: one indexed query plus opening the sealed DKIM
 * key), against a baseline measured in the same run: the bare indexed lookup
 * of the same row through the same TypeORM pool, without decryption.
 * In-process (the built dist/), its own database, 16 concurrent callers.
 *
 *   npm run bench:domains
 */
const { join } = require('node:path');
const { createBenchDatabase, ROOT, REDIS_URL, percentile } = require('./support');

const N = Number(process.env.BENCH_N || 20_000);
const CONCURRENCY = 16;

async function run(label, fn) {
  const latencies = [];
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < N) {
        next++;
        const t = process.hrtime.bigint();
        await fn();
        latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  const result = {
    label,
    perSecond: N / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
  console.log(
    `${label.padEnd(34)} ${result.perSecond.toFixed(0).padStart(7)} ops/s  p50 ${result.p50.toFixed(3)} ms  p99 ${result.p99.toFixed(3)} ms`,
  );
  return result;
}

async function main() {
  const db = await createBenchDatabase('domains');
  const { loadConfig } = require(join(ROOT, 'dist/config/config.js'));
  const { createApp } = require(join(ROOT, 'dist/create-app.js'));
  const { ProjectsService } = require(join(ROOT, 'dist/projects/projects.service.js'));
  const { DomainsService } = require(join(ROOT, 'dist/domains/domains.service.js'));
  const { DataSource } = require('typeorm');
  const app = await createApp(
    loadConfig({
      DATABASE_URL: db.url,
      REDIS_URL,
      QUEUE_PREFIX: `mwbenchdom${process.pid}`,
      APP_ROLE: 'api',
      LOG_LEVEL: 'silent',
      APP_SECRET: 'bench-secret-bench-secret-bench-secret-0123456789',
      DNS_SERVERS: '127.0.0.1:9',
    }),
  );
  try {
    const { project } = await app.get(ProjectsService).createProject('Bench');
    const domains = app.get(DomainsService);
    const dataSource = app.get(DataSource);
    // A few hundred domains so the lookup is an index probe, not a scan of a one-row table.
    for (let i = 0; i < 300; i++) await domains.create(project.id, `d${i}.bench.example`);
    await dataSource.query(`UPDATE domains SET status = 'VERIFIED'`);
    await dataSource.query('ANALYZE domains');
    // The same statement assertCanSend runs (it reads the status to say why a domain may not send).
    const sql =
      `SELECT id, domain, status, dkim_selector, dkim_private_key_sealed FROM domains ` +
      `WHERE project_id = $1 AND domain = $2`;
    let i = 0;
    const baseline = () => dataSource.query(sql, [project.id, `d${i++ % 300}.bench.example`]);
    const check = () =>
      domains.assertCanSend(project.id, `Bench <news@d${i++ % 300}.bench.example>`);
    await run('warm-up', check);
    const base = await run('baseline: indexed row lookup', baseline);
    const mine = await run('assertCanSend (lookup + unseal)', check);
    console.log(
      `ratio assertCanSend / baseline throughput: ${(mine.perSecond / base.perSecond).toFixed(2)}`,
    );
  } finally {
    await app.close();
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
