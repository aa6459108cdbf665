import { WebhookDispatcher } from '../src/webhooks/webhook-dispatcher';
import { WorkflowExecutionsRepository } from '../src/workflows/workflow-executions.repository';
import { pollUntil } from './support/poll';
import { setupTestApp, TestApp, TestProject } from './support/test-app';

/**
 * The after-commit dispatch (AfterCommitDispatcher) follows the answer of
 * POST /v1/track and POST /v1/send: the request answers once its
 * transaction has committed, while the dispatcher's lookup or enqueue is
 * still under way. Each case holds the dispatch until the request has
 * answered (or, should the request wait for it, until a safety release
 * long after), then checks the work was dispatched after all.
 */
describe('after-commit dispatch does not hold up the request (e2e)', () => {
  let setup: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  let project: TestProject;
  const req = (method: 'POST' | 'GET', url: string, body?: unknown) =>
    app.request({ method, url, key: project.secretKey, body });

  beforeAll(async () => {
    setup = await setupTestApp({ REQUIRE_VERIFIED_SENDER: 'false' });
    app = setup.app;
    project = await app.createProject('Dispatch');
  });

  afterAll(async () => {
    jest.restoreAllMocks();
    await setup?.close();
  });

  /** A gate the dispatch waits at: opened by the test, or by itself after `safetyMs` so a request that waits for it still ends. */
  function gate(safetyMs = 10_000) {
    let open: () => void = () => undefined;
    let opened = false;
    const passed = new Promise<void>((resolve) => {
      open = () => {
        opened = true;
        resolve();
      };
    });
    const timer = setTimeout(open, safetyMs);
    return {
      passed,
      get opened() {
        return opened;
      },
      open: () => {
        clearTimeout(timer);
        open();
      },
    };
  }

  it('POST /v1/track answers before the workflow dispatcher has looked up the executions its event started', async () => {
    const created = await req('POST', '/workflows', {
      name: 'On signup',
      enabled: true,
      trigger: { type: 'EVENT', event: 'signup' },
      steps: [],
    });
    expect(created.status).toBe(201);
    const repository = app.app.get(WorkflowExecutionsRepository);
    const lookup = gate();
    const moved = jest.spyOn(repository, 'movedByEvents');
    const original = WorkflowExecutionsRepository.prototype.movedByEvents.bind(repository);
    moved.mockImplementation(async (...args) => {
      await lookup.passed;
      return original(...args);
    });

    const res = await req('POST', '/v1/track', { email: 'ada@example.com', event: 'signup' });
    const heldWhenAnswered = !lookup.opened;
    lookup.open();
    expect({ status: res.status, heldWhenAnswered }).toEqual({
      status: 200,
      heldWhenAnswered: true,
    });
    // The dispatch went on after the answer: the lookup ran and found the execution.
    const calls = await pollUntil(
      async () => moved.mock.results.length,
      (n) => n > 0,
      10_000,
    );
    expect(calls).toBeGreaterThan(0);
    const found = await moved.mock.results[0].value;
    expect(found).toHaveLength(1);
    moved.mockRestore();
  });

  it('POST /v1/send answers before the webhook dispatcher has woken the endpoint its email.queued events concern', async () => {
    const endpoint = await req('POST', '/webhooks', {
      url: 'https://hooks.example.com/mailwright',
      events: ['email.queued'],
    });
    expect(endpoint.status).toBe(201);
    const dispatcher = app.app.get(WebhookDispatcher);
    const wakeUp = gate();
    const wake = jest.spyOn(dispatcher, 'wake');
    const original = WebhookDispatcher.prototype.wake.bind(dispatcher);
    wake.mockImplementation(async (endpointIds) => {
      await wakeUp.passed;
      return original(endpointIds);
    });

    const res = await req('POST', '/v1/send', {
      to: 'grace@example.com',
      from: 'hello@acme.test',
      subject: 'Hi',
      body: '<p>Hi</p>',
    });
    const heldWhenAnswered = !wakeUp.opened;
    wakeUp.open();
    expect({ status: res.status, heldWhenAnswered }).toEqual({
      status: 200,
      heldWhenAnswered: true,
    });
    const calls = await pollUntil(
      async () => wake.mock.calls,
      (c) => c.length > 0,
      10_000,
    );
    expect(calls[0][0]).toEqual([endpoint.body.data.id]);
    wake.mockRestore();
  });
});
