import { DataSource, QueryRunner } from 'typeorm';
import { lockWaiters } from './support/locks';
import { pollUntil } from './support/poll';
import { SendingTest, startSendingTest } from './support/sending';

/**
 * Writes that meet a concurrent one, interleaved with a test transaction's
 * locks (real Postgres; the worker runs in the same process):
 * - the sender check of POST /campaigns/{id}/send runs on the send's own
 *   transaction (no second pool connection while it holds the campaign);
 * - an update whose row is deleted while it waits answers 404, not 500
 *   (webhook PATCH, delivery retry, execution cancel).
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('writes meeting concurrent ones (e2e)', () => {
  let t: SendingTest;
  let db: DataSource;
  const req = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
    t.app.request({ method, url, key: t.project.secretKey, body });

  /** A transaction of the test's own; `end` rolls it back if still open and releases it. */
  const transaction = async (): Promise<{ q: QueryRunner; end: () => Promise<void> }> => {
    const q = db.createQueryRunner();
    await q.connect();
    await q.startTransaction();
    return {
      q,
      end: async () => {
        if (q.isTransactionActive) await q.rollbackTransaction();
        await q.release();
      },
    };
  };

  /**
   * Holds `lockSql`'s row, starts `request`, waits until it queues behind the
   * lock, deletes the row with `deleteSql` and commits: the request then finds
   * its row gone. Answers the request's answer.
   */
  const deletedWhileWaiting = async (
    lockSql: string,
    deleteSql: string,
    id: string,
    request: () => Promise<{ status: number; body: Json }>,
  ) => {
    const { q, end } = await transaction();
    try {
      expect(await q.query(lockSql, [id])).toHaveLength(1);
      const answer = request();
      expect(await lockWaiters(db, 1)).toBeGreaterThanOrEqual(1);
      await q.query(deleteSql, [id]);
      await q.commitTransaction();
      return await answer;
    } finally {
      await end();
    }
  };

  beforeAll(async () => {
    t = await startSendingTest('Concurrent writes');
    db = t.app.app.get(DataSource);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  it('POST /campaigns/{id}/send checks the sender on its own transaction, not a second connection', async () => {
    await req('POST', '/contacts', { email: 'reader@example.org', subscribed: true });
    const created = await req('POST', '/campaigns', {
      name: 'One connection',
      subject: 'Hi',
      body: '<p>Hi</p><a href="{{ unsubscribeUrl }}">Unsubscribe</a>',
      from: 'news@acme.test',
      audienceType: 'ALL',
    });
    expect(created.status).toBe(201);
    // The sender check's read of domains waits behind this lock, on whichever connection makes it.
    const { q, end } = await transaction();
    try {
      await q.query('LOCK TABLE domains IN ACCESS EXCLUSIVE MODE');
      const sent = req('POST', `/campaigns/${created.body.data.id}/send`, {});
      const waiter = await pollUntil(
        () =>
          db.query(
            `SELECT w.pid,
                    EXISTS (SELECT 1 FROM pg_locks h WHERE h.pid = w.pid AND h.granted AND h.relation = 'campaigns'::regclass) AS "holdsCampaign"
               FROM pg_locks w WHERE NOT w.granted AND w.relation = 'domains'::regclass`,
          ),
        (rows: Json[]) => rows.length > 0,
        10_000,
        10,
      );
      // The connection waiting to read the sender's domain is the one holding the campaign's lock.
      expect(waiter.map((w: Json) => w.holdsCampaign)).toEqual([true]);
      await q.commitTransaction();
      expect((await sent).status).toBe(202);
    } finally {
      await end();
    }
  });

  it('PATCH /webhooks/{id} of an endpoint deleted while it waits: 404', async () => {
    const endpoint = await req('POST', '/webhooks', {
      url: 'https://hooks.example.org/a',
      events: ['email.*'],
    });
    expect(endpoint.status).toBe(201);
    const res = await deletedWhileWaiting(
      'SELECT id FROM webhook_endpoints WHERE id = $1 FOR UPDATE',
      'DELETE FROM webhook_endpoints WHERE id = $1',
      endpoint.body.data.id,
      () => req('PATCH', `/webhooks/${endpoint.body.data.id}`, { description: 'renamed' }),
    );
    expect({ status: res.status, code: res.body.error?.code }).toEqual({
      status: 404,
      code: expect.stringMatching(/_NOT_FOUND$/),
    });
  });

  it('POST /webhooks/{id}/deliveries/{deliveryId}/retry of a delivery deleted while it waits: 404', async () => {
    const endpoint = await req('POST', '/webhooks', {
      url: 'https://hooks.example.org/b',
      events: ['email.*'],
    });
    expect(endpoint.status).toBe(201);
    const delivery = await req('POST', `/webhooks/${endpoint.body.data.id}/test`);
    expect(delivery.status).toBe(202);
    const deliveryId = delivery.body.data.id as string;
    // Its first attempt (the name does not resolve) is over: the sender holds the row no more.
    await pollUntil(
      () => db.query('SELECT attempts FROM webhook_deliveries WHERE id = $1', [deliveryId]),
      (rows: Json[]) => rows[0].attempts >= 1,
      15_000,
    );
    const res = await deletedWhileWaiting(
      'SELECT id FROM webhook_deliveries WHERE id = $1 FOR UPDATE',
      'DELETE FROM webhook_deliveries WHERE id = $1',
      deliveryId,
      () => req('POST', `/webhooks/${endpoint.body.data.id}/deliveries/${deliveryId}/retry`),
    );
    expect({ status: res.status, code: res.body.error?.code }).toEqual({
      status: 404,
      code: expect.stringMatching(/_NOT_FOUND$/),
    });
  });

  it('POST /workflows/{id}/executions/{executionId}/cancel of an execution deleted while it waits: 404', async () => {
    const workflow = await req('POST', '/workflows', {
      name: 'Cancel',
      enabled: true,
      trigger: { type: 'EVENT', event: 'cancel.start' },
      steps: [{ id: 'nap', type: 'DELAY', amount: 1, unit: 'hours' }],
    });
    expect(workflow.status).toBe(201);
    const started = await req('POST', `/workflows/${workflow.body.data.id}/executions`, {
      email: 'cancel@example.org',
    });
    expect(started.status).toBe(202);
    const executionId = started.body.data.id as string;
    await pollUntil(
      () => db.query('SELECT status FROM workflow_executions WHERE id = $1', [executionId]),
      (rows: Json[]) => rows[0].status === 'WAITING',
      15_000,
    );
    const res = await deletedWhileWaiting(
      'SELECT id FROM workflow_executions WHERE id = $1 FOR UPDATE',
      'DELETE FROM workflow_executions WHERE id = $1',
      executionId,
      () => req('POST', `/workflows/${workflow.body.data.id}/executions/${executionId}/cancel`),
    );
    expect({ status: res.status, code: res.body.error?.code }).toEqual({
      status: 404,
      code: expect.stringMatching(/_NOT_FOUND$/),
    });
  });
});
