import { ApiKeyType } from '../src/common/auth/api-key.crypto';
import { ExpensiveWork } from '../src/common/rate-limit/expensive-work';
import { ProjectsService } from '../src/projects/projects.service';
import { createRedis } from '../src/queue/redis';
import { setupTestApp, TEST_REDIS_URL, TestApp } from './support/test-app';

/** Runs to the render deadline whatever the deadline is. */
const SLOW = '{% assign a = (1..3000000) %}{{ a | where_exp: "i", "i > 0" | size }}';

/**
 * Renders asked for by API requests spend their project's budget of expensive work (the one of
 * segment evaluation, EXPENSIVE_WORK_BUDGET_MS) with their thread time beyond a small free
 * allowance: a project whose slow templates spent it is answered 429 before its next render until
 * the budget refills, while other projects render as usual.
 */
describe('render time spends the expensive-work budget (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;

  // One slow render (to the 600 ms deadline) spends more than the whole 300 ms budget.
  beforeAll(async () => {
    ctx = await setupTestApp({ EXPENSIVE_WORK_BUDGET_MS: '300', RENDER_TIMEOUT_MS: '600' });
    app = ctx.app;
  });
  afterAll(() => ctx.close());

  const template = (key: string, body: string) =>
    app.request({
      method: 'POST',
      url: '/templates',
      key,
      body: { name: 'T', subject: 'Hi {{ email }}', body, type: 'TRANSACTIONAL' },
    });
  const preview = (key: string, id: string) =>
    app.request({ method: 'POST', url: `/templates/${id}/preview`, key, body: {} });

  it('answers 429 with Retry-After once slow renders spent the budget, other projects go on, and the budget refills', async () => {
    const a = await app.createProject('Slow templates');
    const b = await app.createProject('Bystander');
    const ordinaryA = await template(a.secretKey, '<p>Hello {{ email }}</p>');
    expect(ordinaryA.status).toBe(201);
    const ordinaryB = await template(b.secretKey, '<p>Hi {{ email }}</p>');
    expect(ordinaryB.status).toBe(201);
    // Ordinary renders are within the free allowance: many of them spend nothing.
    for (let i = 0; i < 5; i++)
      expect((await preview(a.secretKey, ordinaryA.body.data.id)).status).toBe(200);

    // Let through (the budget is not spent yet), stopped at the deadline, charged.
    const slow = await template(a.secretKey, SLOW);
    expect(slow.status).toBe(422);
    expect(slow.body.error.errors[0].message).toMatch(/took longer than 600 ms/);

    for (const refused of [
      await preview(a.secretKey, ordinaryA.body.data.id),
      await template(a.secretKey, '<p>another</p>'),
    ]) {
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(refused.body.error.message).toMatch(/template rendering/);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(refused.body.error.suggestion).toBeTruthy();
    }
    // Refused before rendering: nothing was saved.
    const list = await app.request({ method: 'GET', url: '/templates', key: a.secretKey });
    expect(list.body.data.total).toBe(1);

    // The other project's budget is its own.
    const other = await preview(b.secretKey, ordinaryB.body.data.id);
    expect(other.status).toBe(200);
    expect(other.body.data.html).toBe('<p>Hi preview@example.com</p>');

    // Ten minutes later (the bucket's last update moved back) the budget has refilled to its cap.
    const redis = createRedis(TEST_REDIS_URL);
    try {
      const key = `${app.config.queuePrefix}:work-budget:${a.id}`;
      const at = Number(await redis.hget(key, 'at'));
      expect(at).toBeGreaterThan(0);
      await redis.hset(key, 'at', String(at - 600_000));
    } finally {
      redis.disconnect();
    }
    // A second key of the project: the first one's 429 is repeated without asking for up to 10 s
    // (recent-refusals.ts), and the budget, not that memory, is what this checks.
    const second = await app.app.get(ProjectsService).createKey(a.id, ApiKeyType.SECRET);
    const again = await preview(second.apiKey, ordinaryA.body.data.id);
    expect(again.status).toBe(200);
    expect(again.body.data.html).toBe('<p>Hello preview@example.com</p>');
  });

  it('charges a body over 102,400 characters all its render time, and an ordinary one nothing', async () => {
    const ordinary = await app.createProject('Ordinary bodies');
    const large = await app.createProject('Large bodies');
    const body = '<p>Hello {{ email }}</p>\n'.repeat(5_000);
    expect(body.length).toBeGreaterThan(102_400);
    expect((await template(ordinary.secretKey, '<p>Hello {{ email }}</p>')).status).toBe(201);
    expect((await template(large.secretKey, body)).status).toBe(201);
    const redis = createRedis(TEST_REDIS_URL);
    try {
      const balance = async (projectId: string) =>
        redis.hget(`${app.config.queuePrefix}:work-budget:${projectId}`, 'balance');
      // Checked before its render, never charged: the whole 300 ms are left.
      expect(Number(await balance(ordinary.id))).toBe(300);
      // Its save-time render (a few milliseconds) was charged in full.
      expect(Number(await balance(large.id))).toBeLessThan(300);
    } finally {
      redis.disconnect();
    }
  });

  it("renders a project whose renders were slow in its turn of expensive work, after its segment evaluation, and nobody else's", async () => {
    const c = await app.createProject('Slow, then busy');
    const b = await app.createProject('Bystander 2');
    const ordinaryC = await template(c.secretKey, '<p>Hello {{ email }}</p>');
    const ordinaryB = await template(b.secretKey, '<p>Hi {{ email }}</p>');
    expect([ordinaryC.status, ordinaryB.status]).toEqual([201, 201]);
    // Before any slow render, C's renders do not wait for its turn.
    const expensive = app.app.get(ExpensiveWork);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let evaluation = expensive.inTurn(c.id, () => held);
    expect((await preview(c.secretKey, ordinaryC.body.data.id)).status).toBe(200);
    release();
    await evaluation;

    expect((await template(c.secretKey, SLOW)).status).toBe(422);
    // The budget refilled (as above), so nothing below is refused for it.
    const redis = createRedis(TEST_REDIS_URL);
    try {
      const key = `${app.config.queuePrefix}:work-budget:${c.id}`;
      await redis.hset(key, 'at', String(Number(await redis.hget(key, 'at')) - 600_000));
    } finally {
      redis.disconnect();
    }

    // C's turn is taken (as by a segment preview; inTurn charges nothing): its render waits for it, B's does not.
    const again = new Promise<void>((resolve) => (release = resolve));
    evaluation = expensive.inTurn(c.id, () => again);
    let cAnswered = false;
    const cPreview = preview(c.secretKey, ordinaryC.body.data.id).then((res) => {
      cAnswered = true;
      return res;
    });
    expect((await preview(b.secretKey, ordinaryB.body.data.id)).status).toBe(200);
    // A render of this template takes a few ms: half a second is long enough to see it wait.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(cAnswered).toBe(false);
    release();
    await evaluation;
    const answered = await cPreview;
    expect(answered.status).toBe(200);
    expect(answered.body.data.html).toBe('<p>Hello preview@example.com</p>');
  });
});
