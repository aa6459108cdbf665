import { setupTestApp, TestApp } from './support/test-app';

/**
 * Segment conditions evaluated over a whole project spend the project's budget of such work
 * (EXPENSIVE_WORK_BUDGET_MS, refilled each minute): a project that spent it is answered 429
 * until it is repaid, and other projects are not affected.
 */
describe('expensive work budget (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;

  // One millisecond: the first evaluation is let through and spends more than the whole budget.
  beforeAll(async () => {
    ctx = await setupTestApp({ EXPENSIVE_WORK_BUDGET_MS: '1' });
    app = ctx.app;
  });
  afterAll(() => ctx.close());

  const condition = {
    logic: 'OR',
    conditions: [
      { field: 'data.plan', operator: 'equals', value: 'pro' },
      { field: 'event.signup', operator: 'triggeredAtLeast', value: { count: 1 } },
    ],
  };

  it('answers 429 with Retry-After once a project spent its budget, and keeps other projects going', async () => {
    const a = await app.createProject('Heavy');
    const b = await app.createProject('Other');
    for (const { secretKey: key } of [a, b]) {
      const contact = await app.request({
        method: 'POST',
        url: '/contacts',
        key,
        body: { email: 'pro@example.org', data: { plan: 'pro' } },
      });
      expect(contact.status).toBe(201);
    }
    const first = await app.request({
      method: 'POST',
      url: '/segments/preview',
      key: a.secretKey,
      body: { condition },
    });
    expect(first.status).toBe(200);
    expect(first.body.data.count).toBe(1);

    const second = await app.request({
      method: 'POST',
      url: '/segments/preview',
      key: a.secretKey,
      body: { condition },
    });
    expect(second.status).toBe(429);
    expect(second.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(Number(second.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(second.body.error.suggestion).toBeTruthy();

    // The other project's budget is its own.
    const other = await app.request({
      method: 'POST',
      url: '/segments/preview',
      key: b.secretKey,
      body: { condition },
    });
    expect(other.status).toBe(200);

    // Saving a segment is never refused for the budget (its count completes a change already made),
    // but reading a stale count of it is.
    const saved = await app.request({
      method: 'POST',
      url: '/segments',
      key: a.secretKey,
      body: { name: 'Pro', condition },
    });
    expect(saved.status).toBe(201);
    expect(saved.body.data.memberCount).toBe(1);
    const members = await app.request({
      method: 'GET',
      url: `/segments/${saved.body.data.id}/contacts`,
      key: a.secretKey,
    });
    expect(members.status).toBe(429);
    // Cheap reads of the same project still answer.
    expect((await app.request({ method: 'GET', url: '/contacts', key: a.secretKey })).status).toBe(
      200,
    );
  });
});
