import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { PinoNestLogger } from '../src/common/logging/logger';
import { HttpReceiver, ReceivedRequest, startHttpReceiver } from './support/http-receiver';
import { setupTestApp, TestApp, TestProject } from './support/test-app';

/**
 * Workflow WEBHOOK calls are signed like outbound webhooks (Standard Webhooks)
 * with the workflow's own secret: shown in the create and rotate answers only,
 * checked here by the reference verifier against a real HTTP receiver.
 */
describe('workflow WEBHOOK signing (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let project: TestProject;
  let receiver: HttpReceiver;
  const logged: string[] = [];
  const req = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
    app.request({ method, url, key: project.secretKey, body });

  /** Starts one execution and answers the request its WEBHOOK step made. */
  async function call(workflowId: string, email: string): Promise<ReceivedRequest> {
    const before = receiver.requests.length;
    expect(
      (await req('POST', `/workflows/${workflowId}/executions`, { email, data: { plan: 'pro' } }))
        .status,
    ).toBe(202);
    return (await receiver.waitFor(before + 1))[before];
  }

  const verify = (secret: string, request: ReceivedRequest) =>
    new Webhook(secret).verify(request.body, {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature']),
    });

  beforeAll(async () => {
    ctx = await setupTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    app = ctx.app;
    project = await app.createProject('Workflow signing');
    receiver = await startHttpReceiver();
    // Every line the app logs through Nest's logger, whatever the level, to show no secret reaches it.
    for (const level of ['error', 'warn', 'log', 'debug', 'verbose', 'fatal'] as const) {
      jest.spyOn(PinoNestLogger.prototype, level).mockImplementation((...args: unknown[]) => {
        logged.push(JSON.stringify(args));
      });
    }
  });

  afterAll(async () => {
    jest.restoreAllMocks();
    await receiver?.close();
    await ctx?.close();
  });

  it('signs each call with the secret of the create answer, never shown again; rotate-secret replaces it for the next call', async () => {
    const created = await req('POST', '/workflows', {
      name: 'Signed',
      enabled: true,
      trigger: { type: 'MANUAL' },
      steps: [
        {
          id: 'hook',
          type: 'WEBHOOK',
          url: `${receiver.url}/signed`,
          method: 'POST',
          // A step's own webhook-* headers cannot stand in for the signature.
          headers: { 'x-plan': '{{ plan }}', 'Webhook-Signature': 'v1,forged' },
          body: '{"plan":"{{ plan }}","email":"{{ email }}"}',
        },
      ],
    });
    expect(created.status).toBe(201);
    const { id, secret } = created.body.data as { id: string; secret: string };
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);

    const first = await call(id, 'signed@example.org');
    expect(JSON.parse(first.body)).toEqual({ plan: 'pro', email: 'signed@example.org' });
    expect(first.headers['x-plan']).toBe('pro');
    expect(first.headers['webhook-id']).toMatch(/^wfx_/);
    expect(first.headers['webhook-signature']).not.toContain('forged');
    expect(verify(secret, first)).toEqual({ plan: 'pro', email: 'signed@example.org' });

    // Not in any other answer.
    const answers = [
      await req('GET', `/workflows/${id}`),
      await req('GET', '/workflows'),
      await req('PATCH', `/workflows/${id}`, { description: 'x' }),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.raw).not.toContain(secret);
      expect(answer.raw).not.toContain('"secret"');
    }

    const rotated = await req('POST', `/workflows/${id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.data).toMatchObject({ id, name: 'Signed', enabled: true });
    const fresh = rotated.body.data.secret as string;
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(secret);
    const second = await call(id, 'rotated@example.org');
    expect(verify(fresh, second)).toMatchObject({ email: 'rotated@example.org' });
    expect(() => verify(secret, second)).toThrow();

    const other = await app.createProject('Other');
    const foreign = await app.request({
      method: 'POST',
      url: `/workflows/${id}/rotate-secret`,
      key: other.secretKey,
    });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('WORKFLOW_NOT_FOUND');

    // The secrets are stored sealed, and never logged.
    const [row] = await app.app
      .get(DataSource)
      .query('SELECT secret_sealed FROM workflows WHERE id = $1', [id]);
    expect(row.secret_sealed).not.toContain(fresh.slice(6));
    for (const value of [secret, fresh, secret.slice(6), fresh.slice(6)]) {
      expect(logged.filter((line) => line.includes(value))).toEqual([]);
    }
  });

  it('a workflow from before signing gets a secret at its first call; rotate-secret shows one that verifies', async () => {
    const created = await req('POST', '/workflows', {
      name: 'Older',
      enabled: true,
      trigger: { type: 'MANUAL' },
      steps: [{ id: 'hook', type: 'WEBHOOK', url: `${receiver.url}/older`, method: 'GET' }],
    });
    const id = created.body.data.id as string;
    const db = app.app.get(DataSource);
    // As the migration leaves a workflow that existed before it.
    await db.query('UPDATE workflows SET secret_sealed = NULL WHERE id = $1', [id]);
    const first = await call(id, 'older@example.org');
    expect(first.body).toBe('');
    expect(first.headers['webhook-signature']).toMatch(/^v1,/);
    const [row] = await db.query('SELECT secret_sealed FROM workflows WHERE id = $1', [id]);
    expect(row.secret_sealed).not.toBeNull();
    expect(() => verify(created.body.data.secret as string, first)).toThrow();

    const fresh = (await req('POST', `/workflows/${id}/rotate-secret`)).body.data.secret as string;
    const second = await call(id, 'older2@example.org');
    expect(() => verify(fresh, second)).not.toThrow();
  });
});
