import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { HttpReceiver, startHttpReceiver } from './support/http-receiver';
import { pollUntil } from './support/poll';
import { setupTestApp, startTestApp, TestApp, testConfig } from './support/test-app';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * A receiver that holds every request open until the test answers it (or
 * closes the server), counting the requests open at once.
 */
class HangingReceiver {
  readonly held: ServerResponse[] = [];
  readonly ids: string[] = [];
  open = 0;
  maxOpen = 0;
  /** Requests the sender gave up on (its 10 s timeout) before the test answered them. */
  abandoned = 0;
  /** When the first of them was given up (Date.now()), or null. */
  firstAbandonedAt: number | null = null;
  /** Answer at once instead of holding. */
  answering = false;
  private readonly server: Server;
  port = 0;

  constructor() {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      this.ids.push(String(req.headers['webhook-id']));
      this.open++;
      this.maxOpen = Math.max(this.maxOpen, this.open);
      res.on('close', () => {
        this.open--;
        if (!res.writableEnded) {
          this.abandoned++;
          this.firstAbandonedAt ??= Date.now();
        }
      });
      req.resume();
      if (this.answering) req.on('end', () => res.end('ok'));
      else this.held.push(res);
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  answerOne(): void {
    const res = this.held.shift();
    if (res && !res.destroyed) res.end('ok');
  }

  answerAll(): void {
    this.answering = true;
    while (this.held.length > 0) this.answerOne();
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * Per-endpoint concurrency (contract, "Tenant safety and limits"): at most 4
 * deliveries in flight to one endpoint across every worker process, and slow
 * endpoints do not take a worker's webhook slots from other projects'
 * endpoints. Real HTTP receivers on loopback (WEBHOOK_ALLOW_PRIVATE).
 */
describe('webhook deliveries in flight per endpoint (e2e)', () => {
  const env = {
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_RETRY_DELAYS_MS: '500,500,500,500',
    RECOVERY_EVERY_MS: '1000',
  };
  let ctx: Awaited<ReturnType<typeof setupTestApp>>;
  let app: TestApp;
  const receivers: Array<HangingReceiver | HttpReceiver> = [];

  beforeAll(async () => {
    ctx = await setupTestApp(env);
    app = ctx.app;
  }, 60_000);
  afterAll(async () => {
    for (const r of receivers) await r.close();
    await ctx?.close();
  });

  const hanging = async () => {
    const r = await new HangingReceiver().start();
    receivers.push(r);
    return r;
  };
  const endpointFor = async (key: string, url: string): Promise<string> => {
    const res = await app.request({
      method: 'POST',
      url: '/webhooks',
      key,
      body: { url, events: ['email.*'] },
    });
    expect(res.status).toBe(201);
    return res.body.data.id;
  };
  /** `n` webhook.test deliveries to the endpoint. */
  const testEvents = async (key: string, endpointId: string, n: number) => {
    for (let i = 0; i < n; i++) {
      const res = await app.request({ method: 'POST', url: `/webhooks/${endpointId}/test`, key });
      expect(res.status).toBe(202);
    }
  };
  const deliveries = async (key: string, endpointId: string): Promise<Json[]> =>
    (
      await app.request({
        method: 'GET',
        url: `/webhooks/${endpointId}/deliveries?limit=100`,
        key,
      })
    ).body.data.items;

  it('never has more than 4 requests open to one endpoint, with two worker processes; every delivery is sent, none counted twice', async () => {
    // A second worker process on the same database and queues: the limit is the endpoint's, not a process's.
    const second = await startTestApp(testConfig(ctx.db.url, ctx.prefix, env));
    try {
      const project = await app.createProject('Slow receiver');
      const slow = await hanging();
      const endpointId = await endpointFor(project.secretKey, `${slow.url}/slow`);
      await testEvents(project.secretKey, endpointId, 12);

      await pollUntil(
        async () => slow.open,
        (open) => open >= 4,
        15_000,
      );
      expect(slow.open).toBe(4);
      // Answering one request at a time: each frees a slot, which another delivery takes.
      for (let seen = slow.ids.length; seen < 12; seen = slow.ids.length) {
        slow.answerOne();
        await pollUntil(
          async () => slow.ids.length,
          (n) => n > seen,
          15_000,
        );
        expect(slow.maxOpen).toBeLessThanOrEqual(4);
      }
      expect(slow.maxOpen).toBe(4);
      slow.answerAll();

      const done = await pollUntil(
        () => deliveries(project.secretKey, endpointId),
        (items) => items.length === 12 && items.every((d) => d.status === 'SUCCEEDED'),
        20_000,
      );
      expect(done.map((d) => d.status)).toEqual(Array(12).fill('SUCCEEDED'));
      // A delivery that waited for a slot (parked, its claim given back) counted no attempt: each attempt is a request the receiver got.
      for (const d of done) {
        expect({ id: d.id, attempts: d.attempts }).toEqual({
          id: d.id,
          attempts: slow.ids.filter((id) => id === d.id).length,
        });
      }
      expect(slow.maxOpen).toBe(4);
    } finally {
      await second.close();
    }
  }, 90_000);

  it("keeps another project's endpoint flowing while four slow endpoints hold their slots", async () => {
    // Everything of the fast project is ready first, so only its events remain once the slow
    // endpoints hold their slots (on a loaded machine its setup alone took seconds).
    const fastProject = await app.createProject('Fast receiver');
    const fast = await startHttpReceiver();
    receivers.push(fast);
    const fastEndpoint = await endpointFor(fastProject.secretKey, `${fast.url}/fast`);
    const slowOnes: Array<{ receiver: HangingReceiver; key: string; endpointId: string }> = [];
    for (let i = 0; i < 4; i++) {
      const project = await app.createProject(`Slow ${i}`);
      const receiver = await hanging();
      const endpointId = await endpointFor(project.secretKey, `${receiver.url}/slow`);
      slowOnes.push({ receiver, key: project.secretKey, endpointId });
    }
    // Enough to fill every webhook slot of a worker (64) if an endpoint could take 16.
    await Promise.all(slowOnes.map((s) => testEvents(s.key, s.endpointId, 20)));
    await pollUntil(
      async () => slowOnes.map((s) => s.receiver.open),
      (open) => open.every((n) => n >= 4),
      15_000,
    );

    // When each fast delivery was committed (its test event answered), by delivery id.
    const committedAt = new Map<string, number>();
    for (let i = 0; i < 5; i++) {
      const res = await app.request({
        method: 'POST',
        url: `/webhooks/${fastEndpoint}/test`,
        key: fastProject.secretKey,
      });
      expect(res.status).toBe(202);
      committedAt.set(res.body.data.id, Date.now());
    }
    await pollUntil(
      async () => fast.requests.length,
      (n) => n >= 5,
      30_000,
    );
    expect(fast.requests).toHaveLength(5);
    // Each was sent as soon as it was committed: one whose wake-up was lost waits for the sweep,
    // which takes a delivery only once it is 5 s overdue.
    const waited = fast.requests.map((r) => {
      const id = String(r.headers['webhook-id']);
      return { id, ms: r.at - (committedAt.get(id) ?? Number.NaN) };
    });
    expect(waited.filter((w) => !(w.ms < 4_000))).toEqual([]);
    // They arrived while the slow receivers still held their first requests: nothing waited for a
    // slow attempt's timeout (compared by the receivers' own clocks, not by how long this took).
    const lastFast = Math.max(...fast.requests.map((r) => r.at));
    const firstAbandoned = Math.min(
      ...slowOnes.map((s) => s.receiver.firstAbandonedAt ?? Number.POSITIVE_INFINITY),
    );
    expect(lastFast).toBeLessThan(firstAbandoned);
    expect(slowOnes.map((s) => s.receiver.maxOpen)).toEqual([4, 4, 4, 4]);
    const fastDone = await pollUntil(
      () => deliveries(fastProject.secretKey, fastEndpoint),
      (items) => items.every((d) => d.status === 'SUCCEEDED'),
      15_000,
    );
    expect(fastDone.map((d) => d.status)).toEqual(Array(5).fill('SUCCEEDED'));
    for (const s of slowOnes) s.receiver.answerAll();
  }, 90_000);
});
