import { DataSource } from 'typeorm';
import { ApiKeyType } from '../src/common/auth/api-key.crypto';
import * as logging from '../src/common/logging/logger';
import { PinoNestLogger } from '../src/common/logging/logger';
import { ProjectsService } from '../src/projects/projects.service';
import {
  flushPrefix,
  setupTestApp,
  startTestApp,
  TestApp,
  testConfig,
  TestProject,
  uniqueName,
} from './support/test-app';

/**
 * The dashboard's sessions (contract, "Dashboard"): a secret key exchanged for an HttpOnly cookie
 * that then acts as the key, CSRF on changes, sign-out, idle expiry and revocation on the server.
 */
describe('dashboard sessions', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let db: DataSource;
  let project: TestProject;
  const logged: string[] = [];

  beforeAll(async () => {
    // Every line the app's logger writes, at debug level: neither the key nor the session may show.
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
    db = app.app.get(DataSource);
    project = await app.createProject('Dashboard');
  }, 60_000);

  afterAll(async () => {
    jest.restoreAllMocks();
    await ctx?.close();
  });

  interface Session {
    cookie: string;
    value: string;
    setCookie: string;
    csrfToken: string;
  }

  async function signIn(key: string): Promise<Session> {
    const res = await app.request({ method: 'POST', url: '/session', body: { key } });
    expect(res.status).toBe(200);
    const setCookie = String(res.headers['set-cookie']);
    const value = /^mw_session=([^;]+)/.exec(setCookie)?.[1] ?? '';
    return { cookie: `mw_session=${value}`, value, setCookie, csrfToken: res.body.data.csrfToken };
  }

  const withCookie = (session: Session, extra: Record<string, string> = {}) => ({
    cookie: session.cookie,
    ...extra,
  });

  it('POST /session with a secret key sets the session cookie with exactly its flags', async () => {
    const res = await app.request({
      method: 'POST',
      url: '/session',
      body: { key: project.secretKey },
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      project: { id: project.id, name: 'Dashboard' },
      csrfToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      expiresAt: expect.any(String),
    });
    const expiresIn = Date.parse(res.body.data.expiresAt) - Date.now();
    expect(expiresIn).toBeGreaterThan(11.9 * 3600_000);
    expect(expiresIn).toBeLessThanOrEqual(12 * 3600_000);
    expect(res.headers['set-cookie']).toMatch(
      /^mw_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict$/,
    );
    // Only a hash is stored.
    const value = /^mw_session=([^;]+)/.exec(String(res.headers['set-cookie']))![1];
    const stored = await db.query(`SELECT token_hash FROM dashboard_sessions`);
    expect(stored.length).toBeGreaterThan(0);
    for (const row of stored as Array<{ token_hash: Buffer }>) {
      expect(row.token_hash.toString('utf8')).not.toContain(value);
      expect(row.token_hash.toString('base64url')).not.toContain(value);
    }
  });

  it('the cookie is Secure when PUBLIC_URL is https', async () => {
    const prefix = uniqueName('mwt');
    const secureApp = await startTestApp(
      testConfig(ctx.db.url, prefix, { PUBLIC_URL: 'https://mail.example.com' }),
    );
    try {
      const res = await secureApp.request({
        method: 'POST',
        url: '/session',
        body: { key: project.secretKey },
      });
      expect(res.status).toBe(200);
      expect(res.headers['set-cookie']).toMatch(
        /^mw_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Secure$/,
      );
    } finally {
      await secureApp.close();
      await flushPrefix(prefix);
    }
  });

  it('a pk_ key, an unknown key or a revoked key is 401 INVALID_API_KEY and sets no cookie', async () => {
    for (const key of [project.publicKey, 'sk_' + 'x'.repeat(40), 'not a key']) {
      const res = await app.request({ method: 'POST', url: '/session', body: { key } });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('INVALID_API_KEY');
      expect(res.body.error.suggestion).toEqual(expect.any(String));
      expect(res.headers['set-cookie']).toBeUndefined();
    }
    const missing = await app.request({ method: 'POST', url: '/session', body: {} });
    expect(missing.status).toBe(422);
  });

  it('the cookie acts as the secret key; GET /session names the project', async () => {
    const session = await signIn(project.secretKey);
    const contacts = await app.request({
      method: 'GET',
      url: '/contacts',
      headers: withCookie(session),
    });
    expect(contacts.status).toBe(200);
    expect(contacts.headers['ratelimit-limit']).toBeDefined();
    const described = await app.request({
      method: 'GET',
      url: '/session',
      headers: withCookie(session),
    });
    expect(described.status).toBe(200);
    expect(described.body.data.project).toEqual({ id: project.id, name: 'Dashboard' });
    expect(described.body.data.csrfToken).toBe(session.csrfToken);

    // No cookie, a made-up one: 401 like the API.
    const none = await app.request({ method: 'GET', url: '/session' });
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('MISSING_API_KEY');
    const forged = await app.request({
      method: 'GET',
      url: '/contacts',
      headers: { cookie: `mw_session=${'A'.repeat(43)}` },
    });
    expect(forged.status).toBe(401);
    expect(forged.body.error.code).toBe('INVALID_API_KEY');
  });

  it('an Authorization header wins over the cookie', async () => {
    const other = await app.createProject('Other');
    const session = await signIn(project.secretKey);
    const res = await app.request({
      method: 'GET',
      url: '/project',
      headers: withCookie(session, { authorization: `Bearer ${other.secretKey}` }),
    });
    expect(res.status).toBe(200);
    expect(res.body.data.id).toBe(other.id);
    const wrong = await app.request({
      method: 'GET',
      url: '/project',
      headers: withCookie(session, { authorization: 'Bearer sk_wrongwrongwrongwrong' }),
    });
    expect(wrong.status).toBe(401);
  });

  it('a change with the cookie needs X-CSRF-Token: without it 403 FORBIDDEN and nothing changes', async () => {
    const session = await signIn(project.secretKey);
    const email = 'csrf@example.com';
    for (const token of [undefined, 'wrong', session.csrfToken + 'x']) {
      const refused = await app.request({
        method: 'POST',
        url: '/contacts',
        body: { email },
        headers: withCookie(session, token === undefined ? {} : { 'x-csrf-token': token }),
      });
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('FORBIDDEN');
      expect(refused.body.success).toBe(false);
    }
    const count = async () =>
      Number(
        (
          await db.query(
            `SELECT count(*)::int AS n FROM contacts WHERE project_id = $1 AND email = $2`,
            [project.id, email],
          )
        )[0].n,
      );
    expect(await count()).toBe(0);

    // Another session's token is no good either.
    const second = await signIn(project.secretKey);
    const crossed = await app.request({
      method: 'POST',
      url: '/contacts',
      body: { email },
      headers: withCookie(session, { 'x-csrf-token': second.csrfToken }),
    });
    expect(crossed.status).toBe(403);
    expect(await count()).toBe(0);

    const created = await app.request({
      method: 'POST',
      url: '/contacts',
      body: { email },
      headers: withCookie(session, { 'x-csrf-token': session.csrfToken }),
    });
    expect(created.status).toBe(201);
    expect(await count()).toBe(1);
    const removed = await app.request({
      method: 'DELETE',
      url: `/contacts/${created.body.data.id}`,
      headers: withCookie(session),
    });
    expect(removed.status).toBe(403);
    expect(await count()).toBe(1);
  });

  it('DELETE /session ends the session on the server: the same cookie is then 401', async () => {
    const session = await signIn(project.secretKey);
    const refused = await app.request({
      method: 'DELETE',
      url: '/session',
      headers: withCookie(session),
    });
    expect(refused.status).toBe(403);
    const out = await app.request({
      method: 'DELETE',
      url: '/session',
      headers: withCookie(session, { 'x-csrf-token': session.csrfToken }),
    });
    expect(out.status).toBe(200);
    expect(out.body.data).toEqual({ signedOut: true });
    expect(out.headers['set-cookie']).toMatch(
      /^mw_session=; Path=\/; HttpOnly; SameSite=Strict; Max-Age=0$/,
    );
    const after = await app.request({
      method: 'GET',
      url: '/contacts',
      headers: withCookie(session),
    });
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('INVALID_API_KEY');
    // The browser is told to drop a cookie that names no session (another tab signed out).
    expect(after.headers['set-cookie']).toMatch(
      /^mw_session=; Path=\/; HttpOnly; SameSite=Strict; Max-Age=0$/,
    );
  });

  it('an idle session ends after 12 hours; use slides its expiry', async () => {
    const session = await signIn(project.secretKey);
    // Eleven hours idle: still valid, and using it moves the expiry back to 12 hours from now.
    await db.query(
      `UPDATE dashboard_sessions SET expires_at = now() + interval '1 hour' WHERE expires_at > now() + interval '11 hours 59 minutes'`,
    );
    const used = await app.request({
      method: 'GET',
      url: '/session',
      headers: withCookie(session),
    });
    expect(used.status).toBe(200);
    expect(Date.parse(used.body.data.expiresAt) - Date.now()).toBeGreaterThan(11.9 * 3600_000);

    await db.query(
      `UPDATE dashboard_sessions SET expires_at = now() - interval '1 second' WHERE expires_at > now() + interval '11 hours 59 minutes'`,
    );
    const idle = await app.request({
      method: 'GET',
      url: '/contacts',
      headers: withCookie(session),
    });
    expect(idle.status).toBe(401);
    expect(idle.body.error.code).toBe('INVALID_API_KEY');
  });

  it('revoking the key ends its sessions, and only its', async () => {
    const projects = app.app.get(ProjectsService);
    const extra = await projects.createKey(project.id, ApiKeyType.SECRET);
    const doomed = await signIn(extra.apiKey);
    const kept = await signIn(project.secretKey);
    expect(
      (await app.request({ method: 'GET', url: '/contacts', headers: withCookie(doomed) })).status,
    ).toBe(200);
    await projects.revokeKey(extra.key.id);
    const after = await app.request({
      method: 'GET',
      url: '/contacts',
      headers: withCookie(doomed),
    });
    expect(after.status).toBe(401);
    expect(
      (await app.request({ method: 'GET', url: '/contacts', headers: withCookie(kept) })).status,
    ).toBe(200);
  });

  it('a disabled project is 403 PROJECT_DISABLED with the cookie', async () => {
    const other = await app.createProject('Disabled');
    const session = await signIn(other.secretKey);
    await app.app.get(ProjectsService).setEnabled(other.id, false);
    const res = await app.request({
      method: 'GET',
      url: '/contacts',
      headers: withCookie(session),
    });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('PROJECT_DISABLED');
  });

  it('wrong keys at POST /session count against the address; a valid key is still let in', async () => {
    const prefix = uniqueName('mwt');
    const limited = await startTestApp(
      testConfig(ctx.db.url, prefix, { AUTH_FAILURE_LIMIT_PER_MINUTE: '3' }),
    );
    try {
      const remoteAddress = '203.0.113.9';
      // Past the limit (more than 3 failures), a wrong key waits.
      for (let i = 0; i < 4; i++) {
        const res = await limited.request({
          method: 'POST',
          url: '/session',
          body: { key: i % 2 ? project.publicKey : 'sk_' + 'w'.repeat(40) },
          remoteAddress,
        });
        expect(res.status).toBe(401);
      }
      const blocked = await limited.request({
        method: 'POST',
        url: '/session',
        body: { key: 'sk_' + 'y'.repeat(40) },
        remoteAddress,
      });
      expect(blocked.status).toBe(429);
      expect(blocked.headers['retry-after']).toBeDefined();
      // The same budget as the API's: a wrong bearer key from that address is refused as well.
      const api = await limited.request({
        method: 'GET',
        url: '/contacts',
        key: 'sk_' + 'z'.repeat(40),
        remoteAddress,
      });
      expect(api.status).toBe(429);
      const valid = await limited.request({
        method: 'POST',
        url: '/session',
        body: { key: project.secretKey },
        remoteAddress,
      });
      expect(valid.status).toBe(200);
    } finally {
      await limited.close();
      await flushPrefix(prefix);
    }
  });

  it('neither the key nor the session id nor the CSRF token is ever in the logs', async () => {
    const session = await signIn(project.secretKey);
    await app.request({ method: 'GET', url: '/session', headers: withCookie(session) });
    await app.request({
      method: 'POST',
      url: '/contacts',
      body: { email: 'logs@example.com' },
      headers: withCookie(session, { 'x-csrf-token': session.csrfToken }),
    });
    await app.request({ method: 'POST', url: '/session', body: { key: project.publicKey } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Something was logged (debug level): the check below can fail.
    expect(logged.some((line) => line.includes('/session'))).toBe(true);
    const all = logged.join('\n');
    expect(all).not.toContain(session.value);
    expect(all).not.toContain(session.csrfToken);
    expect(all).not.toContain(project.secretKey);
    expect(all).not.toContain(project.publicKey);
  });
});
