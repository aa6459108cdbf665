'use strict';
/**
 * Pacing per mailbox provider under a deferring provider: 20,000 emails to
 * four providers (gmail.com, outlook.com, yahoo.com and a plain domain, a
 * quarter each, interleaved) through a local SMTP sink, delivered by one
 * worker process, twice in the same run:
 *
 *   1. baseline: the sink accepts everything;
 *   2. deferring: the sink answers `421 4.7.28` to yahoo.com past
 *      BENCH_YAHOO_LIMIT messages a second (Gmail's "rate limited" reply).
 *
 * By default every group is configured far above what the worker can do
 * (BENCH_GROUP_RATE=1000 a second each), so the worker, not the pacing,
 * limits the other three groups: in run 2 they get the worker time yahoo no
 * longer uses, and the ratio exceeds 100% unless waiting yahoo mail costs
 * them. With a group rate below the worker's capacity (BENCH_GROUP_RATE=10,
 * fewer BENCH_EMAILS) the pacing limits them instead and the ratio shows
 * whether yahoo's backlog slows them at all. The figure is the other three
 * groups' throughput (first to last message accepted at the sink) in run 2
 * against run 1. Target: >= 90%: the slowed group's messages wait in the
 * queue (delayed to their slot) without holding a worker or an SMTP
 * connection. Run 2 ends when the other groups are delivered; yahoo's rate
 * and progress then are printed, its backlog is dropped.
 *
 *   npm run bench:pacing          (builds first; BENCH_EMAILS=20000, BENCH_YAHOO_LIMIT=5, BENCH_GROUP_RATE=1000)
 */
const { join } = require('node:path');
const { Client } = require('pg');
const { createBenchDatabase, createProject, startApp, startSink, DIST, ROOT, REDIS_URL, deleteRedisKeys, startWorker } = require('./support');

process.env.NODE_PATH = [join(ROOT, 'node_modules'), process.env.NODE_PATH].filter(Boolean).join(require('node:path').delimiter);
require('node:module').Module._initPaths();

const EMAILS = Number(process.env.BENCH_EMAILS || 20_000);
const YAHOO_LIMIT = Number(process.env.BENCH_YAHOO_LIMIT || 5);
const DOMAINS = ['gmail.com', 'outlook.com', 'yahoo.com', 'example.org'];
const OTHERS = DOMAINS.filter((d) => d !== 'yahoo.com');
const GROUP_RATE = Number(process.env.BENCH_GROUP_RATE || 1000);
const GROUP_RATES = ['google', 'microsoft', 'yahoo', 'apple', 'other'].map((g) => `${g}=${GROUP_RATE}`).join(',');
const NODE_ARGS = (process.env.BENCH_NODE_ARGS || '').split(' ').filter(Boolean);
const PREFIX = `mwbenchpace${process.pid}`;

/** The other groups' messages per second at the sink, first accepted to last. */
function othersRate(stats) {
  const parts = OTHERS.map((d) => stats.domains[d] ?? { count: 0, firstAt: 0, lastAt: 0 });
  const count = parts.reduce((n, p) => n + p.count, 0);
  const first = Math.min(...parts.map((p) => p.firstAt));
  const last = Math.max(...parts.map((p) => p.lastAt));
  return { count, rate: count / ((last - first) / 1000) };
}

async function waitFor(sink, done, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const stats = await sink.stats();
    if (done(stats)) return stats;
    if (Date.now() > deadline) throw new Error(`sink: ${JSON.stringify(stats)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Queues EMAILS emails, a quarter to each domain, through POST /v1/send (50 recipients a call). */
async function queue(api, auth, run) {
  const batches = Math.ceil(EMAILS / 50);
  let b = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (b < batches) {
        const i = b++;
        const to = Array.from({ length: 50 }, (_, k) => i * 50 + k)
          .filter((n) => n < EMAILS)
          .map((n) => `r${run}-u${n}@${DOMAINS[n % DOMAINS.length]}`);
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
}

async function groupRates(apiBase) {
  const text = await (await fetch(`${apiBase}/metrics`)).text();
  const rates = {};
  for (const match of text.matchAll(/^mailwright_delivery_group_rate\{group="(\w+)"\} (\S+)$/gm)) rates[match[1]] = Number(match[2]);
  return rates;
}

async function main() {
  const sink = await startSink();
  const db = await createBenchDatabase('pacing');
  const project = createProject(db.url, 'Pacing bench');
  const common = {
    DATABASE_URL: db.url,
    QUEUE_PREFIX: PREFIX,
    SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
    EMAIL_RATE_PER_SECOND: '1000000',
    DELIVERY_GROUP_RATES: GROUP_RATES,
    // Every recipient domain here is known by name: no MX lookup, no DNS needed.
    REQUIRE_VERIFIED_SENDER: 'true',
  };
  let api;
  let worker;
  const pg = new Client({ connectionString: db.url });
  try {
    console.log(`Pacing bench: ${EMAILS} emails per run to ${DOMAINS.join(', ')}; group rates ${GROUP_RATES}; one worker; build ${DIST}`);
    api = await startApp({ ...common, APP_ROLE: 'api', API_RATE_LIMIT_PER_MINUTE: '10000000' });
    const auth = { authorization: `Bearer ${project.secretKey}`, 'content-type': 'application/json' };
    const domain = await (await fetch(`${api.base}/domains`, { method: 'POST', headers: auth, body: JSON.stringify({ domain: 'bench.example' }) })).json();
    await pg.connect();
    // No DNS here: the domain is marked verified and just checked, so no sweep looks at it.
    const verify = () =>
      pg.query(`UPDATE domains SET status = 'VERIFIED', verified_at = now(), last_checked_at = now() WHERE id = $1`, [domain.data.id]);
    await verify();
    const { Queue } = require('bullmq');
    const domainsQueue = new Queue('domains', { connection: { url: REDIS_URL }, prefix: PREFIX });
    await domainsQueue.obliterate({ force: true });
    await domainsQueue.close();
    await verify();

    const results = [];
    for (const run of [1, 2]) {
      const deferring = run === 2;
      await sink.reset();
      if (deferring) await sink.throttle('yahoo.com', YAHOO_LIMIT);
      console.log(`\nrun ${run} (${deferring ? `yahoo.com deferred past ${YAHOO_LIMIT}/s` : 'no deferrals'}): queueing ...`);
      await queue(api, auth, run);
      const started = Date.now();
      worker = await startWorker({ ...common, APP_ROLE: 'worker', LOG_LEVEL: 'error' }, NODE_ARGS);
      const othersTotal = Array.from({ length: EMAILS }, (_, n) => DOMAINS[n % DOMAINS.length]).filter((d) => d !== 'yahoo.com').length;
      const stats = await waitFor(sink, (s) => OTHERS.reduce((n, d) => n + (s.domains[d]?.count ?? 0), 0) >= othersTotal, 900_000);
      const others = othersRate(stats);
      const rates = await groupRates(api.base);
      // Run 1 delivers everything before run 2 starts; run 2's yahoo backlog is left (and dropped).
      if (!deferring) await waitFor(sink, (s) => s.count >= EMAILS, 600_000);
      await worker.stop();
      worker = null;
      const yahoo = stats.domains['yahoo.com']?.count ?? 0;
      console.log(
        `  others: ${others.count} in ${((Date.now() - started) / 1000).toFixed(0)} s, ${others.rate.toFixed(0)} msgs/s; yahoo.com accepted ${yahoo}, deferrals ${stats.deferred}; group rates now ${JSON.stringify(rates)}`,
      );
      results.push(others.rate);
    }
    const ratio = results[1] / results[0];
    console.log(`\nratio others' throughput, deferring / baseline: ${(ratio * 100).toFixed(1)}%  (target >= 90%)`);
  } finally {
    if (worker) await worker.stop();
    if (api) await api.stop();
    await pg.end().catch(() => undefined);
    sink.child.send({ type: 'stop' });
    await db.drop();
    await deleteRedisKeys(`${PREFIX}:*`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
