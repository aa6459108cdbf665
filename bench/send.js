'use strict';
/**
 * POST /v1/send accepted recipients per second at 32 concurrent connections
 * (a child `node dist/main.js`, APP_ROLE=api so no delivery competes for the
 * CPU), beside a baseline measured in the same run: the same durable work
 * issued directly with pg + BullMQ at the same concurrency and pool size —
 * per request one transaction (contact upserts, one multi-row INSERT of the
 * rendered emails, one of the email.queued events) then one addBulk of the
 * jobs. Target: 1,000 recipients/s or better.
 *
 *   npm run bench:send       (BENCH_SECONDS=10, BENCH_RECIPIENTS=10 per request)
 */
const { Queue } = require('bullmq');
const { Pool } = require('pg');
const { v7: uuidv7 } = require('uuid');
const { closedLoop, createBenchDatabase, createProject, okPoster, startApp, REDIS_URL, deleteRedisKeys } = require('./support');

const CONCURRENCY = 32;
const SECONDS = Number(process.env.BENCH_SECONDS || 10);
const RECIPIENTS = Number(process.env.BENCH_RECIPIENTS || 10);
const POOL_SIZE = 20;
const PREFIX = `mwbenchsend${process.pid}`;

/** The shared closed loop at this file's concurrency, counted in recipients. */
async function closedLoopRecipients(seconds, fn) {
  const r = await closedLoop(CONCURRENCY, seconds, fn);
  return { ...r, recipientsPerSecond: r.perSecond * RECIPIENTS };
}

function body(seq, tag) {
  return {
    to: Array.from({ length: RECIPIENTS }, (_, k) => `${tag}${seq}-${k}@example.org`),
    from: { email: 'hello@bench.example', name: 'Bench' },
    subject: 'Your code {{ code }}',
    body: '<p>Hello {{ email }}, your code is <b>{{ code }}</b>.</p>',
    data: { code: String(100000 + (seq % 900000)) },
  };
}

async function baseline(databaseUrl, projectId) {
  const pool = new Pool({ connectionString: databaseUrl, max: POOL_SIZE });
  const queue = new Queue('delivery', { connection: { url: REDIS_URL }, prefix: `${PREFIX}base` });
  const result = await closedLoopRecipients(SECONDS, async (seq) => {
    const b = body(seq, 'base');
    const client = await pool.connect();
    const emails = [];
    try {
      await client.query('BEGIN');
      for (const to of b.to) {
        const { rows } = await client.query(
          `INSERT INTO contacts AS c (id, project_id, email, subscribed, suppressed, data, created_at, updated_at)
           VALUES ($1, $2, $3, false, false, $4::jsonb, now(), now())
           ON CONFLICT (project_id, email) DO UPDATE SET data = c.data || $4::jsonb, updated_at = now()
           RETURNING id, data`,
          [uuidv7(), projectId, to, JSON.stringify(b.data)],
        );
        emails.push({ id: uuidv7(), contactId: rows[0].id, to });
      }
      const values = [];
      const params = [];
      emails.forEach((e, i) => {
        const o = i * 6;
        values.push(`($${o + 1}, $${o + 2}, $${o + 3}, 'TRANSACTIONAL', $${o + 4}, 'hello@bench.example', $${o + 5}, $${o + 6}, $${o + 6}, 1)`);
        params.push(e.id, projectId, e.contactId, e.to, `Your code ${b.data.code}`, `<p>Hello ${e.to}</p>`);
      });
      await client.query(
        `INSERT INTO emails (id, project_id, contact_id, source, to_email, from_email, subject, html, text, priority) VALUES ${values.join(',')}`,
        params,
      );
      const ev = [];
      const evParams = [];
      emails.forEach((e, i) => {
        const o = i * 4;
        ev.push(`($${o + 1}, $${o + 2}, $${o + 3}, $${o + 4}, 'email.queued', '{}'::jsonb)`);
        evParams.push(uuidv7(), projectId, e.contactId, e.id);
      });
      await client.query(`INSERT INTO events (id, project_id, contact_id, email_id, name, data) VALUES ${ev.join(',')}`, evParams);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    } finally {
      client.release();
    }
    await queue.addBulk(emails.map((e) => ({ name: 'deliver', data: { emailId: e.id }, opts: { jobId: e.id, priority: 1 } })));
  });
  await queue.obliterate({ force: true });
  await queue.close();
  await pool.end();
  return result;
}

function print(label, r) {
  console.log(
    `${label.padEnd(44)} ${r.recipientsPerSecond.toFixed(0).padStart(6)} recipients/s  (${r.requests} requests, ${r.errors} errors, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms)`,
  );
}

async function main() {
  const db = await createBenchDatabase('send');
  const project = createProject(db.url, 'Send bench');
  const app = await startApp({ DATABASE_URL: db.url, APP_ROLE: 'api', QUEUE_PREFIX: PREFIX, API_RATE_LIMIT_PER_MINUTE: '10000000' });
  try {
    const auth = { authorization: `Bearer ${project.secretKey}`, 'content-type': 'application/json' };
    const domain = await (await fetch(`${app.base}/domains`, { method: 'POST', headers: auth, body: JSON.stringify({ domain: 'bench.example' }) })).json();
    const pool = new Pool({ connectionString: db.url, max: 1 });
    await pool.query(`UPDATE domains SET status = 'VERIFIED', verified_at = now() WHERE id = $1`, [domain.data.id]);
    await pool.end();

    const send = okPoster(app.base, '/v1/send', project.secretKey, CONCURRENCY);
    console.log(`${CONCURRENCY} connections, ${RECIPIENTS} recipients per request, ${SECONDS} s each`);
    await closedLoopRecipients(2, (seq) => send(body(seq, 'warm')));
    const service = await closedLoopRecipients(SECONDS, (seq) => send(body(seq, 'svc')));
    print('POST /v1/send (service)', service);
    const base = await baseline(db.url, project.project.id);
    print('baseline: same SQL + addBulk, direct pg', base);
    console.log(`\nratio service/baseline: ${((service.recipientsPerSecond / base.recipientsPerSecond) * 100).toFixed(1)}%  (target: >= 1000 recipients/s)`);
    send.destroy();
  } finally {
    await app.stop();
    await db.drop();
    await deleteRedisKeys(`${PREFIX}*`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
