import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { DataSource } from 'typeorm';
import { AppConfig } from '../src/config/config';
import { APP_CONFIG } from '../src/config/config.module';
import { QUEUES } from '../src/queue/queue.constants';
import { SegmentDirtyListener } from '../src/segments/segment-dirty-listener';
import { HttpReceiver, startHttpReceiver } from './support/http-receiver';
import { pollUntil } from './support/poll';
import { SendingTest, startSendingTest } from './support/sending';

/**
 * Workflows end to end (real Postgres, Redis, SMTP server, an HTTP receiver
 * on loopback): the resource and its validation, a tracked event running
 * UPDATE_CONTACT → CONDITION → DELAY → SEND_EMAIL whose template sees the
 * update, re-entry enforced by the database, WAIT_FOR_EVENT's three outcomes,
 * edits in flight (removed steps, re-scheduled waits, ids of steps sent
 * without them), WEBHOOK steps and their render context, system event names
 * no client may track, cancel and delete, and the member pages of a segment
 * a workflow keeps.
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('workflows (e2e)', () => {
  let t: SendingTest;
  let db: DataSource;
  let receiver: HttpReceiver;
  let templateId: string;
  const req = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
    t.app.request({ method, url, key: t.project.secretKey, body });
  const track = (email: string, event: string, data?: Json) =>
    req('POST', '/v1/track', { email, event, data });
  const create = async (body: Json) => {
    const res = await req('POST', '/workflows', { name: 'W', enabled: true, ...body });
    expect({ status: res.status, body: res.status === 201 ? null : res.body }).toEqual({
      status: 201,
      body: null,
    });
    return res.body.data as Json;
  };
  const executions = async (workflowId: string, query = '') =>
    (await req('GET', `/workflows/${workflowId}/executions?limit=100${query}`)).body.data
      .items as Json[];
  const waitForExecutions = (
    workflowId: string,
    predicate: (xs: Json[]) => boolean,
    timeoutMs = 15_000,
  ) => pollUntil(() => executions(workflowId), predicate, timeoutMs);
  const finished = (xs: Json[], n: number) =>
    xs.length === n && xs.every((x) => !['RUNNING', 'WAITING'].includes(x.status));

  beforeAll(async () => {
    t = await startSendingTest('Workflows', {
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WORKFLOW_RETRY_DELAYS_MS: '200,200,200,200',
      RECOVERY_EVERY_MS: '1000',
    });
    db = t.app.app.get(DataSource);
    receiver = await startHttpReceiver();
    const template = await t.createTemplate({
      name: 'Welcome',
      subject: 'Hi {{ firstName }} ({{ plan }})',
      body: '<p>Plan {{ contact.data.plan }}, code {{ coupon }}</p>',
      from: 'hello@acme.test',
      type: 'TRANSACTIONAL',
    });
    expect(template.status).toBe(201);
    templateId = template.body.data.id;
  }, 60_000);

  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  it('validates steps with field paths into nested steps', async () => {
    const bad = await req('POST', '/workflows', {
      name: 'Bad',
      trigger: { type: 'EVENT', event: 'signup' },
      steps: [
        { type: 'DELAY', amount: 1, unit: 'weeks' },
        {
          type: 'CONDITION',
          condition: {
            logic: 'AND',
            conditions: [{ field: 'data.plan', operator: 'equals', value: 'pro' }],
          },
          then: [{ type: 'SEND_EMAIL', templateId: '01234567-89ab-7def-8123-456789abcdef' }],
          else: [{ type: 'NOPE' }],
        },
        { id: 'x', type: 'EXIT' },
        { id: 'x', type: 'EXIT', extra: 1 },
      ],
    });
    expect(bad.status).toBe(422);
    const fields = (bad.body.error.errors as Json[]).map((e) => e.field);
    expect(fields).toEqual(
      expect.arrayContaining(['steps[0].unit', 'steps[1].else[0].type', 'steps[3].id', 'steps[3]']),
    );
    const unknownTemplate = await req('POST', '/workflows', {
      name: 'Bad',
      trigger: { type: 'EVENT', event: 'signup' },
      steps: [
        {
          type: 'CONDITION',
          condition: { logic: 'AND', conditions: [] },
          then: [{ type: 'SEND_EMAIL', templateId: '01234567-89ab-7def-8123-456789abcdef' }],
          else: [],
        },
      ],
    });
    expect(unknownTemplate.status).toBe(422);
    expect(unknownTemplate.body.error.errors[0].field).toBe('steps[0].then[0].templateId');
    for (const trigger of [
      { type: 'EVENT' },
      { type: 'SEGMENT_ENTRY' },
      { type: 'MANUAL', event: 'x' },
      { type: 'SEGMENT_EXIT', segmentId: '01234567-89ab-7def-8123-456789abcdef' },
    ]) {
      const res = await req('POST', '/workflows', { name: 'T', trigger, steps: [] });
      expect({ trigger, status: res.status }).toEqual({ trigger, status: 422 });
    }
    // "Nesting depth at most 10": ten branching steps inside one another are valid, eleven are not.
    const nested = (levels: number): Json[] => {
      const top: Json[] = [];
      let level = top;
      for (let i = 0; i < levels; i++) {
        const next: Json[] = [];
        level.push({
          type: 'CONDITION',
          condition: { logic: 'AND', conditions: [] },
          then: next,
          else: [],
        });
        level = next;
      }
      return top;
    };
    const ten = await req('POST', '/workflows', {
      name: 'Ten deep',
      trigger: { type: 'MANUAL' },
      steps: nested(10),
    });
    expect({ status: ten.status, body: ten.status === 201 ? null : ten.body }).toEqual({
      status: 201,
      body: null,
    });
    const eleven = await req('POST', '/workflows', {
      name: 'Eleven deep',
      trigger: { type: 'MANUAL' },
      steps: nested(11),
    });
    expect(eleven.status).toBe(422);
    expect(eleven.body.error.errors).toContainEqual(
      expect.objectContaining({ field: `steps[0]${'.then[0]'.repeat(10)}.then`, code: 'too_big' }),
    );
    const waits = (levels: number): Json[] => {
      let inner: Json[] = [{ type: 'EXIT' }];
      for (let i = 0; i < levels; i++)
        inner = [
          { type: 'WAIT_FOR_EVENT', event: 'e', timeout: { amount: 1, unit: 'days' }, else: inner },
        ];
      return inner;
    };
    expect(
      (
        await req('POST', '/workflows', {
          name: 'Ten waits',
          trigger: { type: 'MANUAL' },
          steps: waits(10),
        })
      ).status,
    ).toBe(201);
    const elevenWaits = await req('POST', '/workflows', {
      name: 'Eleven waits',
      trigger: { type: 'MANUAL' },
      steps: waits(11),
    });
    expect(elevenWaits.status).toBe(422);
    expect(elevenWaits.body.error.errors[0].field).toBe(`steps[0]${'.else[0]'.repeat(10)}.else`);
    const many = Array.from({ length: 101 }, () => ({ type: 'EXIT' }));
    expect(
      (await req('POST', '/workflows', { name: 'Many', trigger: { type: 'MANUAL' }, steps: many }))
        .status,
    ).toBe(422);
    const ok = await create({
      name: 'Ids',
      trigger: { type: 'MANUAL' },
      enabled: false,
      steps: [
        { type: 'DELAY', amount: 1, unit: 'seconds' },
        { id: 'mine', type: 'EXIT' },
      ],
    });
    expect(ok.enabled).toBe(false);
    expect(ok.steps[0].id).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(ok.steps[1].id).toBe('mine');
    expect(ok.stats).toEqual({
      running: 0,
      waiting: 0,
      completed: 0,
      exited: 0,
      failed: 0,
      cancelled: 0,
    });
    const again = await req('PATCH', `/workflows/${ok.id}`, { name: 'Ids 2' });
    expect(again.body.data.steps).toEqual(ok.steps);
    expect(
      (await req('POST', `/workflows/${ok.id}/executions`, { email: 'someone@example.org' }))
        .status,
    ).toBe(409);
  });

  it('a tracked event updates the contact, branches, waits 2 s and sends a template that sees the update', async () => {
    const w = await create({
      trigger: { type: 'EVENT', event: 'signed-up' },
      steps: [
        { id: 'update', type: 'UPDATE_CONTACT', data: { plan: 'pro' } },
        {
          id: 'branch',
          type: 'CONDITION',
          condition: {
            logic: 'AND',
            conditions: [{ field: 'data.plan', operator: 'equals', value: 'pro' }],
          },
          then: [{ id: 'wait', type: 'DELAY', amount: 2, unit: 'seconds' }],
          else: [{ id: 'bye', type: 'EXIT' }],
        },
        { id: 'mail', type: 'SEND_EMAIL', templateId },
      ],
    });
    const started = Date.now();
    // `plan` is tracked as "free" and updated to "pro" by the first step: the mail must say "pro".
    // `coupon` stays on the event (persistent: false): the template still sees it, as the send's data.
    const tracked = await track('flow@example.org', 'signed-up', {
      firstName: 'Ada',
      plan: 'free',
      coupon: { value: 'WELCOME10', persistent: false },
    });
    expect(tracked.status).toBe(200);
    const [x] = await waitForExecutions(w.id, (xs) => finished(xs, 1));
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    expect(x.status).toBe('COMPLETED');
    expect(x.steps.map((s: Json) => [s.stepId, s.status])).toEqual([
      ['update', 'COMPLETED'],
      ['branch', 'COMPLETED'],
      ['wait', 'COMPLETED'],
      ['mail', 'COMPLETED'],
    ]);
    expect(x.steps[1].output).toMatchObject({ result: true });
    const emailId = x.steps[3].output.emailId as string;
    const [message] = await pollUntil(
      async () => t.smtp.messagesTo('flow@example.org'),
      (ms) => ms.length > 0,
      10_000,
    );
    expect(message.parsed?.subject).toBe('Hi Ada (pro)');
    expect(message.parsed?.html).toContain('Plan pro, code WELCOME10');
    expect((await t.contact(x.contactId)).data).toEqual({ firstName: 'Ada', plan: 'pro' });
    const email = (await req('GET', `/emails/${emailId}`)).body.data;
    expect(email.source).toBe('WORKFLOW');
    expect((await req('GET', `/workflows/${w.id}`)).body.data.stats).toMatchObject({
      completed: 1,
      running: 0,
    });
  });

  it('50 identical tracks at once start one execution; with re-entry never two at once', async () => {
    const once = await create({
      trigger: { type: 'EVENT', event: 'burst' },
      steps: [{ type: 'DELAY', amount: 1, unit: 'seconds' }],
    });
    const again = await create({
      trigger: { type: 'EVENT', event: 'burst' },
      allowReentry: true,
      steps: [{ type: 'DELAY', amount: 1, unit: 'seconds' }],
    });
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => track('burst@example.org', 'burst')),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    await waitForExecutions(once.id, (xs) => finished(xs, 1));
    const reentered = await waitForExecutions(
      again.id,
      (xs) => xs.length >= 1 && finished(xs, xs.length),
    );
    // One, unless the burst outlasted the 1 s DELAY on a loaded machine: a track after the first
    // execution finished may enter again. Never two at once either way (the overlap check below).
    const tracksAfterFirst = await db.query(
      `SELECT count(*)::int AS n FROM events e JOIN workflow_executions x ON x.workflow_id = $1
        WHERE e.name = 'burst' AND e.created_at > x.finished_at AND x.id = (
          SELECT id FROM workflow_executions WHERE workflow_id = $1 ORDER BY started_at LIMIT 1)`,
      [again.id],
    );
    if (tracksAfterFirst[0].n === 0) expect(reentered.length).toBe(1);
    else expect(reentered.length).toBeGreaterThanOrEqual(1);
    // After it finished, a new track may enter the re-entry workflow again, and not the other.
    await track('burst@example.org', 'burst');
    await waitForExecutions(again.id, (xs) => finished(xs, reentered.length + 1));
    expect(await executions(once.id)).toHaveLength(1);
    const overlapping = await db.query(
      `SELECT count(*)::int AS n FROM workflow_executions a JOIN workflow_executions b
          ON a.workflow_id = b.workflow_id AND a.contact_id = b.contact_id AND a.id < b.id
       WHERE a.workflow_id = $1 AND b.started_at < coalesce(a.finished_at, now())`,
      [again.id],
    );
    expect(overlapping[0].n).toBe(0);
  });

  it('WAIT_FOR_EVENT: the event before the timeout takes then; no event takes else; a race takes exactly one', async () => {
    const w = await create({
      trigger: { type: 'EVENT', event: 'cart' },
      allowReentry: true,
      steps: [
        {
          id: 'wait',
          type: 'WAIT_FOR_EVENT',
          event: 'paid',
          timeout: { amount: 2, unit: 'seconds' },
          then: [{ id: 'yes', type: 'UPDATE_CONTACT', data: { outcome: 'paid' } }],
          else: [{ id: 'no', type: 'UPDATE_CONTACT', data: { outcome: 'abandoned' } }],
        },
      ],
    });
    await track('payer@example.org', 'cart');
    await track('leaver@example.org', 'cart');
    await waitForExecutions(
      w.id,
      (xs) => xs.length === 2 && xs.every((x) => x.status === 'WAITING'),
    );
    await track('payer@example.org', 'paid');
    const xs = await waitForExecutions(w.id, (all) => finished(all, 2));
    const byContact = async (email: string) => {
      const contact = (await req('GET', `/contacts?email=${email}`)).body.data.items[0];
      return { contact, x: xs.find((x) => x.contactId === contact.id) as Json };
    };
    const payer = await byContact('payer@example.org');
    const leaver = await byContact('leaver@example.org');
    expect(payer.contact.data.outcome).toBe('paid');
    expect(payer.x.steps.map((s: Json) => s.stepId)).toEqual(['wait', 'yes']);
    expect(leaver.contact.data.outcome).toBe('abandoned');
    expect(leaver.x.steps[0].output).toMatchObject({ branch: 'else', timedOut: true });

    // A race: the event lands as the timeout fires; exactly one branch runs.
    await track('racer@example.org', 'cart');
    await waitForExecutions(w.id, (all) => all.some((x) => x.status === 'WAITING'));
    // Time itself is the subject: the event is sent as the 2 s timeout fires.
    await new Promise((r) => setTimeout(r, 1_990));
    await track('racer@example.org', 'paid');
    const all = await waitForExecutions(w.id, (list) => finished(list, 3));
    const racer = await byContact('racer@example.org');
    const x = all.find((e) => e.contactId === racer.contact.id) as Json;
    const branches = x.steps.filter((s: Json) => s.stepId === 'yes' || s.stepId === 'no');
    expect(branches).toHaveLength(1);
  });

  it('an edit while executions wait: a kept step continues under the new definition, a removed one exits', async () => {
    const w = await create({
      trigger: { type: 'MANUAL' },
      steps: [
        { id: 'keep', type: 'DELAY', amount: 2, unit: 'seconds' },
        { id: 'after', type: 'UPDATE_CONTACT', data: { version: 1 } },
      ],
    });
    const w2 = await create({
      trigger: { type: 'MANUAL' },
      steps: [{ id: 'gone', type: 'DELAY', amount: 1, unit: 'minutes' }],
    });
    const a = await req('POST', `/workflows/${w.id}/executions`, { email: 'edit-a@example.org' });
    const b = await req('POST', `/workflows/${w2.id}/executions`, {
      email: 'edit-b@example.org',
      data: { x: 1 },
    });
    expect([a.status, b.status]).toEqual([202, 202]);
    await waitForExecutions(w.id, (xs) => xs[0]?.status === 'WAITING');
    await waitForExecutions(w2.id, (xs) => xs[0]?.status === 'WAITING');
    const edited = await req('PATCH', `/workflows/${w.id}`, {
      steps: [
        { id: 'keep', type: 'DELAY', amount: 2, unit: 'seconds' },
        { id: 'after2', type: 'UPDATE_CONTACT', data: { version: 2 } },
      ],
    });
    expect(edited.status).toBe(200);
    expect(
      (await req('PATCH', `/workflows/${w2.id}`, { steps: [{ id: 'other', type: 'EXIT' }] }))
        .status,
    ).toBe(200);
    const [removed] = await executions(w2.id);
    expect(removed).toMatchObject({ status: 'EXITED', exitReason: 'step_removed' });
    const [kept] = await waitForExecutions(w.id, (xs) => finished(xs, 1));
    expect(kept.status).toBe('COMPLETED');
    expect(kept.steps.map((s: Json) => s.stepId)).toEqual(['keep', 'after2']);
  });

  it('a delay shortened or a wait renamed by an edit applies to executions already waiting there', async () => {
    const w = await create({
      trigger: { type: 'MANUAL' },
      steps: [
        { id: 'nap', type: 'DELAY', amount: 1, unit: 'hours' },
        { id: 'woke', type: 'UPDATE_CONTACT', data: { woke: true } },
      ],
    });
    const waiter = await create({
      trigger: { type: 'MANUAL' },
      steps: [
        {
          id: 'ask',
          type: 'WAIT_FOR_EVENT',
          event: 'old-answer',
          timeout: { amount: 1, unit: 'hours' },
          then: [{ id: 'yes', type: 'UPDATE_CONTACT', data: { answered: true } }],
        },
      ],
    });
    const timer = await create({
      trigger: { type: 'MANUAL' },
      steps: [
        {
          id: 'ask',
          type: 'WAIT_FOR_EVENT',
          event: 'never',
          timeout: { amount: 1, unit: 'hours' },
          else: [{ id: 'late', type: 'UPDATE_CONTACT', data: { late: true } }],
        },
      ],
    });
    expect(
      (await req('POST', `/workflows/${w.id}/executions`, { email: 'nap@example.org' })).status,
    ).toBe(202);
    expect(
      (await req('POST', `/workflows/${waiter.id}/executions`, { email: 'ask@example.org' }))
        .status,
    ).toBe(202);
    expect(
      (await req('POST', `/workflows/${timer.id}/executions`, { email: 'timer@example.org' }))
        .status,
    ).toBe(202);
    for (const id of [w.id, waiter.id, timer.id])
      await waitForExecutions(id, (xs) => xs[0]?.status === 'WAITING');
    // Waited 1.5 s already: a delay of 3 s counts from when the wait began, so about 1.5 s are left (not 3).
    await new Promise((r) => setTimeout(r, 1_500));
    const shortened = await req('PATCH', `/workflows/${w.id}`, {
      steps: [
        { id: 'nap', type: 'DELAY', amount: 3, unit: 'seconds' },
        { id: 'woke', type: 'UPDATE_CONTACT', data: { woke: true } },
      ],
    });
    expect(shortened.status).toBe(200);
    const renamed = await req('PATCH', `/workflows/${waiter.id}`, {
      steps: [
        {
          id: 'ask',
          type: 'WAIT_FOR_EVENT',
          event: 'new-answer',
          timeout: { amount: 1, unit: 'hours' },
          then: [{ id: 'yes', type: 'UPDATE_CONTACT', data: { answered: true } }],
        },
      ],
    });
    expect(renamed.status).toBe(200);
    const timedOut = await req('PATCH', `/workflows/${timer.id}`, {
      steps: [
        {
          id: 'ask',
          type: 'WAIT_FOR_EVENT',
          event: 'never',
          timeout: { amount: 1, unit: 'seconds' },
          else: [{ id: 'late', type: 'UPDATE_CONTACT', data: { late: true } }],
        },
      ],
    });
    expect(timedOut.status).toBe(200);

    const [napped] = await waitForExecutions(w.id, (xs) => finished(xs, 1), 10_000);
    expect(napped.status).toBe('COMPLETED');
    const nap = napped.steps[0];
    const waited = new Date(nap.finishedAt).getTime() - new Date(nap.startedAt).getTime();
    expect(waited).toBeGreaterThanOrEqual(2_950);
    expect(waited).toBeLessThan(4_300);
    expect(napped.steps.map((s: Json) => s.stepId)).toEqual(['nap', 'woke']);

    // The timeout of 1 s is long past: the wait ends at once, by its else branch.
    const [late] = await waitForExecutions(timer.id, (xs) => finished(xs, 1), 5_000);
    expect(late.status).toBe('COMPLETED');
    expect(late.steps[0].output).toMatchObject({ branch: 'else', timedOut: true });

    // The old event no longer ends the wait; the new one does.
    await track('ask@example.org', 'old-answer');
    // Fixed on purpose: asserts that the old event does not end the wait.
    await new Promise((r) => setTimeout(r, 500));
    expect((await executions(waiter.id))[0].status).toBe('WAITING');
    await track('ask@example.org', 'new-answer');
    const [answered] = await waitForExecutions(waiter.id, (xs) => finished(xs, 1), 5_000);
    expect(answered.steps.map((s: Json) => [s.stepId, s.status])).toEqual([
      ['ask', 'COMPLETED'],
      ['yes', 'COMPLETED'],
    ]);
    expect((await t.contact(answered.contactId)).data).toMatchObject({ answered: true });
  });

  it('steps sent again without ids keep the ids of the steps at their place (same type); executions stay where they were', async () => {
    const withoutIds = (data: Json) => [
      { type: 'DELAY', amount: 1, unit: 'hours' },
      {
        type: 'CONDITION',
        condition: { logic: 'AND', conditions: [] },
        then: [{ type: 'UPDATE_CONTACT', data }],
        else: [{ type: 'EXIT' }],
      },
    ];
    const w = await create({ trigger: { type: 'MANUAL' }, steps: withoutIds({ v: 1 }) });
    const ids = (steps: Json[]) => [
      steps[0].id,
      steps[1].id,
      steps[1].then[0].id,
      steps[1].else[0].id,
    ];
    const before = ids(w.steps);
    expect(new Set(before).size).toBe(4);
    expect(
      (await req('POST', `/workflows/${w.id}/executions`, { email: 'ids@example.org' })).status,
    ).toBe(202);
    const [waiting] = await waitForExecutions(w.id, (xs) => xs[0]?.status === 'WAITING');
    expect(waiting.currentStepId).toBe(before[0]);

    // The same shape without ids (a client that never kept them): every id stays, the execution waits on.
    const again = await req('PATCH', `/workflows/${w.id}`, { steps: withoutIds({ v: 2 }) });
    expect(again.status).toBe(200);
    expect(ids(again.body.data.steps)).toEqual(before);
    expect(again.body.data.steps[1].then[0].data).toEqual({ v: 2 });
    const [still] = await executions(w.id);
    expect(still).toMatchObject({ status: 'WAITING', currentStepId: before[0], exitReason: null });

    // An id given explicitly is never taken by an id-less step; a step whose type changed at a place is a new step.
    const reshaped = await req('PATCH', `/workflows/${w.id}`, {
      steps: [
        { type: 'UPDATE_CONTACT', data: { v: 3 } },
        { id: before[0], type: 'DELAY', amount: 1, unit: 'hours' },
      ],
    });
    expect(reshaped.status).toBe(200);
    const [first, second] = reshaped.body.data.steps as Json[];
    expect(second.id).toBe(before[0]);
    expect(first.id).not.toBe(before[0]);
    expect((await executions(w.id))[0]).toMatchObject({
      status: 'WAITING',
      currentStepId: before[0],
    });
    const removed = await req('PATCH', `/workflows/${w.id}`, {
      steps: [{ type: 'EXIT' }, { type: 'EXIT' }],
    });
    expect(removed.status).toBe(200);
    expect((await executions(w.id))[0]).toMatchObject({
      status: 'EXITED',
      exitReason: 'step_removed',
    });
  });

  it("WEBHOOK bodies see the contact as it is at the step, the values kept off the contact, and a system event's data", async () => {
    receiver.requests.length = 0;
    receiver.answers = [];
    const tracked = await create({
      trigger: { type: 'EVENT', event: 'hooked' },
      steps: [
        { id: 'up', type: 'UPDATE_CONTACT', data: { plan: 'pro' } },
        {
          id: 'hook',
          type: 'WEBHOOK',
          url: `${receiver.url}/tracked`,
          method: 'POST',
          headers: { 'x-plan': '{{ plan }}' },
          body: '{"plan":"{{ plan }}","ref":"{{ ref }}","data":"{{ contact.data.plan }}"}',
        },
      ],
    });
    const manual = await create({
      trigger: { type: 'MANUAL' },
      steps: [
        { id: 'up', type: 'UPDATE_CONTACT', data: { tier: 'gold' } },
        {
          id: 'hook',
          type: 'WEBHOOK',
          url: `${receiver.url}/manual`,
          method: 'POST',
          body: '{"tier":"{{ tier }}","n":{{ n }},"once":"{{ once }}"}',
        },
      ],
    });
    const system = await create({
      trigger: { type: 'EVENT', event: 'contact.unsubscribed' },
      steps: [
        {
          id: 'hook',
          type: 'WEBHOOK',
          url: `${receiver.url}/system`,
          method: 'POST',
          body: '{"source":"{{ source }}","subscribed":{{ contact.subscribed }}}',
        },
      ],
    });

    expect(
      (
        await track('hooked@example.org', 'hooked', {
          plan: 'free',
          ref: { value: 'ad-7', persistent: false },
        })
      ).status,
    ).toBe(200);
    await waitForExecutions(tracked.id, (xs) => finished(xs, 1));
    const [fromTrack] = receiver.requests.filter((r) => r.path === '/tracked');
    expect(JSON.parse(fromTrack.body)).toEqual({ plan: 'pro', ref: 'ad-7', data: 'pro' });
    expect(fromTrack.headers['x-plan']).toBe('pro');

    // A manual start's data is taken as a track's: merged into the contact, `persistent: false` kept on the execution.
    const started = await req('POST', `/workflows/${manual.id}/executions`, {
      email: 'manual@example.org',
      data: { tier: 'silver', n: 7, once: { value: 'yes', persistent: false } },
    });
    expect(started.status).toBe(202);
    await waitForExecutions(manual.id, (xs) => finished(xs, 1));
    const [fromManual] = receiver.requests.filter((r) => r.path === '/manual');
    expect(JSON.parse(fromManual.body)).toEqual({ tier: 'gold', n: 7, once: 'yes' });
    expect((await t.contact(started.body.data.contactId)).data).toEqual({ tier: 'gold', n: 7 });

    const contactId = (await req('GET', '/contacts?email=hooked@example.org')).body.data.items[0]
      .id as string;
    expect((await req('PATCH', `/contacts/${contactId}`, { subscribed: false })).status).toBe(200);
    await waitForExecutions(system.id, (xs) => finished(xs, 1));
    const [fromSystem] = receiver.requests.filter((r) => r.path === '/system');
    expect(JSON.parse(fromSystem.body)).toEqual({ source: 'api', subscribed: false });
  });

  it('system event names cannot be tracked: 422 reserved_event', async () => {
    for (const event of [
      'workflow.execution.failed',
      'webhook.disabled',
      'campaign.sent',
      'Campaign.Started',
      'domain.verified',
      'email.sent',
      'segment.x.entered',
    ]) {
      const res = await track('forger@example.org', event);
      expect({ event, status: res.status, code: res.body.error?.code }).toEqual({
        event,
        status: 422,
        code: 'VALIDATION_ERROR',
      });
      expect(res.body.error.errors).toEqual([
        expect.objectContaining({ field: 'event', code: 'reserved_event' }),
      ]);
    }
    expect((await track('forger@example.org', 'workflow-started')).status).toBe(200);
    expect((await track('forger@example.org', 'campaigns.viewed')).status).toBe(200);
    const forged = (await req('GET', '/events?name=workflow.execution.failed')).body.data
      .items as Json[];
    expect(forged.filter((e) => e.data.executionId === undefined)).toEqual([]);
  });

  it('an execution that does not exist is 404 WORKFLOW_NOT_FOUND (a code of the contract)', async () => {
    const w = await create({ trigger: { type: 'MANUAL' }, steps: [{ type: 'EXIT' }] });
    const missing = '01890a5d-ac96-774b-bcce-b302099a8057';
    for (const [method, url] of [
      ['GET', `/workflows/${w.id}/executions/${missing}`],
      ['POST', `/workflows/${w.id}/executions/${missing}/cancel`],
    ] as const) {
      const res = await req(method, url);
      expect({ url, status: res.status, code: res.body.error.code }).toEqual({
        url,
        status: 404,
        code: 'WORKFLOW_NOT_FOUND',
      });
      expect(res.body.error.message).toContain(missing);
    }
  });

  it('WEBHOOK: the receiver gets the rendered body; 500 then 200 retries; the status and body are in the output', async () => {
    receiver.answers = [
      { status: 500, body: 'boom' },
      { status: 200, body: 'ok '.repeat(1000) },
    ];
    const w = await create({
      trigger: { type: 'MANUAL' },
      steps: [
        {
          id: 'hook',
          type: 'WEBHOOK',
          url: `${receiver.url}/hook`,
          method: 'POST',
          headers: { 'x-who': '{{ contact.email }}' },
          body: '{"email":"{{ email }}","n":{{ n }}}',
        },
      ],
    });
    expect(
      (
        await req('POST', `/workflows/${w.id}/executions`, {
          email: 'hook@example.org',
          data: { n: 7 },
        })
      ).status,
    ).toBe(202);
    const [x] = await waitForExecutions(w.id, (xs) => finished(xs, 1));
    expect(x.status).toBe('COMPLETED');
    const hits = receiver.requests.filter((r) => r.path === '/hook');
    expect(hits).toHaveLength(2);
    expect(JSON.parse(hits[1].body)).toEqual({ email: 'hook@example.org', n: 7 });
    expect(hits[1].headers['x-who']).toBe('hook@example.org');
    expect(x.steps[0].output.status).toBe(200);
    expect(Buffer.byteLength(x.steps[0].output.body)).toBeLessThanOrEqual(1024);
  });

  it('WEBHOOK: private targets are refused (no retries) unless allowed; a redirect is not followed', async () => {
    // The redirect: answered 302 towards another path of the receiver, which is never asked.
    receiver.requests.length = 0;
    receiver.answers = [
      { status: 302, body: '', headers: { location: `${receiver.url}/elsewhere` } },
    ];
    const redirect = await create({
      trigger: { type: 'MANUAL' },
      steps: [{ id: 'hook', type: 'WEBHOOK', url: `${receiver.url}/moved`, method: 'GET' }],
    });
    await req('POST', `/workflows/${redirect.id}/executions`, { email: 'redirect@example.org' });
    const [r] = await waitForExecutions(redirect.id, (xs) => finished(xs, 1));
    expect(r.steps[0]).toMatchObject({ status: 'COMPLETED', output: { status: 302 } });
    expect(receiver.requests.map((q) => q.path)).toEqual(['/moved']);

    // WEBHOOK_ALLOW_PRIVATE=false: the worker reads the flag at each call.
    const config = t.app.app.get(APP_CONFIG) as AppConfig;
    config.webhookAllowPrivate = false;
    try {
      const targets = [
        'http://127.0.0.1:9/x',
        'http://10.0.0.1/x',
        'http://169.254.169.254/latest/meta-data',
        'http://[::1]:9/x',
        `http://localhost:${receiver.port}/x`,
      ];
      const ids: string[] = [];
      for (const [i, url] of targets.entries()) {
        const w = await create({
          name: `ssrf ${i}`,
          trigger: { type: 'MANUAL' },
          steps: [{ id: 'hook', type: 'WEBHOOK', url, method: 'POST', body: '{}' }],
        });
        ids.push(w.id);
        expect(
          (await req('POST', `/workflows/${w.id}/executions`, { email: `ssrf${i}@example.org` }))
            .status,
        ).toBe(202);
      }
      for (const [i, id] of ids.entries()) {
        const [x] = await waitForExecutions(id, (xs) => finished(xs, 1), 20_000);
        expect({
          url: targets[i],
          status: x.status,
          attempts: x.steps[0]?.output?.attempts,
        }).toEqual({ url: targets[i], status: 'FAILED', attempts: 1 });
      }
      expect(receiver.requests.map((q) => q.path)).toEqual(['/moved']);
    } finally {
      config.webhookAllowPrivate = true;
    }
  });

  it('WEBHOOK failing every attempt ends FAILED and records workflow.execution.failed', async () => {
    receiver.answers = Array.from({ length: 5 }, () => ({ status: 503, body: 'down' }));
    const w = await create({
      trigger: { type: 'MANUAL' },
      steps: [
        { id: 'hook', type: 'WEBHOOK', url: `${receiver.url}/down`, method: 'POST', body: '{}' },
      ],
    });
    await req('POST', `/workflows/${w.id}/executions`, { email: 'down@example.org' });
    const [x] = await waitForExecutions(w.id, (xs) => finished(xs, 1));
    expect(x.status).toBe('FAILED');
    expect(x.steps[0]).toMatchObject({ status: 'FAILED', output: { status: 503, attempts: 5 } });
    expect(receiver.requests.filter((r) => r.path === '/down')).toHaveLength(5);
    const events = (await req('GET', '/events?name=workflow.execution.failed')).body.data
      .items as Json[];
    expect(events.some((e) => e.data.executionId === x.id)).toBe(true);
  });

  it('SEGMENT_ENTRY starts within a second of the track that brings the contact in; an update that takes it out fires SEGMENT_EXIT; a lapsed window exits by the periodic job', async () => {
    const segment = await req('POST', '/segments', {
      name: 'Pro users',
      condition: {
        logic: 'AND',
        conditions: [{ field: 'data.tier', operator: 'equals', value: 'pro' }],
      },
    });
    expect(segment.status).toBe(201);
    const recent = await req('POST', '/segments', {
      name: 'Visited lately',
      condition: {
        logic: 'AND',
        conditions: [
          {
            field: 'event.visited',
            operator: 'triggeredWithin',
            value: { amount: 1, unit: 'hours' },
          },
        ],
      },
    });
    // The id in capitals (a UUID is case-insensitive): the trigger still names the lowercase membership event.
    const entry = await create({
      trigger: { type: 'SEGMENT_ENTRY', segmentId: String(segment.body.data.id).toUpperCase() },
      steps: [{ id: 'in', type: 'UPDATE_CONTACT', data: { welcomed: true } }],
    });
    const exit = await create({
      trigger: { type: 'SEGMENT_EXIT', segmentId: segment.body.data.id },
      steps: [{ id: 'out', type: 'UPDATE_CONTACT', data: { missed: true } }],
    });
    const lapsed = await create({
      trigger: { type: 'SEGMENT_EXIT', segmentId: recent.body.data.id },
      steps: [{ id: 'gone', type: 'EXIT' }],
    });

    const answered = Date.now();
    expect((await track('tier@example.org', 'upgraded', { tier: 'pro' })).status).toBe(200);
    const [x] = await waitForExecutions(entry.id, (xs) => xs.length === 1, 5_000);
    expect(x).toBeDefined();
    const startedWithin = new Date(x.startedAt).getTime() - answered;
    expect(startedWithin).toBeLessThan(1_000);
    await waitForExecutions(entry.id, (xs) => finished(xs, 1));
    const contactId = x.contactId as string;
    expect((await req('PATCH', `/contacts/${contactId}`, { data: { tier: 'free' } })).status).toBe(
      200,
    );
    const [out] = await waitForExecutions(exit.id, (xs) => finished(xs, 1), 5_000);
    expect(out).toMatchObject({ contactId, status: 'COMPLETED' });
    expect((await t.contact(contactId)).data).toMatchObject({ welcomed: true, missed: true });

    // A time window: the visit is moved back beyond the hour; the periodic job sees the contact leave.
    await track('visitor@example.org', 'visited');
    const visitor = (await req('GET', '/contacts?email=visitor@example.org')).body.data.items[0];
    await pollUntil(
      () =>
        db.query(
          `SELECT count(*)::int AS n FROM segment_memberships WHERE segment_id = $1 AND contact_id = $2`,
          [recent.body.data.id, visitor.id],
        ),
      (rows: { n: number }[]) => rows[0].n === 1,
      5_000,
    );
    await db.query(
      `UPDATE events SET created_at = created_at - interval '2 hours' WHERE contact_id = $1 AND name = 'visited'`,
      [visitor.id],
    );
    const [gone] = await waitForExecutions(lapsed.id, (xs) => finished(xs, 1), 20_000);
    expect(gone).toMatchObject({ contactId: visitor.id, status: 'EXITED' });

    // A segment that triggers workflows cannot be deleted; once they are gone it can.
    const refused = await req('DELETE', `/segments/${segment.body.data.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('CONFLICT');
    await req('DELETE', `/workflows/${entry.id}`);
    expect((await req('DELETE', `/segments/${segment.body.data.id}`)).status).toBe(409);
    await req('DELETE', `/workflows/${exit.id}`);
    expect((await req('DELETE', `/segments/${segment.body.data.id}`)).status).toBe(200);
  });

  it('GET /segments/{id}/contacts of a segment kept for a workflow lists the membership its total counts', async () => {
    const segment = await req('POST', '/segments', {
      name: 'Gold',
      condition: {
        logic: 'AND',
        conditions: [{ field: 'data.level', operator: 'equals', value: 'gold' }],
      },
    });
    expect(segment.status).toBe(201);
    const segmentId = segment.body.data.id as string;
    const w = await create({
      trigger: { type: 'SEGMENT_ENTRY', segmentId },
      steps: [{ type: 'EXIT' }],
    });
    for (const email of ['gold1@example.org', 'gold2@example.org'])
      await track(email, 'leveled', { level: 'gold' });
    await waitForExecutions(w.id, (xs) => finished(xs, 2));
    const page = async () =>
      (await req('GET', `/segments/${segmentId}/contacts?limit=100`)).body.data as Json;
    const agree = (p: Json) => p.total === p.items.length;
    expect(await page()).toMatchObject({ total: 2 });

    // Hold the evaluator: a contact that no longer matches is still a member until its membership is re-evaluated.
    const listener = t.app.app.get(SegmentDirtyListener);
    const queue = t.app.app.get<Queue>(getQueueToken(QUEUES.SEGMENTS), { strict: false });
    await listener.stop();
    await queue.pause();
    try {
      // A sweep that was already running when the queue paused could still evaluate the change below.
      expect(
        await pollUntil(
          () => queue.getActiveCount(),
          (n) => n === 0,
          5_000,
        ),
      ).toBe(0);
      const contactId = (await req('GET', '/contacts?email=gold1@example.org')).body.data.items[0]
        .id as string;
      expect(
        (await req('PATCH', `/contacts/${contactId}`, { data: { level: 'silver' } })).status,
      ).toBe(200);
      const held = await page();
      expect({ total: held.total, items: held.items.length }).toEqual({ total: 2, items: 2 });
      expect((await req('GET', `/segments/${segmentId}`)).body.data.memberCount).toBe(2);
    } finally {
      await queue.resume();
      await listener.start();
    }
    const settled = await pollUntil(page, (p) => p.total === 1 && agree(p), 10_000);
    expect({ total: settled.total, emails: settled.items.map((c: Json) => c.email) }).toEqual({
      total: 1,
      emails: ['gold2@example.org'],
    });
    await req('DELETE', `/workflows/${w.id}`);
  });

  it('cancel of one execution; delete cancels the running ones; executions list filters', async () => {
    const w = await create({
      trigger: { type: 'MANUAL' },
      steps: [{ id: 'long', type: 'DELAY', amount: 1, unit: 'hours' }],
    });
    const one = (await req('POST', `/workflows/${w.id}/executions`, { email: 'c1@example.org' }))
      .body.data;
    await req('POST', `/workflows/${w.id}/executions`, { email: 'c2@example.org' });
    await waitForExecutions(
      w.id,
      (xs) => xs.length === 2 && xs.every((x) => x.status === 'WAITING'),
    );
    const cancelled = await req('POST', `/workflows/${w.id}/executions/${one.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data).toMatchObject({ status: 'CANCELLED', exitReason: 'cancelled' });
    expect((await req('POST', `/workflows/${w.id}/executions/${one.id}/cancel`)).status).toBe(409);
    expect(await executions(w.id, '&status=WAITING')).toHaveLength(1);
    expect(await executions(w.id, `&contactId=${one.contactId}`)).toHaveLength(1);
    expect((await req('DELETE', `/workflows/${w.id}`)).status).toBe(200);
    expect((await req('GET', `/workflows/${w.id}`)).status).toBe(404);
    const rows = await db.query(
      `SELECT status, exit_reason FROM workflow_executions WHERE workflow_id = $1 ORDER BY id`,
      [w.id],
    );
    expect(rows).toEqual([
      { status: 'CANCELLED', exit_reason: 'cancelled' },
      { status: 'CANCELLED', exit_reason: 'workflow_deleted' },
    ]);
  });
});
