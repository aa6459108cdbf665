import { setupTestApp, TestApp } from './support/test-app';

/** Names a tenant may not use: internal domains as sending domains, quoted local parts as senders. */
describe('sending domains and sender addresses must be public, plain names (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let key: string;

  beforeAll(async () => {
    ctx = await setupTestApp();
    app = ctx.app;
    key = (await app.createProject('Names')).secretKey;
  });
  afterAll(async () => {
    await ctx.close();
  });

  it.each([
    'corp.internal',
    'mail.svc.cluster.local',
    'printer.local',
    'app.localhost',
    'intranet.corp',
    'single',
  ])('refuses %s as a sending domain (422, no records returned)', async (domain) => {
    const res = await app.request({ method: 'POST', url: '/domains', key, body: { domain } });
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0].field).toBe('domain');
    expect(JSON.stringify(res.body)).not.toContain('TXT');
  });

  it('accepts a public name and the documentation suffixes', async () => {
    for (const domain of ['news.example.com', 'mail.acme.test']) {
      const res = await app.request({ method: 'POST', url: '/domains', key, body: { domain } });
      expect(res.status).toBe(201);
    }
  });

  it('refuses quoted local parts wherever a sender is given; recipients may still have them', async () => {
    const quoted = '"ceo@bank.example"@acme.test';
    const refusals = [
      {
        method: 'POST' as const,
        url: '/templates',
        body: { name: 'T', subject: 'S', body: 'B', type: 'TRANSACTIONAL', from: quoted },
      },
      {
        method: 'POST' as const,
        url: '/campaigns',
        body: { name: 'C', subject: 'S', body: 'B', from: quoted, audienceType: 'ALL' },
      },
      {
        method: 'POST' as const,
        url: '/v1/send',
        body: { to: 'a@example.com', subject: 'S', body: 'B', from: quoted },
      },
      {
        method: 'POST' as const,
        url: '/v1/send',
        body: { to: 'a@example.com', subject: 'S', body: 'B', from: { email: quoted } },
      },
      { method: 'PATCH' as const, url: '/project', body: { defaultFrom: { email: quoted } } },
    ];
    for (const options of refusals) {
      const res = await app.request({ ...options, key });
      expect({ url: options.url, status: res.status, code: res.body.error?.code }).toEqual({
        url: options.url,
        status: 422,
        code: 'VALIDATION_ERROR',
      });
      expect(res.body.error.errors[0].field).toMatch(/^(from|defaultFrom)/);
    }
    const plain = await app.request({
      method: 'POST',
      url: '/templates',
      key,
      body: {
        name: 'T',
        subject: 'S',
        body: 'B',
        type: 'TRANSACTIONAL',
        from: "o'brien+news@acme.test",
      },
    });
    expect(plain.status).toBe(201);
    const toQuoted = await app.request({
      method: 'POST',
      url: '/v1/send',
      key,
      body: { to: '"a b"@example.com', subject: 'S', body: 'B', from: 'news@acme.test' },
    });
    expect(toQuoted.status).toBe(200);
  });
});
