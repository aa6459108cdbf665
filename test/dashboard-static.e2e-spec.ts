import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../src/create-app';
import {
  createTestDatabase,
  flushPrefix,
  TestApp,
  testConfig,
  uniqueName,
} from './support/test-app';

/**
 * The dashboard's build served under /app/ (contract, "Dashboard"), from a fixture build folder:
 * files as themselves with their caching, deep links answered by index.html, `/` sending a
 * browser there, and an app without a build still booting.
 */
describe('dashboard static serving', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let built: TestApp;
  let unbuilt: TestApp;
  const prefixes = [uniqueName('mwt'), uniqueName('mwt')];
  const webRoot = mkdtempSync(join(tmpdir(), 'mw-web-'));
  const INDEX =
    '<!doctype html><title>Mailwright</title><script type="module" src="/app/assets/index-abc123.js"></script>';

  beforeAll(async () => {
    mkdirSync(join(webRoot, 'assets'));
    writeFileSync(join(webRoot, 'index.html'), INDEX);
    writeFileSync(join(webRoot, 'assets', 'index-abc123.js'), 'console.log("app");');
    writeFileSync(join(webRoot, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    db = await createTestDatabase();
    const config = testConfig(db.url, prefixes[0]);
    built = new TestApp(await createApp(config, { webRoot }), config);
    const bare = testConfig(db.url, prefixes[1]);
    unbuilt = new TestApp(await createApp(bare, { webRoot: join(webRoot, 'missing') }), bare);
  }, 60_000);

  afterAll(async () => {
    await built?.close();
    await unbuilt?.close();
    for (const prefix of prefixes) await flushPrefix(prefix);
    await db?.drop();
    rmSync(webRoot, { recursive: true, force: true });
  });

  it('/app/ answers index.html, not cached, with a policy that lets the app run and never be framed', async () => {
    const res = await built.request({ method: 'GET', url: '/app/' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.raw).toBe(INDEX);
    expect(res.headers['cache-control']).toBe('no-cache');
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/script-src[^;]*unsafe-inline/);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it('hashed assets are served as themselves with a long cache', async () => {
    const res = await built.request({ method: 'GET', url: '/app/assets/index-abc123.js' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/javascript/);
    expect(res.raw).toBe('console.log("app");');
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const icon = await built.request({ method: 'GET', url: '/app/favicon.svg' });
    expect(icon.status).toBe(200);
    expect(icon.headers['content-type']).toMatch(/^image\/svg\+xml/);
    expect(icon.headers['cache-control']).toBe('no-cache');
  });

  it('a deep link under /app/ answers the app page; /app redirects to /app/', async () => {
    for (const url of ['/app/contacts', '/app/campaigns/0190-abc/edit?tab=stats', '/app/index']) {
      const res = await built.request({ method: 'GET', url });
      expect(res.status).toBe(200);
      expect(res.raw).toBe(INDEX);
      expect(res.headers['cache-control']).toBe('no-cache');
    }
    const bare = await built.request({ method: 'GET', url: '/app' });
    expect(bare.status).toBe(301);
    expect(bare.headers.location).toBe('/app/');
  });

  it('GET / sends a browser to /app/; other clients get what they got before', async () => {
    const browser = await built.request({
      method: 'GET',
      url: '/',
      headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
    });
    expect(browser.status).toBe(302);
    expect(browser.headers.location).toBe('/app/');
    const api = await built.request({
      method: 'GET',
      url: '/',
      headers: { accept: 'application/json' },
    });
    expect(api.status).toBe(404);
    expect(api.body.error.code).toBe('ROUTE_NOT_FOUND');
  });

  it('the API paths are unchanged', async () => {
    const res = await built.request({ method: 'GET', url: '/contacts' });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('MISSING_API_KEY');
    const health = await built.request({ method: 'GET', url: '/health/live' });
    expect(health.status).toBe(200);
  });

  it('without a build, /app/ says the dashboard was not built, and the API runs', async () => {
    for (const url of ['/app/', '/app/contacts']) {
      const res = await unbuilt.request({ method: 'GET', url });
      expect(res.status).toBe(404);
      expect(res.raw).toMatch(/dashboard was not built/);
    }
    const health = await unbuilt.request({ method: 'GET', url: '/health/live' });
    expect(health.status).toBe(200);
  });
});
