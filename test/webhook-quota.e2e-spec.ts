import { setupTestApp, TestApp } from './support/test-app';

/** Each endpoint multiplies every event into a delivery row: a project may have MAX_WEBHOOK_ENDPOINTS. */
describe('webhook endpoints per project are limited (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;

  beforeAll(async () => {
    ctx = await setupTestApp({ MAX_WEBHOOK_ENDPOINTS: '3' });
    app = ctx.app;
  });
  afterAll(async () => {
    await ctx.close();
  });

  const create = (key: string, i: number) =>
    app.request({
      method: 'POST',
      url: '/webhooks',
      key,
      body: { url: `https://hooks.example.com/${i}`, events: ['*'] },
    });

  it('answers 409 naming the limit for one more, also for concurrent creates; other projects are unaffected', async () => {
    const a = (await app.createProject('Many hooks')).secretKey;
    const b = (await app.createProject('Other')).secretKey;
    const statuses = (await Promise.all(Array.from({ length: 6 }, (_, i) => create(a, i)))).map(
      (r) => r.status,
    );
    expect(statuses.filter((s) => s === 201)).toHaveLength(3);
    expect(statuses.filter((s) => s === 409)).toHaveLength(3);
    const refused = await create(a, 99);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('CONFLICT');
    expect(refused.body.error.message).toMatch(/at most 3 webhook endpoints/);
    expect(
      (await app.request({ method: 'GET', url: '/webhooks', key: a })).body.data.items,
    ).toHaveLength(3);

    expect((await create(b, 1)).status).toBe(201);
    // Deleting one frees a place.
    const first = (await app.request({ method: 'GET', url: '/webhooks', key: a })).body.data
      .items[0].id;
    expect(
      (await app.request({ method: 'DELETE', url: `/webhooks/${first}`, key: a })).status,
    ).toBe(200);
    expect((await create(a, 100)).status).toBe(201);
  });
});
