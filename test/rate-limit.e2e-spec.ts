import { request as httpRequest } from 'node:http';
import { AddressInfo } from 'node:net';
import {
  createTestDatabase,
  flushPrefix,
  startTestApp,
  testConfig,
  TestApp,
  uniqueName,
} from './support/test-app';

describe('rate limiting across processes (e2e)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const prefix = uniqueName('mwt_rl');
  let first: TestApp;
  let second: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    // Two instances on one database and one Redis prefix: two API processes of one deployment.
    first = await startTestApp(testConfig(db.url, prefix, { APP_ROLE: 'api' }));
    second = await startTestApp(testConfig(db.url, prefix, { APP_ROLE: 'api' }));
  });
  afterAll(async () => {
    await first.close();
    await second.close();
    await flushPrefix(prefix);
    await db.drop();
  });

  it('shares one budget of 1000 requests a minute per project; the 1001st gets 429 with Retry-After', async () => {
    const project = await first.createProject('Busy');
    const other = await first.createProject('Quiet');
    const statuses: number[] = [];
    for (let i = 0; i < 1000; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: 50 }, (_, j) =>
          (j % 2 ? second : first).request({
            method: 'GET',
            url: '/project',
            key: project.secretKey,
          }),
        ),
      );
      statuses.push(...batch.map((r) => r.status));
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(1000);

    for (const app of [first, second]) {
      const res = await app.request({ method: 'GET', url: '/project', key: project.secretKey });
      expect(res.status).toBe(429);
      expect(res.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(res.body.error.requestId).toBe(res.headers['x-request-id']);
      const retryAfter = Number(res.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(res.headers['ratelimit-remaining']).toBe('0');
      expect(res.headers['ratelimit-limit']).toBe('1000');
    }

    // Another project's budget is untouched.
    const quiet = await second.request({ method: 'GET', url: '/project', key: other.secretKey });
    expect(quiet.status).toBe(200);
    expect(quiet.headers['ratelimit-remaining']).toBe('999');
  });
});

describe('a refused key is refused again before its body is read (e2e)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const prefix = uniqueName('mwt_rr');
  let app: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp(
      testConfig(db.url, prefix, { APP_ROLE: 'api', API_RATE_LIMIT_PER_MINUTE: '5' }),
    );
  });
  afterAll(async () => {
    await app.close();
    await flushPrefix(prefix);
    await db.drop();
  });

  it('answers the same 429 without parsing the body; other keys and projects still ask the guard', async () => {
    const busy = await app.createProject('Refused');
    const quiet = await app.createProject('Other');
    for (let i = 0; i < 5; i++)
      expect(
        (await app.request({ method: 'GET', url: '/project', key: busy.secretKey })).status,
      ).toBe(200);
    const first = await app.request({ method: 'GET', url: '/project', key: busy.secretKey });
    expect(first.status).toBe(429);

    // Malformed JSON would be a 400 once parsed: a 429 proves nothing read or parsed it.
    const again = await app.request({
      method: 'POST',
      url: '/contacts',
      key: busy.secretKey,
      body: '{"email": ',
    });
    expect(again.status).toBe(429);
    expect(again.body).toMatchObject({
      success: false,
      error: {
        code: 'RATE_LIMIT_EXCEEDED',
        message: first.body.error.message,
        statusCode: 429,
        requestId: again.headers['x-request-id'],
      },
    });
    expect(Number(again.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(again.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(again.headers['ratelimit-limit']).toBe('5');
    expect(again.headers['ratelimit-remaining']).toBe('0');

    // A long body is not read at all: the answer closes the connection (a short one keeps it).
    expect(again.headers.connection).not.toBe('close');
    const long = await app.request({
      method: 'POST',
      url: '/contacts',
      key: busy.secretKey,
      body: `{"email": "${'x'.repeat(70_000)}`,
    });
    expect(long.status).toBe(429);
    expect(long.headers.connection).toBe('close');
    expect(long.body.error.code).toBe('RATE_LIMIT_EXCEEDED');

    // Over a real socket, a client announcing 1 MB reads its 429 before sending any of it.
    await app.app.listen(0, '127.0.0.1');
    const { port } = app.app.getHttpServer().address() as AddressInfo;
    const overSocket = await new Promise<{ status?: number; connection?: string }>(
      (resolve, reject) => {
        const req = httpRequest(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/contacts',
            headers: {
              authorization: `Bearer ${busy.secretKey}`,
              'content-type': 'application/json',
              'content-length': String(1_000_000),
            },
          },
          (res) => {
            res.resume();
            resolve({ status: res.statusCode, connection: res.headers.connection });
          },
        );
        req.on('error', reject);
        // The headers only: the answer must come without the body (and, nothing unread left on
        // the server's side, the close is a clean one).
        req.flushHeaders();
      },
    );
    expect(overSocket).toEqual({ status: 429, connection: 'close' });

    // Over a socket, the repeat is answered by the server's listener, before Fastify: the same
    // envelope and headers (security headers included), counted in the metrics.
    const earlyCount = async () =>
      Number(
        /^mailwright_http_early_refusals_total (\d+)/m.exec(
          (await app.request({ method: 'GET', url: '/metrics' })).raw,
        )?.[1] ?? 'NaN',
      );
    const viaSocket = async (headers: Record<string, string> = {}) => {
      const res = await fetch(`http://127.0.0.1:${port}/contacts`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${busy.secretKey}`,
          'content-type': 'application/json',
          ...headers,
        },
        body: '{"email": ',
      });
      return {
        status: res.status,
        headers: Object.fromEntries(res.headers),
        body: (await res.json()) as Record<string, any>, // eslint-disable-line @typescript-eslint/no-explicit-any
      };
    };
    const before = await earlyCount();
    const early = await viaSocket();
    expect(await earlyCount()).toBe(before + 1);
    expect(early.status).toBe(429);
    expect(early.body).toMatchObject({
      success: false,
      error: { code: 'RATE_LIMIT_EXCEEDED', message: first.body.error.message, statusCode: 429 },
    });
    expect(early.body.error.requestId).toBe(early.headers['x-request-id']);
    expect(early.body.error.requestId).not.toBe(again.headers['x-request-id']);
    for (const name of ['retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'])
      expect([name, early.headers[name]]).toEqual([
        name,
        again.headers[name] ?? expect.any(String),
      ]);
    // Every header the Fastify-level refusal had (helmet's among them) is on the early one.
    for (const name of Object.keys(again.headers).filter(
      (n) => !['date', 'content-length'].includes(n),
    ))
      expect([name, name in early.headers]).toEqual([name, true]);
    expect(early.headers['x-content-type-options']).toBe('nosniff');
    // A browser's request (Origin) goes through Fastify, which adds the CORS headers: not counted.
    const browser = await viaSocket({ origin: 'https://app.example' });
    expect(browser.status).toBe(429);
    expect(await earlyCount()).toBe(before + 1);

    // A malformed body from a key that is not refused is still the 400 it always was.
    const other = await app.request({
      method: 'POST',
      url: '/contacts',
      key: quiet.secretKey,
      body: '{"email": ',
    });
    expect(other.status).toBe(400);
    // A wrong key is never served from another key's refusal.
    const wrong = await app.request({
      method: 'GET',
      url: '/project',
      key: 'sk_' + 'x'.repeat(40),
    });
    expect(wrong.status).toBe(401);
  });
});

describe('failed authentication is limited per client IP (e2e)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const prefix = uniqueName('mwt_af');
  let app: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp(testConfig(db.url, prefix, { AUTH_FAILURE_LIMIT_PER_MINUTE: '5' }));
  });
  afterAll(async () => {
    await app.close();
    await flushPrefix(prefix);
    await db.drop();
  });

  it('answers 429 to a wrong key once an address has failed more than the limit, but never to a valid key', async () => {
    const project = await app.createProject('Target');
    for (let i = 0; i < 6; i++) {
      const res = await app.request({
        method: 'GET',
        url: '/project',
        key: `sk_guess${String(i).padStart(20, '0')}`,
      });
      expect(res.status).toBe(401);
    }
    const blocked = await app.request({
      method: 'GET',
      url: '/project',
      key: 'sk_guessguessguessguessguess',
    });
    expect(blocked.status).toBe(429);
    expect(blocked.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    const missing = await app.request({ method: 'GET', url: '/project' });
    expect(missing.status).toBe(429);
    // Clients behind one proxy address share its failures; a tenant with a valid key is not locked out by them.
    const valid = await app.request({ method: 'GET', url: '/project', key: project.secretKey });
    expect(valid.status).toBe(200);
  });
});
