'use strict';
/**
 * DSN messages per second through the inbound listener to applied effects,
 * beside a baseline measured in the same run. The service is the built app
 * (a child `node dist/main.js`, APP_ROLE=all, its own database, mail to the
 * outbox) with INBOUND_SMTP_PORT: each DSN goes to the return path of one
 * delivered email, is stored before its 250, parsed by the inbound worker and
 * applied by the bounce policy (email BOUNCED, contact suppressed, event).
 * The clock stops when the last inbound row is PROCESSED. The baseline is a
 * bare smtp-server + mailparser loop (bench/bounces-baseline.js, a child
 * process) parsing the same messages before its 250. Both are fed by the
 * same closed loop of pooled nodemailer connections. Targets: the service at
 * least 50% of the baseline's rate, and the listener's p99 SMTP transaction
 * (MAIL to the final 250) under 50 ms at that rate.
 *
 *   npm run bench:bounces           (builds first)
 *   BENCH_MESSAGES=1000 BENCH_CONCURRENCY=4 npm run bench:bounces
 *   BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=var/prof" npm run bench:bounces   (profile the service)
 */
const { fork } = require('node:child_process');
const { join } = require('node:path');
const { Client } = require('pg');
const nodemailer = require('nodemailer');
const { DIST, createBenchDatabase, createProject, freePort, percentile, sleep, startApp } = require('./support');

const { ReturnPathTokens } = require(join(DIST, 'sending/return-path.js'));

const MESSAGES = Number(process.env.BENCH_MESSAGES || 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY || 8);
const SECRET = 'bench-secret-bench-secret-bench-secret-0123456789';
const DOMAIN = 'bounces.bench.example';

/** An RFC 3464 DSN for one email, as a receiving MTA returns it to the return path. */
function dsn(to, recipient, messageId) {
  const boundary = `b-${messageId.replace(/\W/g, '')}`;
  return [
    'From: MAILER-DAEMON@mx.bench.example (Mail Delivery System)',
    `To: ${to}`,
    'Subject: Undelivered Mail Returned to Sender',
    'Auto-Submitted: auto-replied',
    `Message-ID: <dsn-${messageId.replace(/[<>]/g, '')}>`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=delivery-status; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=us-ascii',
    '',
    `<${recipient}>: host mx.bench.example said: 550 5.1.1 User unknown`,
    '',
    `--${boundary}`,
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.bench.example',
    '',
    `Final-Recipient: rfc822; ${recipient}`,
    'Action: failed',
    'Status: 5.1.1',
    'Diagnostic-Code: smtp; 550 5.1.1 <' + recipient + '>: Recipient address rejected: User unknown',
    '',
    `--${boundary}`,
    'Content-Type: text/rfc822-headers',
    '',
    'From: news@bench.example',
    `To: ${recipient}`,
    'Subject: News',
    `Message-ID: ${messageId}`,
    '',
    `--${boundary}--`,
    '',
  ].join('\r\n');
}

/** Sends every message once over CONCURRENCY pooled connections; the latency of each transaction. */
async function feed(port, messages) {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    pool: true,
    maxConnections: CONCURRENCY,
    maxMessages: Infinity,
  });
  const latencies = [];
  let next = 0;
  let errors = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < messages.length) {
        const message = messages[next++];
        const t0 = process.hrtime.bigint();
        try {
          await transport.sendMail({ envelope: { from: '', to: [message.to] }, raw: message.raw });
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        } catch (error) {
          errors++;
          if (errors <= 3) console.error('send failed:', error.message);
        }
      }
    }),
  );
  transport.close();
  latencies.sort((a, b) => a - b);
  return { seconds: (Date.now() - started) / 1000, errors, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function startBaseline() {
  const child = fork(join(__dirname, 'bounces-baseline.js'));
  const port = await new Promise((resolve, reject) => {
    child.once('message', (message) => resolve(message.port));
    child.once('exit', (code) => reject(new Error(`baseline exited with ${code}`)));
  });
  const ask = () =>
    new Promise((resolve) => {
      child.once('message', resolve);
      child.send({ type: 'stats' });
    });
  return { port, stats: ask, stop: () => child.kill('SIGTERM') };
}

async function createEmails(base, key) {
  for (let batch = 0; batch < MESSAGES / 50; batch++) {
    const res = await fetch(`${base}/v1/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        to: Array.from({ length: 50 }, (_, i) => `reader${batch * 50 + i}@bench.example`),
        from: 'news@bench.example',
        subject: 'News',
        body: '<p>News</p>',
      }),
    });
    if (res.status !== 200) throw new Error(`POST /v1/send: HTTP ${res.status} ${await res.text()}`);
  }
}

async function waitFor(pg, sql, target, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const n = (await pg.query(sql)).rows[0].n;
    if (n >= target || Date.now() > deadline) return n;
    await sleep(20);
  }
}

async function main() {
  const db = await createBenchDatabase('bounces');
  const project = createProject(db.url, 'bench-bounces');
  const inboundPort = await freePort();
  const app = await startApp({
    DATABASE_URL: db.url,
    APP_ROLE: 'all',
    APP_SECRET: SECRET,
    REQUIRE_VERIFIED_SENDER: 'false',
    API_RATE_LIMIT_PER_MINUTE: '10000000',
    EMAIL_RATE_PER_SECOND: '10000',
    DELIVERY_GROUP_RATES: require('./support').LIFTED_GROUP_RATES,
    MAIL_OUTBOX_DIR: join(require('node:os').tmpdir(), `mw-bench-bounces-${process.pid}`),
    RETURN_PATH_DOMAIN: DOMAIN,
    INBOUND_SMTP_PORT: String(inboundPort),
    INBOUND_SMTP_HOST: '127.0.0.1',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL || 'warn',
  }, (process.env.BENCH_NODE_ARGS || '').split(' ').filter(Boolean));
  const baseline = await startBaseline();
  const pg = new Client({ connectionString: db.url });
  await pg.connect();
  try {
    await createEmails(app.base, project.secretKey);
    const sent = await waitFor(pg, `SELECT count(*)::int AS n FROM emails WHERE status = 'SENT'`, MESSAGES, 300_000);
    if (sent < MESSAGES) throw new Error(`only ${sent} of ${MESSAGES} emails were delivered`);
    const tokens = new ReturnPathTokens(SECRET);
    const emails = (await pg.query('SELECT id, to_email, message_id FROM emails ORDER BY id')).rows;
    const messages = emails.map((email) => {
      const to = tokens.address(email.id, DOMAIN);
      return { to, raw: dsn(to, email.to_email, email.message_id) };
    });
    // Warm-up: the first connections and parses of each side (the baseline gets the same messages again later).
    await feed(baseline.port, messages.slice(0, 100));

    const base = await feed(baseline.port, messages);
    const baseStats = await baseline.stats();
    const baseRate = MESSAGES / base.seconds;

    const started = Date.now();
    const service = await feed(inboundPort, messages);
    const processed = await waitFor(
      pg,
      `SELECT count(*)::int AS n FROM inbound_messages WHERE status <> 'RECEIVED'`,
      MESSAGES,
      300_000,
    );
    const seconds = (Date.now() - started) / 1000;
    const serviceRate = processed / seconds;
    const effects = (
      await pg.query(
        `SELECT (SELECT count(*)::int FROM emails WHERE status = 'BOUNCED') AS bounced,
                (SELECT count(*)::int FROM inbound_messages WHERE status = 'PROCESSED') AS processed,
                (SELECT count(*)::int FROM events WHERE name = 'email.bounced') AS events`,
      )
    ).rows[0];

    const ratio = serviceRate / baseRate;
    console.log(`DSNs through SMTP, ${MESSAGES} messages, ${CONCURRENCY} pooled connections`);
    console.log(
      `  baseline (smtp-server + mailparser): ${baseRate.toFixed(0)} msgs/s, SMTP p50 ${base.p50.toFixed(2)} ms p99 ${base.p99.toFixed(2)} ms (${baseStats.parsed} parsed incl. warm-up, ${base.errors} errors)`,
    );
    console.log(
      `  service to applied effects:          ${serviceRate.toFixed(0)} msgs/s (${seconds.toFixed(2)} s; all answered after ${service.seconds.toFixed(2)} s), SMTP p50 ${service.p50.toFixed(2)} ms p99 ${service.p99.toFixed(2)} ms (${service.errors} errors)`,
    );
    console.log(`  effects: ${JSON.stringify(effects)}`);
    console.log(
      `  ratio service/baseline ${(ratio * 100).toFixed(1)}% (target >= 50%), listener p99 ${service.p99.toFixed(2)} ms (target < 50 ms)`,
    );
    const met = ratio >= 0.5 && service.p99 < 50 && service.errors === 0 && effects.bounced === MESSAGES;
    console.log(`  targets met: ${met ? 'yes' : 'NO'}`);
  } finally {
    await pg.end();
    baseline.stop();
    await app.stop();
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
