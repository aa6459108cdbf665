import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { startTestDnsServer, TestDnsServer } from './support/dns-server';
import { pollUntil } from './support/poll';
import { DIST_CLI, DIST_MAIN, runCli, ServiceProcess } from './support/processes';
import { killRedis, redisCli, TestRedisCluster } from './support/redis-topology';
import {
  callApi as call,
  deploymentEnv,
  mailEnv,
  ServiceCluster,
  verifyDomainOverHttp,
} from './support/services';
import { startTestSmtpServer, TestSmtpServer } from './support/smtp-server';
import { createTestDatabase, uniqueName } from './support/test-app';

/**
 * The service on a Redis Cluster (contract "Scaling": REDIS_URL
 * `redis+cluster://…`): three masters with a replica each on loopback, API and
 * worker processes (`node dist/main.js`) and the CLI against it. A send is
 * delivered, a 200-recipient campaign completes, the per-project rate limit
 * answers 429 at its limit, an Idempotency-Key dedupes; then the master of the
 * delivery queue's slot is killed, its replica takes over, and every send
 * answered meanwhile is delivered.
 *
 * Needs the build (npm test builds first).
 */
const RECIPIENTS = 200;
const PUBLIC_LIMIT = 5;
const ADMIN_TOKEN = 'cluster-admin-token-0123456789';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('Redis Cluster (e2e)', () => {
  let redis: TestRedisCluster;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let pg: Client;
  let dns: TestDnsServer;
  let smtp: TestSmtpServer;
  const prefix = uniqueName('mwt_rcl');
  const cwd = mkdtempSync(join(tmpdir(), 'mw-rcl-'));
  const deployment = (): Record<string, string> => ({
    ...deploymentEnv(db.url, prefix),
    ...mailEnv(smtp, dns, join(cwd, 'outbox')),
    REDIS_URL: redis.url(),
    // Writes a killed master had not passed to its replica are lost with it; the recovery
    // schedulers re-add the jobs of rows still open (queue/recovery.ts), here within seconds.
    RECOVERY_EVERY_MS: '2000',
  });
  const services = new ServiceCluster(deployment, cwd);

  const send = async (
    base: string,
    key: string,
    to: string,
    idempotencyKey?: string,
  ): Promise<{ status: number; body: Json }> => {
    const res = await fetch(`${base}/v1/send`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
      },
      body: JSON.stringify({ to, from: 'hello@cluster.test', subject: 'Hi', body: '<p>Hi</p>' }),
    });
    return { status: res.status, body: (await res.json()) as Json };
  };

  const statusOf = async (ids: string[]): Promise<Record<string, number>> => {
    const { rows } = await pg.query(
      'SELECT status, count(*)::int AS n FROM emails WHERE id = ANY($1) GROUP BY status',
      [ids],
    );
    return Object.fromEntries(rows.map((r: { status: string; n: number }) => [r.status, r.n]));
  };

  let api: { base: string };
  let worker: ServiceProcess;
  let key: string;
  let publicKey: string;

  beforeAll(async () => {
    if (!existsSync(DIST_MAIN) || !existsSync(DIST_CLI))
      throw new Error('dist/ is missing: run npm run build (npm test does)');
    [redis, db] = await Promise.all([TestRedisCluster.start(3), createTestDatabase()]);
    pg = new Client({ connectionString: db.url });
    await pg.connect();
    dns = await startTestDnsServer();
    smtp = await startTestSmtpServer({ parse: false, keepRaw: false });
    // The CLI on the cluster too (it bumps the auth epoch there).
    const env = deployment();
    const created = runCli(['projects', 'create', '--name', 'Cluster', '--json'], {
      DATABASE_URL: env.DATABASE_URL,
      REDIS_URL: env.REDIS_URL,
      QUEUE_PREFIX: env.QUEUE_PREFIX,
      APP_SECRET: env.APP_SECRET,
    });
    if (created.status !== 0)
      throw new Error(`projects create: ${created.stdout}${created.stderr}`);
    ({ secretKey: key, publicKey } = JSON.parse(created.stdout) as Json);
    [api, worker] = await Promise.all([
      services.startApi(
        { PUBLIC_RATE_LIMIT_PER_MINUTE: String(PUBLIC_LIMIT), ADMIN_TOKEN },
        60_000,
      ),
      // Boot bound for a loaded CI machine; on an idle one each process is up in a few seconds.
      services.startWorker({}, 60_000),
    ]);
    await verifyDomainOverHttp(api.base, key, 'cluster.test', dns);
  }, 150_000);

  afterAll(async () => {
    await services.killAll();
    await pg?.end();
    await smtp?.close();
    await dns?.stop();
    await redis?.stop();
    await db?.drop();
  }, 60_000);

  it('keeps each queue in a slot of its own and delivers a send', async () => {
    const slot = (k: string) => redisCli(redis.alive()[0].port, 'CLUSTER', 'KEYSLOT', k);
    expect(await slot(`{${prefix}:delivery}:delivery:wait`)).toBe(
      await slot(`{${prefix}:delivery}:delivery:active`),
    );
    expect(await slot(`{${prefix}:delivery}:x`)).not.toBe(await slot(`{${prefix}:campaigns}:x`));

    const first = await send(api.base, key, 'first@example.org');
    expect(first.status).toBe(200);
    await smtp.waitForMessages(1);
    expect(smtp.messagesTo('first@example.org')).toHaveLength(1);
    const master = await redis.masterOf(`{${prefix}:delivery}`);
    expect(await redisCli(master.port, 'EXISTS', `{${prefix}:delivery}:delivery:meta`)).toBe('1');

    // Bull Board reads the queues through the cluster client.
    const board = await fetch(`${api.base}/admin/queues/api/queues`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(board.status).toBe(200);
    const names = ((await board.json()) as Json).queues.map((q: Json) => q.name as string);
    expect(names).toEqual(expect.arrayContaining(['delivery', 'campaigns', 'webhooks']));
  });

  it('dedupes an Idempotency-Key: one email, one message', async () => {
    const once = await send(api.base, key, 'once@example.org', 'order-1');
    const again = await send(api.base, key, 'once@example.org', 'order-1');
    expect([once.status, again.status]).toEqual([200, 200]);
    expect(again.body).toEqual(once.body);
    await pollUntil(
      () => statusOf([once.body.data.emails[0].id as string]),
      (s) => s.SENT === 1,
      20_000,
      100,
    );
    expect(smtp.messagesTo('once@example.org')).toHaveLength(1);
  });

  it('answers 429 on /v1/track at the limit, counted in the cluster', async () => {
    const track = async () =>
      (
        await fetch(`${api.base}/v1/track`, {
          method: 'POST',
          headers: { authorization: `Bearer ${publicKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ email: 'visitor@example.org', event: 'page' }),
        })
      ).status;
    const answers: number[] = [];
    for (let i = 0; i < PUBLIC_LIMIT + 2; i++) answers.push(await track());
    expect(answers).toEqual([...Array(PUBLIC_LIMIT).fill(200), 429, 429]);
    // The secret key's budget is another counter: not spent by the public key's requests.
    expect((await call(api.base, key, 'GET', '/contacts')).status).toBe(200);
  });

  it('completes a campaign to 200 contacts', async () => {
    for (let i = 0; i < RECIPIENTS; i += 25) {
      const batch = Array.from({ length: Math.min(25, RECIPIENTS - i) }, (_, j) =>
        call(api.base, key, 'POST', '/contacts', {
          email: `c${i + j}@campaign.example.org`,
          subscribed: true,
        }),
      );
      for (const res of await Promise.all(batch)) expect(res.status).toBe(201);
    }
    // Audience ALL: these 200 and the contacts the earlier tests made.
    const audience = Number(
      (await pg.query('SELECT count(*)::int AS n FROM contacts WHERE subscribed')).rows[0].n,
    );
    expect(audience).toBeGreaterThanOrEqual(RECIPIENTS);
    const campaign = await call(api.base, key, 'POST', '/campaigns', {
      name: 'Cluster campaign',
      subject: 'News for {{ contact.email }}',
      body: '<p>Hello</p><a href="{{ unsubscribeUrl }}">Unsubscribe</a>',
      from: 'news@cluster.test',
      audienceType: 'ALL',
    });
    expect(campaign.status).toBe(201);
    const campaignId = campaign.body.data.id as string;
    const started = await call(api.base, key, 'POST', `/campaigns/${campaignId}/send`, {});
    expect(started.status).toBe(202);
    const sent = await pollUntil(
      async () => (await call(api.base, key, 'GET', `/campaigns/${campaignId}`)).body.data as Json,
      (c) => c.status === 'SENT',
      50_000,
      200,
    );
    expect(sent.status).toBe('SENT');
    await pollUntil(
      async () =>
        (
          await pg.query(
            `SELECT count(*)::int AS n, count(DISTINCT contact_id)::int AS contacts,
                    count(*) FILTER (WHERE status = 'SENT')::int AS delivered
               FROM emails WHERE campaign_id = $1`,
            [campaignId],
          )
        ).rows[0] as Json,
      (row) => row.delivered === audience,
      20_000,
      200,
    ).then((row) => expect(row).toEqual({ n: audience, contacts: audience, delivered: audience }));
    const reached = new Set(
      smtp.messages.flatMap((m) => m.to).filter((to) => to.endsWith('@campaign.example.org')),
    );
    expect(reached.size).toBe(RECIPIENTS);
  });

  // Not in `npm test` (CI time): CI kills a master under load in `npm run test:topology`, and the
  // cause of this test's old hang has a spec of its own (redis-cluster-reconnect.e2e-spec.ts).
  // `npm run test:redis-failover` runs it.
  const failover = process.env.REDIS_FAILOVER_TEST === '1' ? it : it.skip;
  failover(
    'carries on when the master of the delivery queue fails: every answered send is delivered',
    async () => {
      const master = await redis.masterOf(`{${prefix}:delivery}`);
      const ids: string[] = [];
      const sendBatch = async (label: string, n: number) => {
        const answers = await Promise.all(
          Array.from({ length: n }, (_, i) =>
            send(api.base, key, `${label}${i}@failover.example.org`),
          ),
        );
        for (const res of answers) {
          expect(res.status).toBe(200);
          ids.push(res.body.data.emails[0].id as string);
        }
      };
      await sendBatch('before', 10);
      await killRedis(master);
      const killedAt = Date.now();
      await sendBatch('during', 10);
      await redis.waitHealthy(redis.alive(), 30_000);
      const healthyAt = Date.now();
      await sendBatch('after', 10);
      const promoted = await redis.masterOf(`{${prefix}:delivery}`);
      expect(promoted.port).not.toBe(master.port);

      const done = await pollUntil(
        () => statusOf(ids),
        (byStatus) => byStatus.SENT === ids.length,
        40_000,
        200,
      );
      expect(done).toEqual({ SENT: ids.length });
      const reached = new Set(
        smtp.messages.flatMap((m) => m.to).filter((to) => to.endsWith('@failover.example.org')),
      );
      expect(reached.size).toBe(ids.length);
      expect(worker.child.exitCode).toBeNull();
      console.log(
        `redis cluster failover: cluster ok ${healthyAt - killedAt} ms after the master was killed, ` +
          `all ${ids.length} sends SENT ${Date.now() - killedAt} ms after (busy machine: indicative)`,
      );
    },
  );
});
