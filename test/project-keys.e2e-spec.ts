import * as logging from '../src/common/logging/logger';
import { PinoNestLogger } from '../src/common/logging/logger';
import { setupTestApp, TestApp, TestProject } from './support/test-app';

/**
 * POST /project/keys and DELETE /project/keys/{id}: a project makes and revokes its own keys
 * through the API (the dashboard's Settings page), with what revocation means for its sessions.
 */
describe('project keys API', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let project: TestProject;
  let other: TestProject;
  const logged: string[] = [];

  beforeAll(async () => {
    const createRootLogger = logging.createRootLogger;
    jest
      .spyOn(logging, 'createRootLogger')
      .mockImplementation((config) =>
        createRootLogger(config, { write: (line: string) => void logged.push(line) }),
      );
    for (const level of ['error', 'warn', 'log', 'debug', 'verbose', 'fatal'] as const) {
      jest.spyOn(PinoNestLogger.prototype, level).mockImplementation((...args: unknown[]) => {
        logged.push(JSON.stringify(args));
      });
    }
    ctx = await setupTestApp({ LOG_LEVEL: 'debug' });
    app = ctx.app;
    project = await app.createProject('Keys');
    other = await app.createProject('Other');
  }, 60_000);

  afterAll(async () => {
    jest.restoreAllMocks();
    await ctx?.close();
  });

  async function signIn(key: string): Promise<{ cookie: string; csrfToken: string }> {
    const res = await app.request({ method: 'POST', url: '/session', body: { key } });
    expect(res.status).toBe(200);
    const value = /^mw_session=([^;]+)/.exec(String(res.headers['set-cookie']))?.[1] ?? '';
    return { cookie: `mw_session=${value}`, csrfToken: res.body.data.csrfToken };
  }

  it('creates a named secret key shown once, which works, is listed without its secret, and revokes', async () => {
    const created = await app.request({
      method: 'POST',
      url: '/project/keys',
      key: project.secretKey,
      body: { type: 'secret', name: 'CI deploys' },
    });
    expect(created.status).toBe(201);
    const { key, apiKey } = created.body.data;
    expect(apiKey).toMatch(/^sk_/);
    expect(key).toEqual({
      id: expect.any(String),
      projectId: project.id,
      name: 'CI deploys',
      type: 'secret',
      prefix: apiKey.slice(0, key.prefix.length),
      revoked: false,
      createdAt: expect.any(String),
      revokedAt: null,
    });

    const used = await app.request({ method: 'GET', url: '/project', key: apiKey });
    expect(used.status).toBe(200);
    expect(used.body.data.id).toBe(project.id);

    const listed = await app.request({
      method: 'GET',
      url: '/project/keys',
      key: project.secretKey,
    });
    const item = listed.body.data.items.find((k: { id: string }) => k.id === key.id);
    expect(item).toEqual(key);
    expect(listed.raw).not.toContain(apiKey);

    // A session signed in with the new key ends when the key is revoked.
    const session = await signIn(apiKey);
    const before = await app.request({
      method: 'GET',
      url: '/contacts',
      headers: { cookie: session.cookie },
    });
    expect(before.status).toBe(200);

    const revoked = await app.request({
      method: 'DELETE',
      url: `/project/keys/${key.id}`,
      key: project.secretKey,
    });
    expect(revoked.status).toBe(200);
    expect(revoked.body.data).toMatchObject({
      id: key.id,
      revoked: true,
      revokedAt: expect.any(String),
    });

    const refused = await app.request({ method: 'GET', url: '/project', key: apiKey });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('INVALID_API_KEY');
    const ended = await app.request({
      method: 'GET',
      url: '/contacts',
      headers: { cookie: session.cookie },
    });
    expect(ended.status).toBe(401);

    // Again: answered unchanged, the first revocation time kept.
    const again = await app.request({
      method: 'DELETE',
      url: `/project/keys/${key.id}`,
      key: project.secretKey,
    });
    expect(again.status).toBe(200);
    expect(again.body.data.revokedAt).toBe(revoked.body.data.revokedAt);

    // Neither the key nor its session cookie was logged.
    expect(logged.join('\n')).not.toContain(apiKey);
    expect(logged.join('\n')).not.toContain(session.cookie.slice('mw_session='.length));
  });

  it('a session may revoke a key with its CSRF token, not without', async () => {
    const created = await app.request({
      method: 'POST',
      url: '/project/keys',
      key: project.secretKey,
      body: { type: 'public' },
    });
    expect(created.status).toBe(201);
    expect(created.body.data.apiKey).toMatch(/^pk_/);
    expect(created.body.data.key).toMatchObject({ type: 'public', name: null });
    const id = created.body.data.key.id;
    const session = await signIn(project.secretKey);
    const noToken = await app.request({
      method: 'DELETE',
      url: `/project/keys/${id}`,
      headers: { cookie: session.cookie },
    });
    expect(noToken.status).toBe(403);
    expect(noToken.body.error.code).toBe('FORBIDDEN');
    const stillWorks = await app.request({
      method: 'POST',
      url: '/v1/track',
      key: created.body.data.apiKey,
      body: { email: 'pk@example.com', event: 'signed-up' },
    });
    expect(stillWorks.status).toBeLessThan(300);
    const withToken = await app.request({
      method: 'DELETE',
      url: `/project/keys/${id}`,
      headers: { cookie: session.cookie, 'x-csrf-token': session.csrfToken },
    });
    expect(withToken.status).toBe(200);
    expect(withToken.body.data.revoked).toBe(true);
  });

  it("another project's key id is 404 and stays active; a pk_ key cannot manage keys", async () => {
    const theirs = await app.request({ method: 'GET', url: '/project/keys', key: other.secretKey });
    const theirKey = theirs.body.data.items[0];
    const res = await app.request({
      method: 'DELETE',
      url: `/project/keys/${theirKey.id}`,
      key: project.secretKey,
    });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('KEY_NOT_FOUND');
    const stillOk = await app.request({ method: 'GET', url: '/project', key: other.secretKey });
    expect(stillOk.status).toBe(200);

    const pk = await app.request({
      method: 'POST',
      url: '/project/keys',
      key: project.publicKey,
      body: { type: 'secret' },
    });
    expect(pk.status).toBe(403);
  });

  it("the project's last active secret key cannot be revoked (409); with another it can revoke itself", async () => {
    const own = await app.request({
      method: 'GET',
      url: '/project/keys?limit=100',
      key: other.secretKey,
    });
    const secret = own.body.data.items.find(
      (k: { type: string; revoked: boolean }) => k.type === 'secret' && !k.revoked,
    );
    const last = await app.request({
      method: 'DELETE',
      url: `/project/keys/${secret.id}`,
      key: other.secretKey,
    });
    expect(last.status).toBe(409);
    expect(last.body.error.code).toBe('CONFLICT');
    expect(last.body.error.message).toMatch(/last active secret key/);
    expect(
      (await app.request({ method: 'GET', url: '/project', key: other.secretKey })).status,
    ).toBe(200);

    const second = await app.request({
      method: 'POST',
      url: '/project/keys',
      key: other.secretKey,
      body: { type: 'secret' },
    });
    const self = await app.request({
      method: 'DELETE',
      url: `/project/keys/${secret.id}`,
      key: other.secretKey,
    });
    expect(self.status).toBe(200);
    expect(
      (await app.request({ method: 'GET', url: '/project', key: other.secretKey })).status,
    ).toBe(401);
    expect(
      (await app.request({ method: 'GET', url: '/project', key: second.body.data.apiKey })).status,
    ).toBe(200);
  });

  it('bad input answers the error envelope', async () => {
    const cases: [unknown, string, string][] = [
      [{}, 'type', 'required'],
      [{ type: 'admin' }, 'type', 'invalid_enum_value'],
      [{ type: 'secret', name: '' }, 'name', ''],
      [{ type: 'secret', name: 'x'.repeat(101) }, 'name', 'too_big'],
      [{ type: 'secret', name: null }, 'name', ''],
      [{ type: 'secret', extra: 1 }, 'extra', 'unrecognized_keys'],
    ];
    for (const [body, field, code] of cases) {
      const res = await app.request({
        method: 'POST',
        url: '/project/keys',
        key: project.secretKey,
        body,
      });
      expect(res.status).toBe(422);
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      const error = res.body.error.errors.find((e: { field: string }) => e.field === field);
      expect(error).toBeDefined();
      if (code) expect(error.code).toBe(code);
    }
    const badId = await app.request({
      method: 'DELETE',
      url: '/project/keys/not-a-uuid',
      key: project.secretKey,
    });
    expect(badId.status).toBe(400);
    expect(badId.body.error.code).toBe('BAD_REQUEST');
    const badJson = await app.request({
      method: 'POST',
      url: '/project/keys',
      key: project.secretKey,
      body: '{"type":',
    });
    expect(badJson.status).toBe(400);
  });
});
