'use strict';
/**
 * POST /v1/track and POST /v1/send through PgBouncer in transaction pooling mode against direct
 * connections, in the same run (issue 28: at least 90 %). One database, one PgBouncer of this
 * benchmark's own (Debian's binary, `apt-get install pgbouncer`; pool_mode=transaction,
 * default_pool_size 20, on a free port), and two built services (APP_ROLE=api, pool 20 each):
 * `direct` with DATABASE_URL on Postgres, `pooled` with DATABASE_URL on PgBouncer,
 * DATABASE_DIRECT_URL on Postgres and DATABASE_PREPARED_STATEMENTS=false. The machine is shared
 * and its load drifts, so the two are interleaved: after a warm-up of each, BENCH_ROUNDS rounds
 * (default 4) of every case for BENCH_SECONDS (default 3), the order alternating each round; a
 * ratio is the median over the rounds of pooled / direct in the same round (min-max beside it).
 *
 *   npm run bench:pgbouncer          (builds first)
 *   BENCH_ROUNDS=6 BENCH_SECONDS=5 node bench/pgbouncer.js
 */
const { execFileSync, spawn } = require('node:child_process');
const { chownSync, mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const net = require('node:net');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { Pool } = require('pg');
const { closedLoop, createBenchDatabase, createProject, startApp, REDIS_URL, deleteRedisKeys, okPoster } = require('./support');

const ROUNDS = Number(process.env.BENCH_ROUNDS || 4);
const SECONDS = Number(process.env.BENCH_SECONDS || 3);
const TRACK_CONCURRENCY = 64;
const SEND_CONCURRENCY = 32;
const RECIPIENTS = 10;
const POOL_SIZE = 20;
const PREFIX = `mwbenchpgb${process.pid}`;

function binary() {
  for (const candidate of ['pgbouncer', '/usr/sbin/pgbouncer']) {
    try {
      execFileSync(candidate, ['--version'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // next
    }
  }
  throw new Error('no pgbouncer binary: apt-get install -y pgbouncer');
}

function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function startPgBouncer() {
  const dir = mkdtempSync(join(tmpdir(), 'mw-bench-pgbouncer-'));
  const port = await freePort();
  const asRoot = process.getuid && process.getuid() === 0;
  writeFileSync(join(dir, 'userlist.txt'), '"postgres" ""\n');
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      '* = host=127.0.0.1 port=5432',
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      'pool_mode = transaction',
      `default_pool_size = ${POOL_SIZE}`,
      'max_client_conn = 500',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      ...(asRoot ? ['user = postgres'] : []),
      '',
    ].join('\n'),
  );
  if (asRoot) {
    const id = (flag) => Number(execFileSync('id', [flag, 'postgres']).toString());
    for (const path of [dir, join(dir, 'userlist.txt'), join(dir, 'pgbouncer.ini')]) chownSync(path, id('-u'), id('-g'));
  }
  const child = spawn(binary(), [join(dir, 'pgbouncer.ini')], { stdio: 'ignore' });
  for (let i = 0; ; i++) {
    const up = await new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (up) break;
    if (i > 200 || child.exitCode !== null) throw new Error('PgBouncer did not start');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((resolve) => child.once('exit', resolve));
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}


const trackBody = (i) => {
  const n = Math.floor(Math.random() * 20_000);
  return { email: `user${n}@bench.example`, event: ['signup', 'login', 'purchase'][i % 3], data: { plan: n % 3 ? 'free' : 'pro', step: i % 7 } };
};
const sendBody = (tag) => (seq) => ({
  to: Array.from({ length: RECIPIENTS }, (_, k) => `${tag}${seq}-${k}@example.org`),
  from: { email: 'hello@bench.example', name: 'Bench' },
  subject: 'Your code {{ code }}',
  body: '<p>Hello {{ email }}, your code is <b>{{ code }}</b>.</p>',
  data: { code: String(100000 + (seq % 900000)) },
});

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main() {
  const db = await createBenchDatabase('pgbouncer');
  const bouncer = await startPgBouncer();
  const pooledUrl = new URL(db.url);
  pooledUrl.port = String(bouncer.port);
  const project = createProject(db.url, 'PgBouncer bench');
  const common = { APP_ROLE: 'api', QUEUE_PREFIX: PREFIX, API_RATE_LIMIT_PER_MINUTE: '10000000', DATABASE_POOL_SIZE: String(POOL_SIZE) };
  const apps = {};
  try {
    apps.direct = await startApp({ ...common, DATABASE_URL: db.url });
    apps.pooled = await startApp({
      ...common,
      DATABASE_URL: pooledUrl.toString(),
      DATABASE_DIRECT_URL: db.url,
      DATABASE_PREPARED_STATEMENTS: 'false',
    });
    const key = project.secretKey;
    const domain = await (
      await fetch(`${apps.direct.base}/domains`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ domain: 'bench.example' }),
      })
    ).json();
    const pool = new Pool({ connectionString: db.url, max: 1 });
    await pool.query(`UPDATE domains SET status = 'VERIFIED', verified_at = now() WHERE id = $1`, [domain.data.id]);
    await pool.end();

    const cases = [];
    for (const name of ['direct', 'pooled']) {
      const track = okPoster(apps[name].base, '/v1/track', key, TRACK_CONCURRENCY);
      const send = okPoster(apps[name].base, '/v1/send', key, SEND_CONCURRENCY);
      const body = sendBody(name);
      cases.push({ name, kind: 'track', run: (s) => closedLoop(TRACK_CONCURRENCY, s, (i) => track(trackBody(i))), unit: 1 });
      cases.push({ name, kind: 'send', run: (s) => closedLoop(SEND_CONCURRENCY, s, (i) => send(body(i))), unit: RECIPIENTS });
    }
    console.log(`PgBouncer ${bouncer.port} (transaction mode) vs direct; ${ROUNDS} rounds of ${SECONDS} s per case`);
    for (const c of cases) await c.run(2);
    const ratios = { track: [], send: [] };
    const rates = { track: { direct: [], pooled: [] }, send: { direct: [], pooled: [] } };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 ? [...cases].reverse() : cases;
      const got = {};
      for (const c of order) {
        const r = await c.run(SECONDS);
        if (r.errors) console.log(`  ${c.name} ${c.kind}: ${r.errors} errors`);
        got[`${c.name}/${c.kind}`] = r.perSecond * c.unit;
        rates[c.kind][c.name].push(r.perSecond * c.unit);
        console.log(
          `  round ${round + 1} ${c.kind.padEnd(5)} ${c.name.padEnd(6)} ${(r.perSecond * c.unit).toFixed(0).padStart(6)}/s  p50 ${r.p50.toFixed(1)} ms  p99 ${r.p99.toFixed(1)} ms`,
        );
      }
      for (const kind of ['track', 'send']) ratios[kind].push(got[`pooled/${kind}`] / got[`direct/${kind}`]);
    }
    console.log('');
    for (const kind of ['track', 'send']) {
      const r = ratios[kind];
      console.log(
        `${kind === 'track' ? 'POST /v1/track (tracks/s)    ' : 'POST /v1/send (recipients/s)'}  direct median ${median(rates[kind].direct).toFixed(0)}, pooled median ${median(rates[kind].pooled).toFixed(0)}; ratio pooled/direct median ${(median(r) * 100).toFixed(1)}% (${(Math.min(...r) * 100).toFixed(1)}-${(Math.max(...r) * 100).toFixed(1)}%)  (target >= 90%)`,
      );
    }
  } finally {
    await apps.direct?.stop();
    await apps.pooled?.stop();
    await bouncer.stop();
    await db.drop();
    await deleteRedisKeys(`${PREFIX}*`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
