import { Queue } from 'bullmq';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { Webhook } from 'standardwebhooks';
import { QUEUES } from '../src/queue/queue.constants';
import { redisConnectionOptions } from '../src/queue/redis';
import { WEBHOOK_CONCURRENCY } from '../src/webhooks/webhooks.processor';
import { HttpReceiver, ReceivedRequest, startHttpReceiver } from './support/http-receiver';
import { pollUntil } from './support/poll';
import { DIST_CLI, DIST_MAIN } from './support/processes';
import { callApi as call, deploymentEnv, ServiceCluster } from './support/services';
import { createTestDatabase, flushPrefix, TEST_REDIS_URL, uniqueName } from './support/test-app';

/**
 * Outbound webhooks across crashes, with real processes (node dist/main.js,
 * APP_ROLE=api and APP_ROLE=worker), Postgres, Redis and a loopback receiver
 * that checks every signature with the Standard Webhooks reference library.
 *
 * 1. A worker is SIGKILLed while it sends 500 deliveries to a slow receiver;
 *    a new worker finishes them. Every event arrives at least once, and an
 *    event that arrives twice (its attempt was in flight at the kill) carries
 *    the same webhook-id both times: the id of its one delivery row.
 * 2. The API is SIGKILLed right after answering requests that recorded
 *    events, with no worker running and then every queued job removed from
 *    Redis: every committed event (answered or not) has its delivery row, and
 *    a worker started later delivers them all from those rows alone. That is
 *    what an outbox written in the event's own transaction guarantees.
 *
 * Needs the build (npm test builds first).
 */
/**
 * Events come from toggling contacts' subscription (PATCH /contacts/{id}):
 * each change records contact.unsubscribed or contact.subscribed. One client
 * per contact, its requests one after another, so every answered PATCH is
 * exactly one event.
 */
const CLIENTS = 20;
/**
 * Deliveries pending when the first worker starts: it is killed after 100 have arrived, so most are
 * still to send. More only take longer.
 */
const EVENTS = 500;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Receipt {
  eventId: string;
  webhookId: string;
  type: string;
  at: number;
  verified: boolean;
}

describe('outbound webhooks survive crashes (e2e)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let pg: Client;
  const prefix = uniqueName('mwt_whcrash');
  const cwd = mkdtempSync(join(tmpdir(), 'mw-whcrash-'));
  const receivers: HttpReceiver[] = [];

  const cluster = new ServiceCluster(
    () => ({
      ...deploymentEnv(db.url, prefix),
      WEBHOOK_ALLOW_PRIVATE: 'true',
      // Nothing should fail here; if an attempt does, it comes back soon (and shows as a duplicate).
      WEBHOOK_RETRY_DELAYS_MS: '1000,1000,1000',
      RECOVERY_EVERY_MS: '1000',
    }),
    cwd,
  );
  const startApi = () => cluster.startApi();
  const startWorker = () => cluster.startWorker();
  const createProject = (name: string) => cluster.createProject(name);

  /** CLIENTS subscribed contacts of the project, created through the API. */
  const createContacts = (base: string, key: string, tag: string): Promise<string[]> =>
    Promise.all(
      Array.from({ length: CLIENTS }, async (_, i) => {
        const res = await call(base, key, 'POST', '/contacts', {
          email: `${tag}${i}@example.com`,
          subscribed: true,
        });
        expect(res.status).toBe(201);
        return res.body.data.id as string;
      }),
    );

  /** PATCH that flips a contact's subscription: the n-th flip (from 0) of a subscribed contact unsubscribes when n is even. */
  const flip = (base: string, key: string, contactId: string, n: number): Promise<Response> =>
    fetch(`${base}/contacts/${contactId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ subscribed: n % 2 === 1 }),
    });

  /** Each request the receiver got: its event, its webhook-id, and whether the signature verifies. */
  const receipts = (receiver: HttpReceiver, secret: string): Receipt[] => {
    const wh = new Webhook(secret);
    return receiver.requests.map((r: ReceivedRequest) => {
      const payload = JSON.parse(r.body) as Json;
      let verified = false;
      try {
        wh.verify(r.body, r.headers as Record<string, string>);
        verified = true;
      } catch {
        verified = false;
      }
      return {
        eventId: String(payload.data?.eventId),
        webhookId: String(r.headers['webhook-id']),
        type: String(payload.type),
        at: r.at,
        verified,
      };
    });
  };

  const distinctEvents = (receiver: HttpReceiver): number =>
    new Set(receiver.requests.map((r) => (JSON.parse(r.body) as Json).data?.eventId)).size;

  const deliveryRows = async (
    endpointId: string,
  ): Promise<Array<{ id: string; eventId: string; status: string; attempts: number }>> =>
    (
      await pg.query(
        `SELECT id, event_id AS "eventId", status, attempts FROM webhook_deliveries WHERE endpoint_id = $1`,
        [endpointId],
      )
    ).rows;

  const statusCounts = async (endpointId: string): Promise<Record<string, number>> => {
    const { rows } = await pg.query(
      `SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 GROUP BY status`,
      [endpointId],
    );
    return Object.fromEntries(rows.map((r: { status: string; n: number }) => [r.status, r.n]));
  };

  const createEndpoint = async (
    base: string,
    key: string,
    receiver: HttpReceiver,
  ): Promise<{ id: string; secret: string }> => {
    const res = await call(base, key, 'POST', '/webhooks', {
      url: `${receiver.url}/hooks`,
      events: ['contact.*'],
    });
    expect(res.status).toBe(201);
    return { id: res.body.data.id, secret: res.body.data.secret };
  };

  beforeAll(async () => {
    if (!existsSync(DIST_MAIN) || !existsSync(DIST_CLI))
      throw new Error('dist/ is missing: run npm run build (npm test does)');
    db = await createTestDatabase();
    pg = new Client({ connectionString: db.url });
    await pg.connect();
  }, 60_000);

  /** A test leaves no process behind, whether it passed or not. */
  const killLeftovers = (): Promise<void> => cluster.killAll();

  afterEach(killLeftovers, 30_000);

  afterAll(async () => {
    await killLeftovers();
    for (const receiver of receivers) await receiver.close();
    await pg?.end();
    await flushPrefix(prefix);
    await db?.drop();
  }, 60_000);

  it('SIGKILL the worker with 500 deliveries pending, restart: every event reaches the receiver at least once, duplicates only with the same webhook-id', async () => {
    const started = Date.now();
    const receiver = await startHttpReceiver();
    receivers.push(receiver);
    // 50 ms per answer: at most 4 attempts in flight to the endpoint, so ~80 a second, 500 take > 6 s.
    receiver.fallback = { status: 200, body: 'ok', delayMs: 50 };
    const project = createProject('Worker crash');
    const { proc: api, base } = await startApi();
    const endpoint = await createEndpoint(base, project.secretKey, receiver);

    // 20 contacts (no event), each flipped 25 times: 500 contact.* events.
    const contactIds = await createContacts(base, project.secretKey, 'crash');
    const contactsAt = Date.now();
    await Promise.all(
      contactIds.map(async (id) => {
        for (let n = 0; n < EVENTS / CLIENTS; n++) {
          const res = await flip(base, project.secretKey, id, n);
          if (res.status !== 200)
            throw new Error(`PATCH /contacts: ${res.status} ${await res.text()}`);
        }
      }),
    );
    const produced = Date.now();
    const { rows: events } = await pg.query(
      `SELECT id, name FROM events WHERE project_id = $1 AND name LIKE 'contact.%'`,
      [project.id],
    );
    expect(events).toHaveLength(EVENTS);
    const rowsBefore = await deliveryRows(endpoint.id);
    expect(rowsBefore).toHaveLength(EVENTS);
    expect(rowsBefore.filter((r) => r.status !== 'PENDING')).toEqual([]);
    // Only now a worker: all the deliveries are pending when it starts.
    const worker = await startWorker();

    // Kill once some have arrived and most have not.
    const seen = await pollUntil(
      async () => distinctEvents(receiver),
      (n) => n >= 100,
      30_000,
      5,
    );
    expect(seen).toBeGreaterThanOrEqual(100);
    worker.child.kill('SIGKILL');
    expect(await worker.exited).toBe('SIGKILL');
    // Requests the killed worker had already written may still land for a moment.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const atKill = distinctEvents(receiver);
    const requestsAtKill = receiver.requests.length;
    expect(atKill).toBeLessThan(EVENTS);
    const pendingAtKill = (await statusCounts(endpoint.id)).PENDING ?? 0;
    expect(pendingAtKill).toBeGreaterThan(0);
    // Nobody sends while no worker runs (the API process runs no processor).
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(receiver.requests.length).toBe(requestsAtKill);

    const restartedAt = Date.now();
    const worker2 = await startWorker();
    // The killed worker's in-flight jobs come back when their 30 s lock lapses.
    const final = await pollUntil(
      async () => ({
        distinct: distinctEvents(receiver),
        statuses: await statusCounts(endpoint.id),
      }),
      (s) => s.distinct === EVENTS && s.statuses.SUCCEEDED === EVENTS,
      90_000,
      200,
    );
    const doneAt = Date.now();
    if (final.statuses.SUCCEEDED !== EVENTS) console.error(worker2.output().slice(-4000));
    expect(final).toEqual({ distinct: EVENTS, statuses: { SUCCEEDED: EVENTS } });

    const got = receipts(receiver, endpoint.secret);
    // Every request verifies with the endpoint's secret.
    expect(got.filter((r) => !r.verified)).toEqual([]);
    // The events received are exactly the events recorded, each with its type.
    const typeOfEvent = new Map<string, string>(
      events.map((e: { id: string; name: string }) => [e.id, e.name]),
    );
    expect(new Set(got.map((r) => r.eventId))).toEqual(new Set(typeOfEvent.keys()));
    expect(got.filter((r) => r.type !== typeOfEvent.get(r.eventId))).toEqual([]);
    // One delivery row per event; each request's webhook-id is that row's id (so a duplicate repeats it).
    const rows = await deliveryRows(endpoint.id);
    expect(rows).toHaveLength(EVENTS);
    const rowOfEvent = new Map(rows.map((r) => [r.eventId, r.id]));
    expect(rowOfEvent.size).toBe(EVENTS);
    expect(got.filter((r) => r.webhookId !== rowOfEvent.get(r.eventId))).toEqual([]);
    const byEvent = new Map<string, Receipt[]>();
    for (const r of got) byEvent.set(r.eventId, [...(byEvent.get(r.eventId) ?? []), r]);
    const duplicated = [...byEvent.values()].filter((list) => list.length > 1);
    for (const list of duplicated) expect(new Set(list.map((r) => r.webhookId)).size).toBe(1);
    // Duplicates are the attempts the killed worker had started and never recorded: first seen
    // before the second worker started (a request written just before the kill lands a few ms
    // after it), at most as many as it ran at once, each sent again once.
    expect(duplicated.length).toBeGreaterThan(0);
    expect(duplicated.length).toBeLessThanOrEqual(WEBHOOK_CONCURRENCY);
    expect(duplicated.filter((list) => list[0].at > restartedAt)).toEqual([]);
    expect(duplicated.filter((list) => list.length !== 2)).toEqual([]);
    // Each row recorded its one successful attempt once (the killed attempt recorded nothing).
    expect(rows.filter((r) => r.status !== 'SUCCEEDED' || r.attempts !== 1)).toEqual([]);

    console.log(
      `worker crash: setup ${contactsAt - started} ms, ` +
        `${EVENTS} events ${produced - contactsAt} ms; ` +
        `${atKill} delivered before the SIGKILL, ${pendingAtKill} rows PENDING; ` +
        `restart to all delivered ${doneAt - restartedAt} ms; ${got.length} requests, ` +
        `${duplicated.length} events received twice (same webhook-id)`,
    );
    worker2.child.kill('SIGTERM');
    api.child.kill('SIGTERM');
    expect([0, 'SIGTERM']).toContain(await worker2.exited);
    expect([0, 'SIGTERM']).toContain(await api.exited);
  }, 150_000);

  it('SIGKILL the API right after it answered: every recorded event has its delivery row, and all are delivered once a worker runs', async () => {
    const receiver = await startHttpReceiver();
    receivers.push(receiver);
    const project = createProject('API crash');
    const { proc: api, base } = await startApi();
    const endpoint = await createEndpoint(base, project.secretKey, receiver);

    // No worker runs: the deliveries wait in Postgres (and the jobs the API enqueued, in Redis).
    const contactIds = await createContacts(base, project.secretKey, 'api-crash');
    // Each client flips its contact until the API dies; the answer that makes KILL_AFTER kills it at
    // once, with the other clients' requests in flight (some of them committed, never answered).
    const KILL_AFTER = 300;
    const answeredOf = new Map<string, number>(contactIds.map((id) => [id, 0]));
    let answered = 0;
    let cutOff = 0;
    await Promise.all(
      contactIds.map(async (id) => {
        for (let n = 0; n < 100; n++) {
          let res: Response;
          try {
            res = await flip(base, project.secretKey, id, n);
          } catch {
            cutOff++;
            return;
          }
          if (res.status !== 200)
            throw new Error(`PATCH /contacts: ${res.status} ${await res.text()}`);
          answeredOf.set(id, n + 1);
          if (++answered === KILL_AFTER) api.child.kill('SIGKILL');
        }
      }),
    );
    expect(await api.exited).toBe('SIGKILL');
    expect(answered).toBeGreaterThanOrEqual(KILL_AFTER);
    expect(answered).toBeLessThan(CLIENTS * 100);
    // The killed process's connections are gone (no other process uses the database now), so no
    // commit can still land.
    const others = await pollUntil(
      async () =>
        (
          await pg.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
          )
        ).rows[0].n as number,
      (n) => n === 0,
      10_000,
      50,
    );
    expect(others).toBe(0);

    const { rows: events } = await pg.query(
      `SELECT id, contact_id AS "contactId" FROM events WHERE project_id = $1 AND name LIKE 'contact.%'`,
      [project.id],
    );
    // Answered ⇒ committed; committed but unanswered: at most the one request in flight per client.
    const unanswered = contactIds
      .map((id) => ({
        id,
        extra:
          events.filter((e: { contactId: string }) => e.contactId === id).length -
          (answeredOf.get(id) ?? 0),
      }))
      .filter((c) => c.extra !== 0);
    expect(unanswered.filter((c) => c.extra !== 1)).toEqual([]);
    expect(events.length).toBe(answered + unanswered.length);
    // Every committed event has exactly one PENDING delivery row, and no row lacks its event.
    const rows = await deliveryRows(endpoint.id);
    expect(rows.map((r) => r.eventId).sort()).toEqual(
      events.map((e: { id: string }) => e.id).sort(),
    );
    expect(rows.filter((r) => r.status !== 'PENDING' || r.attempts !== 0)).toEqual([]);

    // As if Redis had lost every job the API handed it after commit: the rows alone must do.
    const queue = new Queue(QUEUES.WEBHOOKS, {
      connection: redisConnectionOptions(TEST_REDIS_URL),
      prefix,
    });
    const jobsBefore = await queue.getJobCounts();
    await queue.obliterate({ force: true });
    const jobsAfter = await queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
    await queue.close();
    expect(Object.values(jobsAfter).reduce((a, b) => a + b, 0)).toBe(0);
    expect(receiver.requests).toHaveLength(0);

    const workerAt = Date.now();
    const worker = await startWorker();
    const final = await pollUntil(
      async () => ({
        distinct: distinctEvents(receiver),
        statuses: await statusCounts(endpoint.id),
      }),
      (s) => s.distinct === events.length && s.statuses.SUCCEEDED === events.length,
      60_000,
      200,
    );
    const doneAt = Date.now();
    if (final.statuses.SUCCEEDED !== events.length) console.error(worker.output().slice(-4000));
    expect(final).toEqual({ distinct: events.length, statuses: { SUCCEEDED: events.length } });

    const got = receipts(receiver, endpoint.secret);
    expect(got.filter((r) => !r.verified)).toEqual([]);
    const rowOfEvent = new Map(rows.map((r) => [r.eventId, r.id]));
    expect(new Set(got.map((r) => r.eventId))).toEqual(new Set(rowOfEvent.keys()));
    expect(got.filter((r) => r.webhookId !== rowOfEvent.get(r.eventId))).toEqual([]);
    // No worker died here: each event was sent exactly once.
    expect(got).toHaveLength(events.length);

    console.log(
      `API crash: ${answered} answered, ${events.length} committed, ${cutOff} requests cut off; ` +
        `jobs in Redis before removal ${JSON.stringify(jobsBefore)}; ` +
        `worker start to all delivered ${doneAt - workerAt} ms`,
    );
    worker.child.kill('SIGTERM');
    expect([0, 'SIGTERM']).toContain(await worker.exited);
  }, 90_000);
});
