import { freePort } from './support/processes';
import {
  appsOnOneDatabase,
  createTestDatabase,
  flushPrefix,
  startTestApp,
  testConfig,
  TestApp,
  uniqueName,
} from './support/test-app';

type Db = Awaited<ReturnType<typeof createTestDatabase>>;

/** Eight wrong keys from what the server takes to be one client; answers the last status. */
async function failEight(
  app: TestApp,
  headers: (i: number) => Record<string, string>,
  remoteAddress?: string,
): Promise<number> {
  let status = 0;
  for (let i = 0; i < 8; i++) {
    const res = await app.request({
      method: 'GET',
      url: '/project',
      key: `sk_guess${String(i).padStart(24, '0')}`,
      headers: headers(i),
      remoteAddress,
    });
    status = res.status;
  }
  return status;
}

describe('TRUST_PROXY: which X-Forwarded-For entry is the client (e2e)', () => {
  const apps = appsOnOneDatabase('mwt_tp');
  beforeAll(() => apps.open());
  afterAll(() => apps.close());
  const start = (trustProxy: string): Promise<TestApp> =>
    apps.start({ TRUST_PROXY: trustProxy, AUTH_FAILURE_LIMIT_PER_MINUTE: '5' });

  it.each(['true', '1', '127.0.0.1', '127.0.0.0/8,10.0.0.0/8'])(
    'TRUST_PROXY=%s: a client cannot pick its own address by writing entries to the left',
    async (trust) => {
      const app = await start(trust);
      // The proxy (127.0.0.1, the socket peer) appends the address it saw; the client forged the rest.
      const status = await failEight(app, (i) => ({
        'x-forwarded-for': `198.51.100.${i}, 203.0.113.7`,
      }));
      expect(status).toBe(429);
      // Another client behind the same proxy is not locked out by the first one's failures.
      const other = await app.request({
        method: 'GET',
        url: '/project',
        key: 'sk_guessguessguessguessguessgu',
        headers: { 'x-forwarded-for': '203.0.113.8' },
      });
      expect(other.status).toBe(401);
    },
  );

  it('TRUST_PROXY=2: the client is the second entry from the right', async () => {
    const app = await start('2');
    const status = await failEight(app, (i) => ({
      'x-forwarded-for': `198.51.100.${i}, 203.0.113.9, 10.0.0.2`,
    }));
    expect(status).toBe(429);
    const other = await app.request({
      method: 'GET',
      url: '/project',
      key: 'sk_guessguessguessguessguessgu',
      headers: { 'x-forwarded-for': '198.51.100.1, 203.0.113.10, 10.0.0.2' },
    });
    expect(other.status).toBe(401);
  });

  it('a listed proxy is trusted, an unlisted peer is the client whatever it forwards', async () => {
    const app = await start('10.1.2.3');
    // From 127.0.0.1 (not a listed proxy) the header is ignored: every request is 127.0.0.1's.
    const status = await failEight(app, (i) => ({ 'x-forwarded-for': `198.51.100.${i}` }));
    expect(status).toBe(429);
    // Through the listed proxy, the forwarded address counts.
    const viaProxy = await app.request({
      method: 'GET',
      url: '/project',
      key: 'sk_guessguessguessguessguessgu',
      headers: { 'x-forwarded-for': '203.0.113.11' },
      remoteAddress: '10.1.2.3',
    });
    expect(viaProxy.status).toBe(401);
  });

  it('TRUST_PROXY=false: the socket address is the client', async () => {
    const app = await start('false');
    const status = await failEight(app, (i) => ({ 'x-forwarded-for': `198.51.100.${i}` }));
    expect(status).toBe(429);
  });
});

describe('public keys: their own budget, no resubscribing (e2e)', () => {
  let db: Db;
  const prefix = uniqueName('mwt_pk');
  let app: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp(
      testConfig(db.url, prefix, {
        API_RATE_LIMIT_PER_MINUTE: '6',
        PUBLIC_RATE_LIMIT_PER_MINUTE: '4',
      }),
    );
  });
  afterAll(async () => {
    await app.close();
    await flushPrefix(prefix);
    await db.drop();
  });

  it('pk_ tracks spend PUBLIC_RATE_LIMIT_PER_MINUTE, leaving the secret keys their budget', async () => {
    const project = await app.createProject('Budgets');
    const tracks: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await app.request({
        method: 'POST',
        url: '/v1/track',
        key: project.publicKey,
        body: { email: `visitor${i}@example.org`, event: 'page' },
      });
      tracks.push(res.status);
    }
    expect(tracks).toEqual([200, 200, 200, 200, 429]);
    for (let i = 0; i < 6; i++) {
      const res = await app.request({ method: 'GET', url: '/project', key: project.secretKey });
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-limit']).toBe('6');
    }
    const over = await app.request({ method: 'GET', url: '/project', key: project.secretKey });
    expect(over.status).toBe(429);
  });

  it('pk_ with subscribed:true creates subscribed contacts but never resubscribes one', async () => {
    const project = await app.createProject('Consent');
    const created = await app.request({
      method: 'POST',
      url: '/contacts',
      key: project.secretKey,
      body: { email: 'left@example.org', subscribed: false },
    });
    expect(created.status).toBe(201);

    const viaPublic = await app.request({
      method: 'POST',
      url: '/v1/track',
      key: project.publicKey,
      body: { email: 'left@example.org', event: 'signup', subscribed: true },
    });
    expect(viaPublic.status).toBe(200);
    const after = await app.request({
      method: 'GET',
      url: `/contacts/${created.body.data.id}`,
      key: project.secretKey,
    });
    expect(after.body.data.subscribed).toBe(false);
    const events = await app.request({
      method: 'GET',
      url: `/events?contactId=${created.body.data.id}`,
      key: project.secretKey,
    });
    expect(events.body.data.items.map((e: { name: string }) => e.name)).not.toContain(
      'contact.subscribed',
    );

    const fresh = await app.request({
      method: 'POST',
      url: '/v1/track',
      key: project.publicKey,
      body: { email: 'new@example.org', event: 'signup', subscribed: true },
    });
    expect(fresh.status).toBe(200);
    const newContact = await app.request({
      method: 'GET',
      url: `/contacts/${fresh.body.data.contact}`,
      key: project.secretKey,
    });
    expect(newContact.body.data.subscribed).toBe(true);

    // The secret key still may resubscribe (the server acts on the contact's word).
    const viaSecret = await app.request({
      method: 'POST',
      url: '/v1/track',
      key: project.secretKey,
      body: { email: 'left@example.org', event: 'resubscribed', subscribed: true },
    });
    expect(viaSecret.status).toBe(200);
    const back = await app.request({
      method: 'GET',
      url: `/contacts/${created.body.data.id}`,
      key: project.secretKey,
    });
    expect(back.body.data.subscribed).toBe(true);
  });
});

describe('operator tokens: 10 wrong guesses a minute per address (e2e)', () => {
  const METRICS_TOKEN = 'metrics-token-0123456789';
  const ADMIN_TOKEN = 'admin-token-0123456789ab';
  let db: Db;
  const prefix = uniqueName('mwt_tok');
  let app: TestApp;
  let worker: TestApp;
  let workerUrl: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp(
      testConfig(db.url, prefix, { METRICS_TOKEN, ADMIN_TOKEN, APP_ROLE: 'api' }),
    );
    const port = await freePort();
    worker = await startTestApp(
      testConfig(db.url, `${prefix}_w`, {
        APP_ROLE: 'worker',
        WORKER_METRICS_PORT: String(port),
        METRICS_TOKEN,
        HOST: '127.0.0.1',
      }),
    );
    workerUrl = `http://127.0.0.1:${port}/metrics`;
  });
  afterAll(async () => {
    await app.close();
    await worker.close();
    await flushPrefix(prefix);
    await flushPrefix(`${prefix}_w`);
    await db.drop();
  });

  it('GET /metrics: the 11th wrong token is 429, and the address then waits whatever it sends', async () => {
    for (let i = 0; i < 10; i++) {
      const res = await app.request({
        method: 'GET',
        url: '/metrics',
        key: `wrong-${i}`,
        remoteAddress: '192.0.2.1',
      });
      expect(res.status).toBe(401);
    }
    const over = await app.request({
      method: 'GET',
      url: '/metrics',
      key: 'wrong-again',
      remoteAddress: '192.0.2.1',
    });
    expect(over.status).toBe(429);
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    const right = await app.request({
      method: 'GET',
      url: '/metrics',
      key: METRICS_TOKEN,
      remoteAddress: '192.0.2.1',
    });
    expect(right.status).toBe(429);
    // Another address is not affected.
    const elsewhere = await app.request({
      method: 'GET',
      url: '/metrics',
      key: METRICS_TOKEN,
      remoteAddress: '192.0.2.2',
    });
    expect(elsewhere.status).toBe(200);
  });

  it("a worker's metrics server limits wrong tokens the same way", async () => {
    for (let i = 0; i < 10; i++) {
      expect(
        (await fetch(workerUrl, { headers: { authorization: `Bearer wrong-${i}` } })).status,
      ).toBe(401);
    }
    expect(
      (await fetch(workerUrl, { headers: { authorization: 'Bearer wrong-again' } })).status,
    ).toBe(429);
  });

  it('POST /admin/login and bearer tokens on /admin/queues: the 11th wrong token is 429', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    for (let i = 0; i < 5; i++) {
      const res = await app.request({
        method: 'POST',
        url: '/admin/login',
        body: `token=wrong${i}`,
        headers: form,
        remoteAddress: '192.0.2.3',
      });
      expect(res.status).toBe(401);
    }
    for (let i = 0; i < 5; i++) {
      const res = await app.request({
        method: 'GET',
        url: '/admin/queues/api/queues',
        key: `wrong${i}`,
        remoteAddress: '192.0.2.3',
      });
      expect(res.status).toBe(401);
    }
    const over = await app.request({
      method: 'POST',
      url: '/admin/login',
      body: `token=${ADMIN_TOKEN}`,
      headers: form,
      remoteAddress: '192.0.2.3',
    });
    expect(over.status).toBe(429);
    expect(over.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    const elsewhere = await app.request({
      method: 'POST',
      url: '/admin/login',
      body: `token=${ADMIN_TOKEN}`,
      headers: form,
      remoteAddress: '192.0.2.4',
    });
    expect(elsewhere.status).toBe(303);
  });
});
