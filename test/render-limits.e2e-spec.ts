import { setupTestApp, TestApp } from './support/test-app';

/** 80 characters that kept one filter call busy for 15-21 s before renders ran in the bounded pool. */
const SLOW = '{% assign a = (1..3000000) %}{{ a | where_exp: "i", "i > 0" | size }}';

describe('rendering is bounded and off the event loop (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let a: string;
  let b: string;

  beforeAll(async () => {
    ctx = await setupTestApp({ RENDER_TIMEOUT_MS: '1500' });
    app = ctx.app;
    a = (await app.createProject('Heavy')).secretKey;
    b = (await app.createProject('Bystander')).secretKey;
  });
  afterAll(async () => {
    await ctx.close();
  });

  const tookTooLong = (field: string) =>
    expect.objectContaining({
      status: 422,
      body: expect.objectContaining({
        error: expect.objectContaining({
          code: 'VALIDATION_ERROR',
          errors: [
            expect.objectContaining({
              field,
              code: 'invalid_template',
              message: expect.stringMatching(/took longer than 1500 ms/),
            }),
          ],
        }),
      }),
    });

  it('refuses a template that renders past the deadline at save (body or subject), and saves nothing', async () => {
    const body = await app.request({
      method: 'POST',
      url: '/templates',
      key: a,
      body: { name: 'Slow', subject: 'Hi', body: SLOW, type: 'TRANSACTIONAL' },
    });
    expect(body).toEqual(tookTooLong('body'));
    const subject = await app.request({
      method: 'POST',
      url: '/templates',
      key: a,
      body: { name: 'Slow', subject: SLOW, body: 'b', type: 'TRANSACTIONAL' },
    });
    expect(subject).toEqual(tookTooLong('subject'));
    const list = await app.request({ method: 'GET', url: '/templates', key: a });
    expect(list.body.data.items).toHaveLength(0);

    const ok = await app.request({
      method: 'POST',
      url: '/templates',
      key: a,
      body: { name: 'Fine', subject: 'Hi', body: '<p>{{ name }}</p>', type: 'TRANSACTIONAL' },
    });
    expect(ok.status).toBe(201);
    const patched = await app.request({
      method: 'PATCH',
      url: `/templates/${ok.body.data.id}`,
      key: a,
      body: { body: SLOW },
    });
    expect(patched).toEqual(tookTooLong('body'));
  });

  it('refuses a campaign that renders past the deadline at create and at PATCH', async () => {
    const campaign = (extra: Record<string, unknown>) => ({
      name: 'C',
      subject: 'Hi',
      body: '<p>ok</p>',
      from: 'me@heavy.test',
      audienceType: 'ALL',
      ...extra,
    });
    const slow = await app.request({
      method: 'POST',
      url: '/campaigns',
      key: a,
      body: campaign({ body: SLOW }),
    });
    expect(slow).toEqual(tookTooLong('body'));
    const ok = await app.request({ method: 'POST', url: '/campaigns', key: a, body: campaign({}) });
    expect(ok.status).toBe(201);
    const patched = await app.request({
      method: 'PATCH',
      url: `/campaigns/${ok.body.data.id}`,
      key: a,
      body: { subject: SLOW },
    });
    expect(patched).toEqual(tookTooLong('subject'));
  });

  it('answers a send whose body renders past the deadline with 422 and sends nothing', async () => {
    const res = await app.request({
      method: 'POST',
      url: '/v1/send',
      key: a,
      body: { to: 'x@example.org', from: 'me@heavy.test', subject: 'Hi', body: SLOW },
    });
    expect(res).toEqual(tookTooLong('body'));
    const emails = await app.request({ method: 'GET', url: '/emails', key: a });
    expect(emails.body.data.items).toHaveLength(0);
  });

  it('a long body (parsed on a render thread) that does not parse is a 422 naming the error; one that parses is saved', async () => {
    const filler = '<p>Hello {{ contact.email }}</p>\n'.repeat(1_000);
    const broken = `${filler}{% if contact.email %}unclosed`;
    const notLiquid = (field: string) =>
      expect.objectContaining({
        status: 422,
        body: expect.objectContaining({
          error: expect.objectContaining({
            code: 'VALIDATION_ERROR',
            errors: [
              expect.objectContaining({
                field,
                code: 'invalid_template',
                message: expect.stringMatching(/^body is not valid Liquid: .*if.*not closed/),
              }),
            ],
          }),
        }),
      });
    const send = await app.request({
      method: 'POST',
      url: '/v1/send',
      key: b,
      body: { to: 'x@example.org', from: 'me@bystander.test', subject: 'Hi', body: broken },
    });
    expect(send).toEqual(notLiquid('body'));
    const template = await app.request({
      method: 'POST',
      url: '/templates',
      key: b,
      body: { name: 'Long broken', type: 'TRANSACTIONAL', subject: 'Hi', body: broken },
    });
    expect(template).toEqual(notLiquid('body'));
    const saved = await app.request({
      method: 'POST',
      url: '/templates',
      key: b,
      body: { name: 'Long', type: 'TRANSACTIONAL', subject: 'Hi', body: filler },
    });
    expect(saved.status).toBe(201);
    const list = await app.request({ method: 'GET', url: '/templates', key: b });
    expect(list.body.data.items.map((t: { name: string }) => t.name)).toEqual(['Long']);
  });

  it('HTML nested too deep to convert is a 422, not a 500', async () => {
    const res = await app.request({
      method: 'POST',
      url: '/v1/send',
      key: a,
      body: {
        to: 'x@example.org',
        from: 'me@heavy.test',
        subject: 'Hi',
        body: '<ul><li>'.repeat(40_000),
      },
    });
    expect(res.status).toBe(422);
    expect(res.body.error.errors[0]).toMatchObject({ field: 'body', code: 'invalid_template' });
  });

  it("another project's requests are answered while a slow render runs", async () => {
    const order: string[] = [];
    const slow = app
      .request({
        method: 'POST',
        url: '/v1/send',
        key: a,
        body: { to: 'x@example.org', from: 'me@heavy.test', subject: 'Hi', body: SLOW },
      })
      .then((res) => order.push(`slow ${res.status}`));
    // Give the slow render time to start, then ask for something unrelated.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const contacts = await app.request({ method: 'GET', url: '/contacts', key: b });
    order.push(`contacts ${contacts.status}`);
    const sent = await app.request({
      method: 'POST',
      url: '/v1/send',
      key: b,
      body: { to: 'y@example.org', from: 'me@bystander.test', subject: 'Hi', body: '<p>ok</p>' },
    });
    order.push(`send ${sent.status}`);
    await slow;
    expect(order).toEqual(['contacts 200', 'send 200', 'slow 422']);
  });
});
