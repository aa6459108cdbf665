import { Client } from 'pg';
import { pollUntil } from './support/poll';
import { SendingTest, startSendingTest } from './support/sending';

/** Runs to RENDER_TIMEOUT_MS when the send's data says so; renders at once otherwise (and at save). */
const SLOW_WHEN_ASKED =
  '{% if slow %}{% assign a = (1..3000000) %}{{ a | where_exp: "i", "i > 0" | size }}{% endif %}<p>Hi {{ name }}</p>';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * A workflow's SEND_EMAIL messages are rendered before the step batch's transaction opens: a
 * template that runs to its render deadline holds no connection idle in a transaction (and no
 * execution rows locked) meanwhile, whichever project's batch it shares.
 */
describe('workflow SEND_EMAIL renders outside the batch transaction (e2e)', () => {
  let t: SendingTest;
  let observer: Client;
  const req = (method: 'GET' | 'POST', url: string, body?: unknown) =>
    t.app.request({ method, url, key: t.project.secretKey, body });

  beforeAll(async () => {
    t = await startSendingTest('Workflow renders', { RENDER_TIMEOUT_MS: '2000' });
    observer = new Client({ connectionString: t.db.url });
    await observer.connect();
  }, 60_000);
  afterAll(async () => {
    await observer?.end();
    await t?.close();
  });

  /**
   * Sessions idle in a transaction for more than half a second, as one waiting for a 2 s render
   * is: the worker's other transactions are idle between their statements only for a round trip.
   */
  async function transactionsOpen(): Promise<number> {
    const { rows } = await observer.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid()
          AND state LIKE 'idle in transaction%' AND now() - state_change > interval '500 ms'`,
    );
    return rows[0].n;
  }

  it('holds no transaction while a step renders to its deadline, fails that step, and sends the others', async () => {
    const template = await t.createTemplate({
      name: 'Slow when asked',
      subject: 'Hello {{ name }}',
      body: SLOW_WHEN_ASKED,
      from: 'hello@acme.test',
      type: 'TRANSACTIONAL',
    });
    expect(template.status).toBe(201);
    const workflow = await req('POST', '/workflows', {
      name: 'Render',
      enabled: true,
      trigger: { type: 'EVENT', event: 'go' },
      steps: [{ id: 'mail', type: 'SEND_EMAIL', templateId: template.body.data.id }],
    });
    expect(workflow.status).toBe(201);

    let sampling = true;
    let open = 0;
    let samples = 0;
    const sampler = (async () => {
      while (sampling) {
        open = Math.max(open, await transactionsOpen());
        samples += 1;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    try {
      const tracks = await Promise.all([
        req('POST', '/v1/track', {
          email: 'slow@example.org',
          event: 'go',
          data: {
            name: { value: 'S', persistent: false },
            slow: { value: true, persistent: false },
          },
        }),
        req('POST', '/v1/track', {
          email: 'fast@example.org',
          event: 'go',
          data: { name: { value: 'F', persistent: false } },
        }),
      ]);
      expect(tracks.map((r) => r.status)).toEqual([200, 200]);
      const executions = await pollUntil(
        async () =>
          (await req('GET', `/workflows/${workflow.body.data.id}/executions?limit=10`)).body.data
            .items as Json[],
        (xs) => xs.length === 2 && xs.every((x) => !['RUNNING', 'WAITING'].includes(x.status)),
        30_000,
      );
      const byEmail = Object.fromEntries(
        await Promise.all(
          executions.map(async (x) => [(await t.contact(x.contactId)).email, x] as const),
        ),
      );
      expect(byEmail['slow@example.org'].status).toBe('FAILED');
      expect(JSON.stringify(byEmail['slow@example.org'])).toMatch(/longer than 2000 ms/);
      expect(byEmail['fast@example.org'].status).toBe('COMPLETED');
    } finally {
      sampling = false;
      await sampler;
    }
    // The render took 2 s: sampled every 25 ms, a transaction waiting for it would have been seen.
    expect(samples).toBeGreaterThan(20);
    expect(open).toBe(0);
    const [message] = await pollUntil(
      async () => t.smtp.messagesTo('fast@example.org'),
      (ms) => ms.length > 0,
      10_000,
    );
    expect(message.parsed?.subject).toBe('Hello F');
  });
});
