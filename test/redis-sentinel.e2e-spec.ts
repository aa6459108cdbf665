import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestDnsServer, TestDnsServer } from './support/dns-server';
import { DIST_CLI, DIST_MAIN } from './support/processes';
import { redisCli, TestRedisSentinel } from './support/redis-topology';
import { deploymentEnv, mailEnv, ServiceCluster, verifyDomainOverHttp } from './support/services';
import { startTestSmtpServer, TestSmtpServer } from './support/smtp-server';
import { createTestDatabase, uniqueName } from './support/test-app';

/**
 * The service behind Redis Sentinel (contract "Scaling": REDIS_URL
 * `redis+sentinel://host:port,…/<master name>`): a master, its replica and a
 * sentinel on loopback; API and worker processes find the master through the
 * sentinel, and a send is delivered. Key names are those of a single server.
 *
 * Needs the build (npm test builds first).
 */
describe('Redis Sentinel (e2e)', () => {
  let redis: TestRedisSentinel;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let dns: TestDnsServer;
  let smtp: TestSmtpServer;
  const prefix = uniqueName('mwt_rsn');
  const cwd = mkdtempSync(join(tmpdir(), 'mw-rsn-'));
  const services = new ServiceCluster(
    () => ({
      ...deploymentEnv(db.url, prefix),
      ...mailEnv(smtp, dns, join(cwd, 'outbox')),
      REDIS_URL: redis.url(),
    }),
    cwd,
  );

  beforeAll(async () => {
    if (!existsSync(DIST_MAIN) || !existsSync(DIST_CLI))
      throw new Error('dist/ is missing: run npm run build (npm test does)');
    [redis, db] = await Promise.all([TestRedisSentinel.start('mymaster'), createTestDatabase()]);
    dns = await startTestDnsServer();
    smtp = await startTestSmtpServer({ parse: false, keepRaw: false });
  }, 60_000);

  afterAll(async () => {
    await services.killAll();
    await smtp?.close();
    await dns?.stop();
    await redis?.stop();
    await db?.drop();
  }, 60_000);

  it('finds the master through the sentinel and delivers a send', async () => {
    const project = services.createProject('Sentinel');
    // Boot bounds for a loaded CI machine; on an idle one each process is up in a few seconds.
    const [api] = await Promise.all([
      services.startApi({}, 60_000),
      services.startWorker({}, 60_000),
    ]);
    await verifyDomainOverHttp(api.base, project.secretKey, 'sentinel.test', dns);
    const res = await fetch(`${api.base}/v1/send`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${project.secretKey}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({
        to: 'watched@example.org',
        from: 'hello@sentinel.test',
        subject: 'Hi',
        body: '<p>Hi</p>',
      }),
    });
    expect(res.status).toBe(200);
    await smtp.waitForMessages(1);
    expect(smtp.messagesTo('watched@example.org')).toHaveLength(1);
    // The queue lives on the master the sentinel names, under the single-server key names.
    expect(await redisCli(redis.master.port, 'EXISTS', `${prefix}:delivery:meta`)).toBe('1');
  }, 90_000);
});
