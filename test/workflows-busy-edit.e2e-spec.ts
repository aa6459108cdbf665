import { DataSource } from 'typeorm';
import { lockWaiters } from './support/locks';
import { pollUntil } from './support/poll';
import { SendingTest, startSendingTest } from './support/sending';

/**
 * Editing and deleting a workflow while 1,000 of its executions step through
 * DELAYs and UPDATE_CONTACTs in the engine's batches (the worker runs in the
 * same process, real Postgres and Redis). The edits lock the executions they
 * move in the order the batches lock them (by id) and a deadlock's victim is
 * run again: Postgres detects no deadlock, every PATCH and the DELETE answer 200, never 500, and every
 * execution ends consistent with what was asked (completed, exited at a
 * removed step, or cancelled by the delete), with no step begun after its end.
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const CONTACTS = 1000;
const EDITS = 10;
/** DELAY and UPDATE_CONTACT pairs: enough stages that executions are still stepping at the delete. */
const STAGES = 8;

/** STAGES pairs `wait<i>` (DELAY) then `note<i>` (UPDATE_CONTACT); `without` drops that stage's pair. */
const stepsWith = (seconds: number, without: number | null = null): Json[] =>
  Array.from({ length: STAGES }, (_, i) => i)
    .filter((i) => i !== without)
    .flatMap((i) => [
      { id: `wait${i}`, type: 'DELAY', amount: seconds, unit: 'seconds' },
      { id: `note${i}`, type: 'UPDATE_CONTACT', data: { [`step${i}`]: true } },
    ]);

describe('editing and deleting a busy workflow (e2e)', () => {
  let t: SendingTest;
  let db: DataSource;
  const req = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
    t.app.request({ method, url, key: t.project.secretKey, body });

  beforeAll(async () => {
    t = await startSendingTest('Busy workflow', { API_RATE_LIMIT_PER_MINUTE: '10000000' });
    db = t.app.app.get(DataSource);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  it('PATCH steps and DELETE while 1,000 executions step: never 500, executions end consistent', async () => {
    await db.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'busy' || i || '@example.org', true, '{}', now(), now()
         FROM generate_series(1, $2::int) AS i`,
      [t.project.id, CONTACTS],
    );
    const contactIds: string[] = (
      await db.query(`SELECT id FROM contacts WHERE project_id = $1 AND email LIKE 'busy%'`, [
        t.project.id,
      ])
    ).map((r: Json) => r.id);
    expect(contactIds).toHaveLength(CONTACTS);
    const created = await req('POST', '/workflows', {
      name: 'Busy',
      enabled: true,
      trigger: { type: 'EVENT', event: 'busy.start' },
      steps: stepsWith(1),
    });
    expect(created.status).toBe(201);
    const workflowId = created.body.data.id as string;
    const start = async (ids: string[]) => {
      for (let i = 0; i < ids.length; i += 25) {
        const answers = await Promise.all(
          ids
            .slice(i, i + 25)
            .map((contactId) => req('POST', `/workflows/${workflowId}/executions`, { contactId })),
        );
        expect(answers.filter((a) => a.status !== 202).map((a) => a.body)).toEqual([]);
      }
    };
    const deadlocksBefore = await deadlocks();
    const open = () =>
      db
        .query(
          `SELECT count(*)::int AS n FROM workflow_executions WHERE workflow_id = $1 AND status IN ('RUNNING', 'WAITING')`,
          [workflowId],
        )
        .then((rows: Json[]) => rows[0].n as number);

    const stepRecords = () =>
      db
        .query(
          `SELECT count(*)::int AS n FROM workflow_execution_steps s JOIN workflow_executions x ON x.id = s.execution_id
            WHERE x.workflow_id = $1`,
          [workflowId],
        )
        .then((rows: Json[]) => rows[0].n as number);

    // Two waves a few stages apart step through the edits; the last edit removes the stage where the
    // furthest waiting ones are; a third wave, started just before the delete, is still open for it
    // whatever the machine's speed.
    const waveA = contactIds.slice(0, 450);
    const waveB = contactIds.slice(450, 900);
    const waveC = contactIds.slice(900);
    await start(waveA);
    await pollUntil(stepRecords, (n) => n >= waveA.length * 6, 60_000, 20);
    await start(waveB);

    // Every wait changes on each edit (1 s ↔ 2 s): each PATCH moves the executions waiting at each DELAY.
    // Each edit comes once batches have stepped since the one before, so it meets them.
    const statuses: number[] = [];
    let seen = await stepRecords();
    for (let i = 0; i < EDITS; i++) {
      const before = seen;
      seen = await pollUntil(stepRecords, (n) => n >= before + 100, 10_000, 10);
      const amount = i % 2 === 0 ? 2 : 1;
      const res = await req('PATCH', `/workflows/${workflowId}`, {
        steps: stepsWith(amount),
      });
      statuses.push(res.status);
      if (res.status !== 200) console.error(JSON.stringify(res.body));
    }
    // The furthest stage where executions wait out a DELAY goes: they exit (step_removed). A stage
    // they are waiting at (the edit locks them before they can move on), not merely the furthest reached.
    const [{ stage }] = await db.query(
      `SELECT max(substring(current_step_id FROM '[0-9]+$')::int) AS stage FROM workflow_executions
        WHERE workflow_id = $1 AND status = 'WAITING' AND current_step_id LIKE 'wait%'`,
      [workflowId],
    );
    const openBeforeRemoval = await open();
    const removed = await req('PATCH', `/workflows/${workflowId}`, { steps: stepsWith(1, stage) });
    statuses.push(removed.status);
    await start(waveC);
    const openBeforeDelete = await open();
    const deleted = await req('DELETE', `/workflows/${workflowId}`);
    statuses.push(deleted.status);
    expect(statuses).toEqual(Array(EDITS + 2).fill(200));
    // The edits ran while executions were stepping (else the test proves nothing).
    expect(openBeforeDelete).toBeGreaterThan(0);

    expect(await pollUntil(open, (n) => n === 0, 30_000)).toBe(0);
    // Same lock order as the batches: Postgres found no deadlock to break (its counters are flushed within a second).
    const found = await pollUntil(deadlocks, (n) => n > deadlocksBefore, 2000, 200);
    console.log(
      `busy workflow: ${openBeforeRemoval} open at the removal of stage ${stage}, ${openBeforeDelete} at the delete; ` +
        `${found - deadlocksBefore} deadlocks detected by Postgres`,
    );
    expect(found - deadlocksBefore).toBe(0);
    const outcomes: Json[] = await db.query(
      `SELECT status, exit_reason AS "exitReason", count(*)::int AS n FROM workflow_executions
        WHERE workflow_id = $1 GROUP BY 1, 2 ORDER BY 1, 2`,
      [workflowId],
    );
    const allowed = ['COMPLETED/null', 'EXITED/step_removed', 'CANCELLED/workflow_deleted'];
    expect(outcomes.filter((o) => !allowed.includes(`${o.status}/${o.exitReason}`))).toEqual([]);
    expect(outcomes.reduce((sum, o) => sum + o.n, 0)).toBe(CONTACTS);
    expect(outcomes.find((o) => o.status === 'CANCELLED')?.n ?? 0).toBeGreaterThan(0);
    expect(outcomes.find((o) => o.status === 'EXITED')?.n ?? 0).toBeGreaterThan(0);
    // Nothing stepped after its execution ended.
    const late = await db.query(
      `SELECT count(*)::int AS n FROM workflow_execution_steps s JOIN workflow_executions x ON x.id = s.execution_id
        WHERE x.workflow_id = $1 AND s.started_at > x.finished_at`,
      [workflowId],
    );
    expect(late[0].n).toBe(0);
  }, 300_000);

  it("an edit waits for a batch in the batch's lock order: it holds no execution after the one the batch holds", async () => {
    const ids: string[] = (
      await db.query(
        `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
         SELECT gen_random_uuid(), $1, 'order' || i || '@example.org', true, '{}', now(), now()
           FROM generate_series(1, 40) AS i RETURNING id`,
        [t.project.id],
      )
    ).map((r: Json) => r.id);
    const waits = (first: Json, second: Json): Json[] => [
      { id: 'wait0', type: 'DELAY', ...first },
      { id: 'note0', type: 'UPDATE_CONTACT', data: { order: 0 } },
      { id: 'wait1', type: 'DELAY', ...second },
      { id: 'note1', type: 'UPDATE_CONTACT', data: { order: 1 } },
    ];
    const created = await req('POST', '/workflows', {
      name: 'Order',
      enabled: true,
      trigger: { type: 'EVENT', event: 'order.start' },
      steps: waits({ amount: 1, unit: 'seconds' }, { amount: 1, unit: 'hours' }),
    });
    expect(created.status).toBe(201);
    const workflowId = created.body.data.id as string;
    const waitingAt = (stepId: string) =>
      db
        .query(
          `SELECT id FROM workflow_executions WHERE workflow_id = $1 AND status = 'WAITING' AND current_step_id = $2 ORDER BY id`,
          [workflowId, stepId],
        )
        .then((rows: Json[]) => rows.map((r) => r.id as string));
    // The first 20 wait at wait1, the next 20 (started later: higher ids) at wait0.
    for (const contactId of ids.slice(0, 20)) {
      expect((await req('POST', `/workflows/${workflowId}/executions`, { contactId })).status).toBe(
        202,
      );
    }
    expect(
      await pollUntil(
        () => waitingAt('wait1'),
        (xs) => xs.length === 20,
        30_000,
      ),
    ).toHaveLength(20);
    const slower = await req('PATCH', `/workflows/${workflowId}`, {
      steps: waits({ amount: 1, unit: 'hours' }, { amount: 1, unit: 'hours' }),
    });
    expect(slower.status).toBe(200);
    for (const contactId of ids.slice(20)) {
      expect((await req('POST', `/workflows/${workflowId}/executions`, { contactId })).status).toBe(
        202,
      );
    }
    const atWait0 = await pollUntil(
      () => waitingAt('wait0'),
      (xs) => xs.length === 20,
      30_000,
    );
    const atWait1 = await waitingAt('wait1');
    expect([atWait0.length, atWait1.length]).toEqual([20, 20]);
    const low = atWait1[0];
    const high = atWait0[atWait0.length - 1];
    expect(low < high).toBe(true);

    // A batch of the engine holds the lowest execution; the edit moves the waits of both steps and waits for it.
    const batch = db.createQueryRunner();
    await batch.connect();
    await batch.startTransaction();
    try {
      await batch.query('SELECT id FROM workflow_executions WHERE id = $1 FOR UPDATE', [low]);
      const edited = req('PATCH', `/workflows/${workflowId}`, {
        steps: waits({ amount: 2, unit: 'hours' }, { amount: 2, unit: 'hours' }),
      });
      expect(await lockWaiters(db, 1)).toBeGreaterThanOrEqual(1);
      // The batch goes on in id order: the higher execution is free (the edit took nothing past the one it waits for).
      await batch.query('SELECT id FROM workflow_executions WHERE id = $1 FOR UPDATE NOWAIT', [
        high,
      ]);
      await batch.commitTransaction();
      const res = await edited;
      expect(res.status).toBe(200);
    } finally {
      if (batch.isTransactionActive) await batch.rollbackTransaction();
      await batch.release();
    }
    const due: Json[] = await db.query(
      `SELECT count(*)::int AS n FROM workflow_executions
        WHERE workflow_id = $1 AND status = 'WAITING' AND due_at > now() + interval '90 minutes'`,
      [workflowId],
    );
    expect(due[0].n).toBe(40);
    expect((await req('DELETE', `/workflows/${workflowId}`)).status).toBe(200);
  }, 120_000);

  it('an edit or a delete chosen as a deadlock victim is run again: 200, not 500', async () => {
    const [{ id: contactId }] = await db.query(
      `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
       VALUES (gen_random_uuid(), $1, 'victim@example.org', true, '{}', now(), now()) RETURNING id`,
      [t.project.id],
    );
    const created = await req('POST', '/workflows', {
      name: 'Victim',
      enabled: true,
      trigger: { type: 'EVENT', event: 'victim.start' },
      steps: [{ id: 'nap', type: 'DELAY', amount: 1, unit: 'hours' }],
    });
    expect(created.status).toBe(201);
    const workflowId = created.body.data.id as string;
    expect((await req('POST', `/workflows/${workflowId}/executions`, { contactId })).status).toBe(
      202,
    );
    const [execution] = await pollUntil(
      () =>
        db.query(
          `SELECT id FROM workflow_executions WHERE workflow_id = $1 AND status = 'WAITING'`,
          [workflowId],
        ),
      (rows: Json[]) => rows.length === 1,
      30_000,
    );
    /**
     * Another transaction holds the execution; the request locks the workflow and waits for it; the other then
     * wants the workflow: a cycle, which the request (waiting longest) breaks by aborting. The other ends after a
     * moment; the request's second run finds both free.
     */
    const crossed = async (request: () => Promise<{ status: number; body: Json }>) => {
      const other = db.createQueryRunner();
      await other.connect();
      await other.startTransaction();
      try {
        await other.query('SELECT id FROM workflow_executions WHERE id = $1 FOR UPDATE', [
          execution.id,
        ]);
        const answer = request();
        expect(await lockWaiters(db, 1)).toBeGreaterThanOrEqual(1);
        const wanted = other.query('SELECT id FROM workflows WHERE id = $1 FOR UPDATE', [
          workflowId,
        ]);
        // Whichever way the cycle is broken, this transaction ends and lets the request through.
        await wanted.catch(() => undefined);
        if (other.isTransactionActive) await other.rollbackTransaction();
        return await answer;
      } finally {
        if (other.isTransactionActive) await other.rollbackTransaction();
        await other.release();
      }
    };
    const deadlocksBefore = await deadlocks();
    const edited = await crossed(() =>
      req('PATCH', `/workflows/${workflowId}`, {
        steps: [{ id: 'nap', type: 'DELAY', amount: 2, unit: 'hours' }],
      }),
    );
    expect({ status: edited.status, body: edited.status === 200 ? null : edited.body }).toEqual({
      status: 200,
      body: null,
    });
    const deleted = await crossed(() => req('DELETE', `/workflows/${workflowId}`));
    expect({ status: deleted.status, body: deleted.status === 200 ? null : deleted.body }).toEqual({
      status: 200,
      body: null,
    });
    // Each was a real deadlock, broken by Postgres.
    expect(
      await pollUntil(deadlocks, (n) => n >= deadlocksBefore + 2, 5000, 200),
    ).toBeGreaterThanOrEqual(deadlocksBefore + 2);
    const [row] = await db.query(
      'SELECT status, exit_reason AS "exitReason" FROM workflow_executions WHERE id = $1',
      [execution.id],
    );
    expect(row).toEqual({ status: 'CANCELLED', exitReason: 'workflow_deleted' });
  }, 120_000);

  const deadlocks = async (): Promise<number> =>
    Number(
      (
        await db.query(`SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`)
      )[0].deadlocks,
    );
});
