'use strict';
/**
 * Delivery throughput with the rate limit lifted: 20,000 emails through the
 * whole pipeline (BullMQ job → claim row → sender check + DKIM key → render
 * already stored → DKIM-sign → pooled SMTP → SENT + email.sent event) to a
 * local SMTP sink, beside a baseline measured in the same run: nodemailer
 * alone, pooled with the same connection count, DKIM-signing and sending the
 * same messages to the same sink. Target: >= 50% of the baseline's msgs/s.
 *
 *   npm run bench:delivery          (builds first; BENCH_EMAILS=20000)
 */
const { generateKeyPairSync } = require('node:crypto');
const { join } = require('node:path');
const nodemailer = require('nodemailer');
const { Client } = require('pg');
const { createBenchDatabase, createProject, startApp, startSink, ROOT, REDIS_URL, deleteRedisKeys, startWorker } = require('./support');

// A private build (BENCH_DIST outside the checkout) resolves its packages from the checkout's node_modules.
process.env.NODE_PATH = [join(ROOT, 'node_modules'), process.env.NODE_PATH].filter(Boolean).join(require('node:path').delimiter);
require('node:module').Module._initPaths();

const EMAILS = Number(process.env.BENCH_EMAILS || 20_000);
const POOL_CONNECTIONS = 10; // src/delivery/mail-transport.ts SMTP_POOL_CONNECTIONS
const BASELINE_IN_FLIGHT = 100;
const NODE_ARGS = (process.env.BENCH_NODE_ARGS || '').split(' ').filter(Boolean);
const PREFIX = `mwbenchdl${process.pid}`;

async function waitForCount(sink, target, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const stats = await sink.stats();
    if (stats.count >= target) return stats;
    if (Date.now() > deadline) throw new Error(`sink received ${stats.count} of ${target}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The same content the service sends: HTML, derived text, DKIM with a 2048-bit key. */
function message(i, privateKey) {
  return {
    messageId: `<baseline-${i}@bench.example>`,
    from: { name: 'Bench', address: 'hello@bench.example' },
    to: `user${i}@example.org`,
    subject: `Your receipt ${i}`,
    html: `<h1>Hello user${i}@example.org</h1><p>Thanks for your order ${i}.</p>`,
    text: `Hello user${i}@example.org\n\nThanks for your order ${i}.`,
    dkim: { domainName: 'bench.example', keySelector: 'mw1', privateKey },
  };
}

async function baseline(sink) {
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const transport = nodemailer.createTransport({
    pool: true,
    host: '127.0.0.1',
    port: sink.port,
    secure: false,
    ignoreTLS: true,
    maxConnections: POOL_CONNECTIONS,
    maxMessages: 1000,
  });
  await sink.reset();
  let next = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: BASELINE_IN_FLIGHT }, async () => {
      while (next < EMAILS) await transport.sendMail(message(next++, privateKey));
    }),
  );
  const seconds = (Date.now() - started) / 1000;
  transport.close();
  return EMAILS / seconds;
}

async function main() {
  const sink = await startSink();
  const db = await createBenchDatabase('delivery');
  const project = createProject(db.url, 'Delivery bench');
  const common = { DATABASE_URL: db.url, QUEUE_PREFIX: PREFIX, SMTP_URL: `smtp://127.0.0.1:${sink.port}`, EMAIL_RATE_PER_SECOND: '1000000', DELIVERY_GROUP_RATES: require('./support').LIFTED_GROUP_RATES };
  let api;
  let worker;
  try {
    console.log(`baseline: nodemailer pooled (${POOL_CONNECTIONS} connections), ${EMAILS} DKIM-signed messages ...`);
    const baselineRate = await baseline(sink);
    console.log(`  ${baselineRate.toFixed(0)} msgs/s`);

    // Queue the emails with an API-only process (no worker yet), through the public endpoint.
    api = await startApp({ ...common, APP_ROLE: 'api', API_RATE_LIMIT_PER_MINUTE: '10000000' });
    const auth = { authorization: `Bearer ${project.secretKey}`, 'content-type': 'application/json' };
    const domain = await (await fetch(`${api.base}/domains`, { method: 'POST', headers: auth, body: JSON.stringify({ domain: 'bench.example' }) })).json();
    const pg = new Client({ connectionString: db.url });
    await pg.connect();
    // The bench has no DNS: the domain is marked verified directly (the key is the generated, sealed one).
    await pg.query(`UPDATE domains SET status = 'VERIFIED', verified_at = now() WHERE id = $1`, [domain.data.id]);
    console.log(`queueing ${EMAILS} emails through POST /v1/send ...`);
    const batches = Math.ceil(EMAILS / 50);
    let b = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (b < batches) {
          const i = b++;
          const to = Array.from({ length: 50 }, (_, k) => `user${i * 50 + k}@example.org`).slice(0, EMAILS - i * 50);
          const res = await fetch(`${api.base}/v1/send`, {
            method: 'POST',
            headers: auth,
            body: JSON.stringify({
              to,
              from: { email: 'hello@bench.example', name: 'Bench' },
              subject: 'Your receipt {{ order }}',
              body: '<h1>Hello {{ email }}</h1><p>Thanks for your order {{ order }}.</p>',
              data: { order: i },
            }),
          });
          if (res.status !== 200) throw new Error(`send answered ${res.status}: ${await res.text()}`);
        }
      }),
    );
    await api.stop();
    api = null;
    // The domain's post-creation DNS check is still queued: drop it (there is no DNS here) and
    // mark the domain checked just now, so the worker's periodic sweep leaves it alone.
    const { Queue } = require('bullmq');
    const domainsQueue = new Queue('domains', { connection: { url: REDIS_URL }, prefix: PREFIX });
    await domainsQueue.obliterate({ force: true });
    await domainsQueue.close();
    await pg.query(`UPDATE domains SET status = 'VERIFIED', verified_at = now(), last_checked_at = now() WHERE id = $1`, [
      domain.data.id,
    ]);

    await sink.reset();
    console.log('service: one worker process (APP_ROLE=worker), rate limit lifted ...');
    const started = Date.now();
    worker = await startWorker({ ...common, APP_ROLE: 'worker' }, NODE_ARGS);
    const stats = await waitForCount(sink, EMAILS, 600_000);
    // From the first message accepted to the last: the worker's boot is not delivery time.
    const serviceRate = EMAILS / ((stats.lastAt - stats.firstAt) / 1000);
    const { rows } = await pg.query(`SELECT status, count(*)::int AS n FROM emails GROUP BY status`);
    await pg.end();
    console.log(`  ${serviceRate.toFixed(0)} msgs/s (boot to last: ${((stats.lastAt - started) / 1000).toFixed(1)} s); rows: ${JSON.stringify(rows)}`);
    const ratio = serviceRate / baselineRate;
    console.log(`\nratio service/baseline: ${(ratio * 100).toFixed(1)}%  (target >= 50%)`);
  } finally {
    if (api) await api.stop();
    if (worker) await worker.stop();
    sink.child.send({ type: 'stop' });
    await db.drop();
    await deleteRedisKeys(`${PREFIX}:*`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
