import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import {
  createTestDatabase,
  flushPrefix,
  PG_ADMIN_URL,
  startTestApp,
  testConfig,
  TestApp,
  uniqueName,
} from './support/test-app';
import { pollUntil } from './support/poll';
import { DIST_CLI, freePort, runCli, startService, waitForHttp } from './support/processes';

beforeAll(() => {
  if (!existsSync(DIST_CLI))
    throw new Error('dist/ is missing: run `npm run build` (npm test does it first)');
});

describe('CLI (e2e)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const prefix = uniqueName('mwt_cli');
  let app: TestApp;
  let env: Record<string, string>;

  beforeAll(async () => {
    db = await createTestDatabase();
    env = { DATABASE_URL: db.url, REDIS_URL: 'redis://127.0.0.1:6379', QUEUE_PREFIX: prefix };
    app = await startTestApp(testConfig(db.url, prefix, { APP_ROLE: 'api' }));
  });
  afterAll(async () => {
    await app.close();
    await flushPrefix(prefix);
    await db.drop();
  });

  it('creates a project, whose key works until it is revoked', async () => {
    const created = runCli(['projects', 'create', '--name', 'Acme', '--json'], env);
    expect(created.status).toBe(0);
    const doc = JSON.parse(created.stdout);
    expect(doc).toEqual({
      project: expect.objectContaining({ id: expect.any(String), name: 'Acme' }),
      secretKey: expect.stringMatching(/^sk_/),
      publicKey: expect.stringMatching(/^pk_/),
    });
    const ok = await app.request({ method: 'GET', url: '/project', key: doc.secretKey });
    expect(ok.status).toBe(200);
    expect(ok.body.data.id).toBe(doc.project.id);

    const listed = JSON.parse(runCli(['keys', 'list', doc.project.id, '--json'], env).stdout);
    expect(listed.keys).toHaveLength(2);
    expect(JSON.stringify(listed)).not.toContain(doc.secretKey);
    const secret = listed.keys.find((k: { type: string }) => k.type === 'secret');

    const revoked = runCli(['keys', 'revoke', secret.id, '--json'], env);
    expect(revoked.status).toBe(0);
    expect(JSON.parse(revoked.stdout).key.revoked).toBe(true);
    const denied = await app.request({ method: 'GET', url: '/project', key: doc.secretKey });
    expect(denied.status).toBe(401);
    expect(denied.body.error.code).toBe('INVALID_API_KEY');
  });

  it('creates extra keys, disables and enables projects, lists them', async () => {
    const doc = JSON.parse(runCli(['projects', 'create', '--name', 'Beta', '--json'], env).stdout);
    const key = JSON.parse(
      runCli(['keys', 'create', doc.project.id, '--type', 'public', '--json'], env).stdout,
    );
    expect(key.apiKey).toMatch(/^pk_/);
    expect(key.key).toEqual(
      expect.objectContaining({ type: 'public', projectId: doc.project.id, revoked: false }),
    );

    expect(runCli(['projects', 'disable', doc.project.id, '--json'], env).status).toBe(0);
    const disabled = await app.request({ method: 'GET', url: '/project', key: doc.secretKey });
    expect(disabled.status).toBe(403);
    expect(disabled.body.error.code).toBe('PROJECT_DISABLED');
    expect(runCli(['projects', 'enable', doc.project.id], env).status).toBe(0);
    expect((await app.request({ method: 'GET', url: '/project', key: doc.secretKey })).status).toBe(
      200,
    );

    const list = JSON.parse(runCli(['projects', 'list', '--json'], env).stdout);
    expect(list.projects.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['Acme', 'Beta']),
    );
  });

  it('reports errors as JSON with a non-zero exit', () => {
    const missing = runCli(
      ['keys', 'revoke', '00000000-0000-7000-8000-000000000000', '--json'],
      env,
    );
    expect(missing.status).toBe(1);
    expect(JSON.parse(missing.stdout).error.code).toBe('KEY_NOT_FOUND');
    const usage = runCli(['keys', 'create', 'x', '--type', 'admin', '--json'], env);
    expect(usage.status).toBe(2);
    expect(JSON.parse(usage.stdout).error.code).toBe('USAGE');
  });
});

describe('booting the service (e2e)', () => {
  it('refuses a bad PORT with a message naming the variable', () => {
    return (async () => {
      const proc = startService({ PORT: 'eighty', APP_SECRET: 'x'.repeat(40) });
      const code = await proc.exited;
      expect(code).not.toBe(0);
      expect(proc.output()).toMatch(/PORT: expected an integer/);
    })();
  });

  it('creates its database on first start, serves /health/ready, and exits cleanly on SIGTERM', async () => {
    const name = uniqueName('mw_boot');
    const port = await freePort();
    const cwd = mkdtempSync(join(tmpdir(), 'mw-boot-'));
    const prefix = uniqueName('mwt_boot');
    const proc = startService(
      {
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: `postgresql://postgres@127.0.0.1:5432/${name}`,
        QUEUE_PREFIX: prefix,
        LOG_LEVEL: 'info',
      },
      cwd,
    );
    try {
      await waitForHttp(`http://127.0.0.1:${port}/health/ready`);
      // No APP_SECRET given outside production: one was generated into ./var/app-secret.
      expect(existsSync(join(cwd, 'var', 'app-secret'))).toBe(true);

      // Requests are logged as JSON lines with their request id; keys never appear.
      const created = JSON.parse(
        runCli(['projects', 'create', '--name', 'Logged', '--json'], {
          DATABASE_URL: `postgresql://postgres@127.0.0.1:5432/${name}`,
          QUEUE_PREFIX: prefix,
        }).stdout,
      );
      const res = await fetch(`http://127.0.0.1:${port}/project`, {
        headers: { authorization: `Bearer ${created.secretKey}`, 'x-request-id': 'boot-test-1' },
      });
      expect(res.status).toBe(200);
      // The request's log line is written asynchronously: wait for it rather than a fixed time.
      const line = await pollUntil(
        async () =>
          proc
            .output()
            .split('\n')
            .find((l) => l.includes('boot-test-1')),
        (found) => found !== undefined,
        5_000,
      );
      expect(line).toBeDefined();
      expect(JSON.parse(line as string)).toEqual(
        expect.objectContaining({ requestId: 'boot-test-1' }),
      );
      expect(proc.output()).not.toContain(created.secretKey);

      // Nest closes HTTP, workers and pools, then re-raises the signal it caught.
      proc.child.kill('SIGTERM');
      expect([0, 'SIGTERM']).toContain(await proc.exited);
      expect(proc.output()).not.toMatch(/"level":50/);
    } finally {
      proc.child.kill('SIGKILL');
      await flushPrefix(prefix);
      const admin = new Client({ connectionString: PG_ADMIN_URL });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await admin.end();
    }
  }, 120_000);
});
