import { setupTestApp, TestApp } from './support/test-app';
import { QUEUES } from '../src/queue/queue.constants';

/** The queue dashboard (Bull Board): off without ADMIN_TOKEN; behind it (bearer or login session) with it. */
const TOKEN = 'admin-token-0123456789abcdef';

describe('queue dashboard (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;

  beforeAll(async () => {
    ctx = await setupTestApp({ ADMIN_TOKEN: TOKEN });
    app = ctx.app;
  });

  afterAll(async () => {
    await ctx?.close();
  });

  it('is off when ADMIN_TOKEN is not set', async () => {
    const off = await setupTestApp();
    try {
      expect((await off.app.request({ method: 'GET', url: '/admin/queues' })).status).toBe(404);
      expect((await off.app.request({ method: 'GET', url: '/admin/login' })).status).toBe(404);
    } finally {
      await off.close();
    }
  });

  it('refuses without the token: 401 for API clients, the login form for browsers', async () => {
    const api = await app.request({ method: 'GET', url: '/admin/queues/api/queues' });
    expect(api.status).toBe(401);
    expect(api.body.error.code).toBe('MISSING_API_KEY');
    const wrong = await app.request({
      method: 'GET',
      url: '/admin/queues/api/queues',
      headers: { authorization: `Bearer ${TOKEN}x` },
    });
    expect(wrong.status).toBe(401);
    const browser = await app.request({
      method: 'GET',
      url: '/admin/queues',
      headers: { accept: 'text/html' },
    });
    expect(browser.status).toBe(303);
    expect(browser.headers.location).toBe('/admin/login');
    const form = await app.request({ method: 'GET', url: '/admin/login' });
    expect(form.status).toBe(200);
    expect(form.raw).toContain('<form method="post" action="/admin/login">');
  });

  it('shows every queue with the bearer token', async () => {
    const page = await app.request({
      method: 'GET',
      url: '/admin/queues',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    const queues = await app.request({
      method: 'GET',
      url: '/admin/queues/api/queues',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(queues.status).toBe(200);
    const names = (queues.body.queues as Array<{ name: string }>).map((q) => q.name).sort();
    expect(names).toEqual(Object.values(QUEUES).sort());
    expect(names).toEqual(
      expect.arrayContaining(['campaigns', 'delivery', 'segments', 'webhooks', 'workflows']),
    );
  });

  it('signs a browser in with the login form (HttpOnly session cookie); a wrong token or a forged cookie is refused', async () => {
    const bad = await app.request({
      method: 'POST',
      url: '/admin/login',
      body: 'token=nope',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(bad.status).toBe(401);
    expect(bad.raw).toContain('not the admin token');
    expect(bad.headers['set-cookie']).toBeUndefined();
    const good = await app.request({
      method: 'POST',
      url: '/admin/login',
      body: `token=${TOKEN}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(good.status).toBe(303);
    expect(good.headers.location).toBe('/admin/queues');
    const cookie = String(good.headers['set-cookie']);
    expect(cookie).toMatch(
      /^mw_admin=\d{13}\.[A-Za-z0-9_-]{43}; Path=\/admin; HttpOnly; SameSite=Strict; Max-Age=43200$/,
    );
    expect(cookie).not.toContain(TOKEN);
    const session = cookie.split(';')[0];
    expect(
      (
        await app.request({
          method: 'GET',
          url: '/admin/queues/api/queues',
          headers: { cookie: session },
        })
      ).status,
    ).toBe(200);
    const [name, value] = session.split('=');
    const [expires, mac] = value.split('.');
    const forged = `${name}=${Number(expires) + 1000}.${mac}`;
    expect(
      (
        await app.request({
          method: 'GET',
          url: '/admin/queues/api/queues',
          headers: { cookie: forged },
        })
      ).status,
    ).toBe(401);
  });
});
