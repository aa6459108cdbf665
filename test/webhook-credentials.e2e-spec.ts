import { DataSource } from 'typeorm';
import * as logging from '../src/common/logging/logger';
import { PinoNestLogger } from '../src/common/logging/logger';
import { HttpReceiver, ReceivedRequest, startHttpReceiver } from './support/http-receiver';
import { setupTestApp, TestApp, TestProject } from './support/test-app';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Credentials of outbound calls (contract, "Tenant safety and limits"): an
 * endpoint URL's `user:pass@` and a workflow WEBHOOK step's header values and
 * URL credentials are sealed at rest (the row holds none in the clear), shown
 * as `***` in every answer, and still sent to the receiver; a `***` sent
 * back keeps the stored value. Real HTTP receiver on loopback.
 */
describe('webhook credentials sealed and masked (e2e)', () => {
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let db: DataSource;
  let project: TestProject;
  let receiver: HttpReceiver;
  const logged: string[] = [];
  const USER = 'alice-user';
  const PASSWORD = 'pw-Zq81x';
  const TOKEN = 'tok-9f27c1d4e5';
  const req = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
    app.request({ method, url, key: project.secretKey, body });
  /** The receiver's URL with credentials in it. */
  const withCredentials = (path: string, user = USER, password = PASSWORD) =>
    `${receiver.url.replace('http://', `http://${user}:${password}@`)}${path}`;
  const basic = (user: string, password: string) =>
    `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  const clearValues = [USER, PASSWORD, TOKEN];
  const expectNoCredential = (text: string) => {
    for (const value of clearValues) expect(text).not.toContain(value);
  };
  /** A webhook.test delivery to the endpoint, as the receiver got it. */
  async function testDelivery(endpointId: string): Promise<ReceivedRequest> {
    const before = receiver.requests.length;
    expect((await req('POST', `/webhooks/${endpointId}/test`)).status).toBe(202);
    return (await receiver.waitFor(before + 1))[before];
  }

  beforeAll(async () => {
    // Every line the app's pino logger writes (request logs, debug lines), at debug level.
    const createRootLogger = logging.createRootLogger;
    jest
      .spyOn(logging, 'createRootLogger')
      .mockImplementation((config) =>
        createRootLogger(config, { write: (line: string) => void logged.push(line) }),
      );
    ctx = await setupTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true', LOG_LEVEL: 'debug' });
    app = ctx.app;
    db = app.app.get(DataSource);
    project = await app.createProject('Credentials');
    receiver = await startHttpReceiver();
    for (const level of ['error', 'warn', 'log', 'debug', 'verbose', 'fatal'] as const) {
      jest.spyOn(PinoNestLogger.prototype, level).mockImplementation((...args: unknown[]) => {
        logged.push(JSON.stringify(args));
      });
    }
  }, 60_000);

  afterAll(async () => {
    jest.restoreAllMocks();
    await receiver?.close();
    await ctx?.close();
  });

  it('an endpoint URL with credentials: sealed in its row, *** in every answer, sent to the receiver; *** in a PATCH keeps them on the same origin only', async () => {
    const created = await req('POST', '/webhooks', {
      url: withCredentials('/hook'),
      events: ['email.*'],
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    const masked = `http://***@127.0.0.1:${receiver.port}/hook`;
    expect(created.body.data.url).toBe(masked);
    expectNoCredential(created.raw);

    const [row] = await db.query(
      `SELECT row_to_json(w)::text AS row FROM webhook_endpoints w WHERE id = $1`,
      [id],
    );
    expectNoCredential(row.row);
    expect(JSON.parse(row.row)).toMatchObject({ url: masked, url_sealed: expect.any(String) });

    const first = await testDelivery(id);
    expect(first.path).toBe('/hook');
    expect(first.headers.authorization).toBe(basic(USER, PASSWORD));

    const answers = [
      await req('GET', `/webhooks/${id}`),
      await req('GET', '/webhooks'),
      await req('PATCH', `/webhooks/${id}`, { description: 'kept' }),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.raw).toContain(masked);
      expectNoCredential(answer.raw);
    }

    // The masked URL sent back (a new path): the stored credentials stay.
    const moved = await req('PATCH', `/webhooks/${id}`, {
      url: `http://***@127.0.0.1:${receiver.port}/moved`,
    });
    expect(moved.status).toBe(200);
    expect(moved.body.data.url).toBe(`http://***@127.0.0.1:${receiver.port}/moved`);
    const second = await testDelivery(id);
    expect(second.path).toBe('/moved');
    expect(second.headers.authorization).toBe(basic(USER, PASSWORD));

    // Never carried to another origin: 422, nothing changed.
    const elsewhere = await req('PATCH', `/webhooks/${id}`, {
      url: `http://***@localhost:${receiver.port}/moved`,
    });
    expect(elsewhere.status).toBe(422);
    expect(elsewhere.body.error.errors[0]).toMatchObject({ field: 'url', code: 'custom' });
    expect((await testDelivery(id)).headers.authorization).toBe(basic(USER, PASSWORD));

    // New credentials replace them; a URL without credentials drops them.
    expect(
      (await req('PATCH', `/webhooks/${id}`, { url: withCredentials('/new', 'bob', 'other-pw') }))
        .status,
    ).toBe(200);
    expect((await testDelivery(id)).headers.authorization).toBe(basic('bob', 'other-pw'));
    expect((await req('PATCH', `/webhooks/${id}`, { url: `${receiver.url}/plain` })).status).toBe(
      200,
    );
    const plain = await testDelivery(id);
    expect(plain.headers.authorization).toBeUndefined();
    const [after] = await db.query(
      `SELECT url, url_sealed AS "urlSealed" FROM webhook_endpoints WHERE id = $1`,
      [id],
    );
    expect(after).toEqual({ url: `${receiver.url}/plain`, urlSealed: null });
    await req('DELETE', `/webhooks/${id}`);
  });

  it('an endpoint saved before sealing (clear credentials in its row) is masked in answers and still delivered with them', async () => {
    const created = await req('POST', '/webhooks', { url: `${receiver.url}/old`, events: ['*'] });
    const id = created.body.data.id as string;
    await db.query(`UPDATE webhook_endpoints SET url = $2, url_sealed = NULL WHERE id = $1`, [
      id,
      withCredentials('/old'),
    ]);
    const got = await req('GET', `/webhooks/${id}`);
    expect(got.body.data.url).toBe(`http://***@127.0.0.1:${receiver.port}/old`);
    expectNoCredential(got.raw);
    expect((await testDelivery(id)).headers.authorization).toBe(basic(USER, PASSWORD));
    await req('DELETE', `/webhooks/${id}`);
  });

  it('WEBHOOK step header values and URL credentials: sealed in the workflow row, *** in every answer, sent for real; *** sent back keeps them', async () => {
    const step = {
      id: 'notify',
      type: 'WEBHOOK',
      url: withCredentials('/wf'),
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKEN}`, 'X-Contact': '{{ email }}' },
      body: '{"email":"{{ email }}"}',
    };
    const created = await req('POST', '/workflows', {
      name: 'Credentials',
      enabled: true,
      trigger: { type: 'MANUAL' },
      steps: [step],
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    const maskedStep = {
      ...step,
      url: `http://***@127.0.0.1:${receiver.port}/wf`,
      headers: { Authorization: '***', 'X-Contact': '***' },
    };
    expect(created.body.data.steps).toEqual([maskedStep]);
    expectNoCredential(created.raw);

    const [row] = await db.query(
      `SELECT row_to_json(w)::text AS row, step_secrets_sealed AS sealed FROM workflows w WHERE id = $1`,
      [id],
    );
    expectNoCredential(row.row);
    expect(row.sealed).toEqual(expect.any(String));

    const call = async (email: string): Promise<ReceivedRequest> => {
      const before = receiver.requests.length;
      expect((await req('POST', `/workflows/${id}/executions`, { email })).status).toBe(202);
      return (await receiver.waitFor(before + 1))[before];
    };
    const first = await call('first@example.org');
    expect(first.path).toBe('/wf');
    expect(first.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(first.headers['x-contact']).toBe('first@example.org');
    expect(JSON.parse(first.body)).toEqual({ email: 'first@example.org' });

    const answers = [
      await req('GET', `/workflows/${id}`),
      await req('GET', '/workflows'),
      await req('PATCH', `/workflows/${id}`, { description: 'kept' }),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.raw).toContain('"Authorization":"***"');
      expectNoCredential(answer.raw);
    }

    // The steps as the answer showed them, one header added: the masked values keep the stored ones.
    const edited = await req('PATCH', `/workflows/${id}`, {
      steps: [{ ...maskedStep, headers: { ...maskedStep.headers, 'X-Extra': 'plain' } }],
    });
    expect(edited.status).toBe(200);
    expect(edited.body.data.steps[0].headers).toEqual({
      Authorization: '***',
      'X-Contact': '***',
      'X-Extra': '***',
    });
    const second = await call('second@example.org');
    expect(second.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(second.headers['x-contact']).toBe('second@example.org');
    expect(second.headers['x-extra']).toBe('plain');
    expect(second.path).toBe('/wf');

    // `***` where nothing is stored: 422 on that field, the workflow unchanged.
    const refused = await req('PATCH', `/workflows/${id}`, {
      steps: [
        { ...maskedStep, headers: { ...maskedStep.headers, 'X-New': '***' } },
        { ...maskedStep, id: 'other', url: `http://***@localhost:${receiver.port}/x` },
      ],
    });
    expect(refused.status).toBe(422);
    expect(refused.body.error.errors.map((e: Json) => e.field).sort()).toEqual([
      'steps[0].headers.X-New',
      'steps[1].headers.Authorization',
      'steps[1].headers.X-Contact',
      'steps[1].url',
    ]);
    const [again] = await db.query(
      `SELECT row_to_json(w)::text AS row FROM workflows w WHERE id = $1`,
      [id],
    );
    expectNoCredential(again.row);
    expect((await call('third@example.org')).headers.authorization).toBe(`Bearer ${TOKEN}`);

    // Nothing logged while all this ran holds a credential.
    expect(logged.length).toBeGreaterThan(0);
    expectNoCredential(logged.join('\n'));
  });
});
