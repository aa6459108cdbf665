import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { DataSource } from 'typeorm';
import { workflowStepJobId } from '../src/queue/jobs';
import { QUEUES } from '../src/queue/queue.constants';
import { EmailsService } from '../src/sending/emails.service';
import { WorkflowsRecovery } from '../src/workflows/workflows.recovery';
import { WEBHOOK_RUNS_IN_FLIGHT, WorkflowEngine } from '../src/workflows/workflow-engine';
import { StepJob } from '../src/workflows/workflow-step-interpreter';
import { HttpReceiver, startHttpReceiver } from './support/http-receiver';
import { pollUntil } from './support/poll';
import { SendingTest, startSendingTest } from './support/sending';

/**
 * Batched workflow steps end to end (real Postgres, Redis, SMTP server). The
 * engine runs the steps of a worker's concurrent jobs in one transaction
 * (WorkflowEngine.runBatch): one lock statement, shared reads (contacts,
 * CONDITION results, trigger names), and the step records, transitions and
 * emails of all of them written in a few statements. These specs start many
 * executions at once so that their steps share batches, and check that
 * nothing of one execution reaches another:
 *
 * 1. UPDATE_CONTACT → CONDITION → SEND_EMAIL for 60 contacts tracked at once:
 *    every execution completes with its own three records, its own update,
 *    the `then` branch, and exactly one email rendered from its own contact.
 * 2. CONDITION results differ per contact inside one batch: each execution
 *    takes the branch its own contact's data says, and the branch's update
 *    lands on that contact only.
 * 3. A step failure inside a batch (a render over the sandbox's memory limit,
 *    set on 5 contacts while their executions sit in a DELAY) fails those
 *    executions only; 3 contacts deleted meanwhile take their executions with
 *    them (ON DELETE CASCADE); the other 32 complete with one email each.
 * 4. WEBHOOK first steps of 80 executions released at once (a receiver that
 *    answers after 500 ms): the calls overlap (a batch hands each WEBHOOK
 *    job's call off to run on its own), but no more than
 *    WEBHOOK_RUNS_IN_FLIGHT (32) at once although the worker holds up to
 *    1,024 jobs; each execution calls once and completes.
 * 5. A FIRST step that fails (SEND_EMAIL whose render is over the memory
 *    limit): the FAILED record of that step, and its id in
 *    `workflow.execution.failed`.
 * 6. An UPDATE_CONTACT {subscribed: false} and the due timeout of another
 *    execution of the same contact waiting for `contact.unsubscribed`, in one
 *    batch: the event the update records ends the wait (events trigger) inside
 *    the batch's transaction; that move stands, the batch's timeout record and
 *    job are dropped, and the execution takes `then` once.
 *
 * 7. SEND_EMAIL steps past a batch's share of rendered mail
 *    (`emailCharsPerBatch`, lowered here to one character: one message a
 *    batch) go to the next batch: 30 executions released at once each send
 *    exactly one email, every batch inserted one message, and some jobs were
 *    in more than one batch.
 * 8. The recovery pages on past overdue executions whose jobs are alive (a
 *    queue held back): with pages of two, five overdue executions whose last
 *    two lost their jobs all have a job again after three runs, where the
 *    oldest page alone would never reach them.
 *
 * Specs 1-3 also check, through a spy on the engine, that the steps did run
 * in shared batches that committed (no batch fell back to running its jobs
 * one by one): without that the isolation checks above would prove nothing
 * about batching. Spec 6 hands the two jobs to the engine itself, in one
 * batch, with the queue paused.
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** One runBatch call as the spy saw it: the jobs and what each one answered (once all have settled). */
interface SeenBatch {
  jobs: StepJob[];
  results: { ok: boolean; value?: string; error?: unknown }[];
}

const FROM = 'hello@acme.test';

describe('workflow steps in shared batches (e2e)', () => {
  let t: SendingTest;
  let db: DataSource;
  let engine: WorkflowEngine;
  let queue: Queue;
  let batches: SeenBatch[];
  let alone: StepJob[];

  const req = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
    t.app.request({ method, url, key: t.project.secretKey, body });
  const track = (email: string, event: string, data?: Json) =>
    req('POST', '/v1/track', { email, event, data });
  const create = async (body: Json) => {
    const res = await req('POST', '/workflows', { name: 'Batch', enabled: true, ...body });
    expect({ status: res.status, body: res.status === 201 ? null : res.body }).toEqual({
      status: 201,
      body: null,
    });
    return res.body.data as Json;
  };
  const template = async (body: Json) => {
    const res = await t.createTemplate({
      name: 'Batch',
      from: FROM,
      type: 'TRANSACTIONAL',
      ...body,
    });
    expect({ status: res.status, body: res.status === 201 ? null : res.body }).toEqual({
      status: 201,
      body: null,
    });
    return res.body.data.id as string;
  };
  const executions = async (workflowId: string) => {
    const res = await req('GET', `/workflows/${workflowId}/executions?limit=100`);
    expect(res.status).toBe(200);
    return res.body.data.items as Json[];
  };
  const waitForExecutions = (
    workflowId: string,
    predicate: (xs: Json[]) => boolean,
    timeoutMs = 30_000,
  ) => pollUntil(() => executions(workflowId), predicate, timeoutMs, 100);
  const finished = (xs: Json[], n: number) =>
    xs.length === n && xs.every((x) => !['RUNNING', 'WAITING'].includes(x.status));
  /** The project's contacts whose email contains `search` (at most 100), by id. */
  const contactsMatching = async (search: string) => {
    const res = await req('GET', `/contacts?search=${encodeURIComponent(search)}&limit=100`);
    expect(res.status).toBe(200);
    return new Map((res.body.data.items as Json[]).map((c) => [c.id as string, c]));
  };
  const emailRows = (executionIds: string[]) =>
    db.query(
      `SELECT id, contact_id AS "contactId", to_email AS "toEmail", workflow_execution_id AS "executionId",
              workflow_step_id AS "stepId", subject, source
         FROM emails WHERE workflow_execution_id = ANY($1::uuid[])`,
      [executionIds],
    ) as Promise<Json[]>;
  const stepsOf = (x: Json) => (x.steps as Json[]).map((s) => [s.stepId, s.type, s.status]);
  /** Pauses the workflows queue (resume it in a `finally`) once the jobs taken before the pause have finished. */
  const pauseQueue = async () => {
    await queue.pause();
    expect(
      await pollUntil(
        () => queue.getActiveCount(),
        (n) => n === 0,
        15_000,
      ),
    ).toBe(0);
  };
  /** The project's events of this name (at most 100), newest first. */
  const eventsNamed = async (name: string) => {
    const res = await req('GET', `/events?name=${encodeURIComponent(name)}&limit=100`);
    expect(res.status).toBe(200);
    return res.body.data.items as Json[];
  };
  /** Batches (as the spy saw them) holding at least two of these executions' jobs. */
  const sharedBatches = (ids: Set<string>) =>
    batches.filter((b) => b.jobs.filter((j) => ids.has(j.executionId)).length >= 2);

  beforeAll(async () => {
    // Loopback WEBHOOK targets allowed (the SSRF guard refuses them otherwise).
    t = await startSendingTest('Workflow batches', { WEBHOOK_ALLOW_PRIVATE: 'true' });
    db = t.app.app.get(DataSource);
    engine = t.app.app.get(WorkflowEngine);
    queue = t.app.app.get<Queue>(getQueueToken(QUEUES.WORKFLOWS), { strict: false });
  }, 60_000);

  beforeEach(() => {
    batches = [];
    alone = [];
    // Call through, recording each batch's jobs and answers, and each job run on its own (a batch that rolled
    // back, or a WEBHOOK step's call: the batch answers that job with the promise of run()).
    const runBatch = engine.runBatch.bind(engine);
    jest.spyOn(engine, 'runBatch').mockImplementation(async (jobs: StepJob[]) => {
      const results = await runBatch(jobs);
      const seen: SeenBatch = { jobs: [...jobs], results: [] };
      batches.push(seen);
      // A WEBHOOK job's answer settles after its own call: recorded when it comes, without holding the batch.
      void Promise.all(results).then((answers) => {
        seen.results = answers;
      });
      return results;
    });
    const run = engine.run.bind(engine);
    jest.spyOn(engine, 'run').mockImplementation((job: StepJob) => {
      alone.push(job);
      return run(job);
    });
  });

  afterEach(() => {
    jest.restoreAllMocks();
  });

  afterAll(async () => {
    await t?.close();
  });

  it('60 contacts tracked at once: UPDATE_CONTACT → CONDITION → SEND_EMAIL, each with its own records, update and email', async () => {
    const templateId = await template({
      subject: 'Tier {{ contact.data.tier }} for {{ contact.email }}',
      body: '<p>{{ email }} is {{ contact.data.tier }}, ref {{ ref }}</p>',
    });
    const w = await create({
      trigger: { type: 'EVENT', event: 'batch-upgrade' },
      steps: [
        { id: 'upgrade', type: 'UPDATE_CONTACT', data: { tier: 'gold' } },
        {
          id: 'check',
          type: 'CONDITION',
          condition: {
            logic: 'AND',
            conditions: [{ field: 'data.tier', operator: 'equals', value: 'gold' }],
          },
          then: [],
          else: [{ id: 'out', type: 'EXIT' }],
        },
        { id: 'mail', type: 'SEND_EMAIL', templateId },
      ],
    });
    const n = 60;
    const emails = Array.from({ length: n }, (_, i) => `upgrade-${i}@batch-one.example.org`);
    const refOf = new Map(emails.map((email, i) => [email, `r-${i}`]));
    // `tier` is tracked as bronze: only the first step makes it gold, so a mail that says gold saw the update.
    const answers = await Promise.all(
      emails.map((email) =>
        track(email, 'batch-upgrade', { tier: 'bronze', ref: refOf.get(email) }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(emails.map(() => 200));

    const xs = await waitForExecutions(w.id, (all) => finished(all, n));
    expect(xs.map((x) => x.status)).toEqual(emails.map(() => 'COMPLETED'));
    const contacts = await contactsMatching('@batch-one.example.org');
    expect(contacts.size).toBe(n);
    expect(new Set(xs.map((x) => x.contactId)).size).toBe(n);

    for (const x of xs) {
      const contact = contacts.get(x.contactId) as Json;
      const ref = refOf.get(contact.email);
      expect({ email: contact.email, steps: stepsOf(x) }).toEqual({
        email: contact.email,
        steps: [
          ['upgrade', 'UPDATE_CONTACT', 'COMPLETED'],
          ['check', 'CONDITION', 'COMPLETED'],
          ['mail', 'SEND_EMAIL', 'COMPLETED'],
        ],
      });
      // The update's output is this contact's row after the update (its own ref), not another's.
      expect({ email: contact.email, output: x.steps[0].output }).toEqual({
        email: contact.email,
        output: { data: { tier: 'gold', ref }, subscribed: true },
      });
      expect({ email: contact.email, output: x.steps[1].output }).toEqual({
        email: contact.email,
        output: { result: true, branch: 'then' },
      });
      expect(contact.data).toEqual({ tier: 'gold', ref });
    }

    // Exactly one email record per execution, for the execution's own contact, rendered from that contact.
    const rows = await emailRows(xs.map((x) => x.id));
    expect(rows).toHaveLength(n);
    const byExecution = new Map(rows.map((r) => [r.executionId as string, r]));
    expect(byExecution.size).toBe(n);
    for (const x of xs) {
      const contact = contacts.get(x.contactId) as Json;
      const row = byExecution.get(x.id) as Json;
      expect({ execution: x.id, row }).toEqual({
        execution: x.id,
        row: {
          id: x.steps[2].output.emailId,
          contactId: x.contactId,
          toEmail: contact.email,
          executionId: x.id,
          stepId: 'mail',
          subject: `Tier gold for ${contact.email}`,
          source: 'WORKFLOW',
        },
      });
    }

    // 60 messages at the SMTP sink, one per contact, each with its own address and ref in it.
    const ours = () =>
      t.smtp.messages.filter((m) => m.to.some((to) => to.endsWith('@batch-one.example.org')));
    const received = await pollUntil(
      async () => ours(),
      (ms) => ms.length >= n,
      30_000,
    );
    expect(received).toHaveLength(n);
    for (const email of emails) {
      const messages = t.smtp.messagesTo(email);
      expect({ email, count: messages.length }).toEqual({ email, count: 1 });
      const [message] = messages;
      expect({ email, to: message.to, subject: message.parsed?.subject }).toEqual({
        email,
        to: [email],
        subject: `Tier gold for ${email}`,
      });
      expect(message.parsed?.html).toContain(`<p>${email} is gold, ref ${refOf.get(email)}</p>`);
    }

    // The steps did share batches: each of the three steps (versions 0, 1, 2: one transition per step) ran
    // in a batch with others of this workflow, and every batch committed (none fell back to its jobs alone).
    const ids = new Set(xs.map((x) => x.id as string));
    const shared = sharedBatches(ids);
    for (const version of [0, 1, 2]) {
      const most = Math.max(
        0,
        ...shared.map(
          (b) => b.jobs.filter((j) => ids.has(j.executionId) && j.version === version).length,
        ),
      );
      expect({ version, most: most >= 2 }).toEqual({ version, most: true });
    }
    expect(alone.filter((j) => ids.has(j.executionId))).toEqual([]);
  }, 90_000);

  it('CONDITION results in one batch are each contact’s own: each execution takes its own branch and updates only its contact', async () => {
    const w = await create({
      trigger: { type: 'EVENT', event: 'batch-score' },
      steps: [
        { id: 'seen', type: 'UPDATE_CONTACT', data: { seen: true } },
        {
          id: 'check',
          type: 'CONDITION',
          condition: {
            logic: 'AND',
            conditions: [{ field: 'data.score', operator: 'greaterThanOrEqual', value: 50 }],
          },
          then: [{ id: 'high', type: 'UPDATE_CONTACT', data: { band: 'high' } }],
          else: [
            { id: 'low', type: 'UPDATE_CONTACT', data: { band: 'low' } },
            { id: 'stop', type: 'EXIT' },
          ],
        },
        { id: 'done', type: 'UPDATE_CONTACT', data: { done: true } },
      ],
    });
    const n = 40;
    // Scores alternate around the threshold, so every batch of these executions holds both outcomes.
    const people = Array.from({ length: n }, (_, i) => ({
      email: `score-${i}@batch-two.example.org`,
      score: i % 2 === 0 ? 50 + i : 49 - i,
    }));
    const answers = await Promise.all(
      people.map((p) => track(p.email, 'batch-score', { score: p.score })),
    );
    expect(answers.map((a) => a.status)).toEqual(people.map(() => 200));

    const xs = await waitForExecutions(w.id, (all) => finished(all, n));
    const contacts = await contactsMatching('@batch-two.example.org');
    expect(contacts.size).toBe(n);
    const high = new Set<string>();
    for (const x of xs) {
      const contact = contacts.get(x.contactId) as Json;
      const person = people.find((p) => p.email === contact.email) as {
        email: string;
        score: number;
      };
      const isHigh = person.score >= 50;
      if (isHigh) high.add(x.id);
      expect({
        email: person.email,
        status: x.status,
        steps: stepsOf(x),
        branch: x.steps[1]?.output,
      }).toEqual({
        email: person.email,
        status: isHigh ? 'COMPLETED' : 'EXITED',
        steps: isHigh
          ? [
              ['seen', 'UPDATE_CONTACT', 'COMPLETED'],
              ['check', 'CONDITION', 'COMPLETED'],
              ['high', 'UPDATE_CONTACT', 'COMPLETED'],
              ['done', 'UPDATE_CONTACT', 'COMPLETED'],
            ]
          : [
              ['seen', 'UPDATE_CONTACT', 'COMPLETED'],
              ['check', 'CONDITION', 'COMPLETED'],
              ['low', 'UPDATE_CONTACT', 'COMPLETED'],
              ['stop', 'EXIT', 'COMPLETED'],
            ],
        branch: { result: isHigh, branch: isHigh ? 'then' : 'else' },
      });
      expect({ email: person.email, data: contact.data }).toEqual({
        email: person.email,
        data: isHigh
          ? { score: person.score, seen: true, band: 'high', done: true }
          : { score: person.score, seen: true, band: 'low' },
      });
    }
    expect(high.size).toBe(n / 2);

    // At least one committed batch evaluated the CONDITION (version 1) of a high and a low contact together.
    const ids = new Set(xs.map((x) => x.id as string));
    const mixed = batches.filter((b) => {
      const conditionJobs = b.jobs.filter((j) => ids.has(j.executionId) && j.version === 1);
      return (
        conditionJobs.some((j) => high.has(j.executionId)) &&
        conditionJobs.some((j) => !high.has(j.executionId))
      );
    });
    expect(mixed.length).toBeGreaterThan(0);
    expect(alone.filter((j) => ids.has(j.executionId))).toEqual([]);
  }, 90_000);

  it('a step failure in a batch fails only its own executions; contacts deleted during a DELAY take their executions; the rest complete with one email each', async () => {
    // `repeat` comes from the contact: 1 renders one "!", a hundred million exceeds the sandbox's memory limit
    // (TemplateRenderError, a step failure) for that contact alone.
    const templateId = await template({
      subject: 'Reminder for {{ contact.email }}',
      body: '<p>Reminder for {{ email }}{% for i in (1..contact.data.repeat) %}!{% endfor %}</p>',
    });
    const w = await create({
      trigger: { type: 'MANUAL' },
      steps: [
        { id: 'nap', type: 'DELAY', amount: 2, unit: 'seconds' },
        { id: 'mail', type: 'SEND_EMAIL', templateId },
      ],
    });
    const n = 40;
    const emails = Array.from({ length: n }, (_, i) => `nap-${i}@batch-three.example.org`);
    const started = await Promise.all(
      emails.map((email) =>
        req('POST', `/workflows/${w.id}/executions`, { email, data: { repeat: 1 } }),
      ),
    );
    expect(started.map((s) => s.status)).toEqual(emails.map(() => 202));
    const waiting = await waitForExecutions(
      w.id,
      (xs) => xs.length === n && xs.every((x) => x.status === 'WAITING'),
      30_000,
    );
    expect(waiting.map((x) => x.status)).toEqual(emails.map(() => 'WAITING'));

    // While they wait: 5 contacts get data their template cannot render, 3 are deleted (spread over the batch).
    const contactOf = new Map(started.map((s, i) => [emails[i], s.body.data.contactId as string]));
    const failing = [3, 11, 19, 27, 35].map((i) => emails[i]);
    const deleted = [6, 22, 38].map((i) => emails[i]);
    const changes = await Promise.all([
      ...failing.map((email) =>
        req('PATCH', `/contacts/${contactOf.get(email)}`, { data: { repeat: 100_000_000 } }),
      ),
      ...deleted.map((email) => req('DELETE', `/contacts/${contactOf.get(email)}`)),
    ]);
    expect(changes.map((c) => c.status)).toEqual([...failing, ...deleted].map(() => 200));
    // The changes must have landed before the first DELAY ended, or the run proves nothing.
    expect((await executions(w.id)).filter((x) => x.status !== 'WAITING')).toEqual([]);

    const survivors = n - deleted.length;
    const xs = await waitForExecutions(w.id, (all) => finished(all, survivors));
    expect(xs).toHaveLength(survivors);
    const emailOf = new Map([...contactOf].map(([email, id]) => [id, email]));
    const deletedIds = new Set(deleted.map((email) => contactOf.get(email)));
    expect(xs.filter((x) => deletedIds.has(x.contactId))).toEqual([]);

    const failed = xs.filter((x) => failing.includes(emailOf.get(x.contactId) as string));
    const completed = xs.filter((x) => !failing.includes(emailOf.get(x.contactId) as string));
    expect(failed).toHaveLength(failing.length);
    expect(completed).toHaveLength(survivors - failing.length);
    for (const x of failed) {
      const email = emailOf.get(x.contactId);
      expect({ email, status: x.status, steps: stepsOf(x) }).toEqual({
        email,
        status: 'FAILED',
        steps: [
          ['nap', 'DELAY', 'COMPLETED'],
          ['mail', 'SEND_EMAIL', 'FAILED'],
        ],
      });
      expect({ email, error: x.steps[1].error, output: x.steps[1].output }).toEqual({
        email,
        error: expect.stringContaining('memory'),
        output: null,
      });
    }
    for (const x of completed) {
      const email = emailOf.get(x.contactId);
      expect({ email, status: x.status, steps: stepsOf(x) }).toEqual({
        email,
        status: 'COMPLETED',
        steps: [
          ['nap', 'DELAY', 'COMPLETED'],
          ['mail', 'SEND_EMAIL', 'COMPLETED'],
        ],
      });
    }

    // One email record per completed execution, its own; none for a failed one (the failed step's work undone).
    const rows = await emailRows(xs.map((x) => x.id));
    expect(rows.map((r) => r.executionId).sort()).toEqual(completed.map((x) => x.id).sort());
    for (const x of completed) {
      const row = rows.find((r) => r.executionId === x.id) as Json;
      const email = emailOf.get(x.contactId);
      expect({
        id: row.id,
        contactId: row.contactId,
        toEmail: row.toEmail,
        subject: row.subject,
      }).toEqual({
        id: x.steps[1].output.emailId,
        contactId: x.contactId,
        toEmail: email,
        subject: `Reminder for ${email}`,
      });
    }
    const strays = await db.query(
      `SELECT count(*)::int AS n FROM emails WHERE contact_id = ANY($1::uuid[])`,
      [failed.map((x) => x.contactId)],
    );
    expect(strays[0].n).toBe(0);

    // workflow.execution.failed once for each failed execution, and for no other.
    const failures = (await eventsNamed('workflow.execution.failed')).filter(
      (e) => e.data.workflowId === w.id,
    );
    expect(failures.map((e) => e.data.executionId).sort()).toEqual(failed.map((x) => x.id).sort());
    expect(failures.every((e) => e.data.stepId === 'mail')).toBe(true);

    // One message for each completed execution's contact, none for the failed or deleted ones.
    const ours = () =>
      t.smtp.messages.filter((m) => m.to.some((to) => to.endsWith('@batch-three.example.org')));
    const received = await pollUntil(
      async () => ours(),
      (ms) => ms.length >= completed.length,
      30_000,
    );
    expect(received.map((m) => m.to.join(',')).sort()).toEqual(
      completed.map((x) => emailOf.get(x.contactId)).sort(),
    );
    for (const m of received) {
      expect(m.parsed?.subject).toBe(`Reminder for ${m.to[0]}`);
      expect(m.parsed?.html).toContain(`<p>Reminder for ${m.to[0]}!</p>`);
    }

    // Nothing left open, and the workflow's counters agree.
    const open = await db.query(
      `SELECT count(*)::int AS n FROM workflow_executions WHERE workflow_id = $1 AND status IN ('RUNNING', 'WAITING')`,
      [w.id],
    );
    expect(open[0].n).toBe(0);
    expect((await req('GET', `/workflows/${w.id}`)).body.data.stats).toEqual({
      running: 0,
      waiting: 0,
      completed: completed.length,
      exited: 0,
      failed: failed.length,
      cancelled: 0,
    });

    // The failures happened inside a shared batch that committed: one batch answered 'failed' for a failing
    // execution and 'sent' for another, and no job of these executions ran alone.
    const failedIds = new Set(failed.map((x) => x.id as string));
    const completedIds = new Set(completed.map((x) => x.id as string));
    const answered = (b: SeenBatch, ids: Set<string>, value: string) =>
      b.jobs.some(
        (j, i) =>
          ids.has(j.executionId) && b.results[i]?.ok === true && b.results[i]?.value === value,
      );
    const mixed = batches.filter(
      (b) => answered(b, failedIds, 'failed') && answered(b, completedIds, 'sent'),
    );
    expect(mixed.length).toBeGreaterThan(0);
    expect(
      alone.filter((j) => failedIds.has(j.executionId) || completedIds.has(j.executionId)),
    ).toEqual([]);
  }, 90_000);

  it('WEBHOOK first steps of 80 executions released at once: the calls overlap up to their limit, each execution calls once and completes', async () => {
    const receiver: HttpReceiver = await startHttpReceiver();
    const answerMs = 500;
    receiver.fallback = { status: 200, body: 'ok', delayMs: answerMs };
    try {
      const w = await create({
        trigger: { type: 'MANUAL' },
        steps: [
          {
            id: 'hook',
            type: 'WEBHOOK',
            url: `${receiver.url}/hook`,
            method: 'POST',
            body: '{"email":"{{ contact.email }}"}',
          },
        ],
      });
      const n = 80;
      const emails = Array.from({ length: n }, (_, i) => `hook-${i}@batch-four.example.org`);
      // Started while the queue is paused: all 80 first jobs are there when the worker takes them.
      await pauseQueue();
      try {
        const started = await Promise.all(
          emails.map((email) => req('POST', `/workflows/${w.id}/executions`, { email })),
        );
        expect(started.map((s) => s.status)).toEqual(emails.map(() => 202));
        expect(receiver.requests).toHaveLength(0);
      } finally {
        await queue.resume();
      }

      const xs = await waitForExecutions(w.id, (all) => finished(all, n), 30_000);
      expect(xs.map((x) => x.status)).toEqual(emails.map(() => 'COMPLETED'));
      for (const x of xs) {
        expect({ execution: x.id, steps: x.steps }).toEqual({
          execution: x.id,
          steps: [
            expect.objectContaining({
              stepId: 'hook',
              type: 'WEBHOOK',
              status: 'COMPLETED',
              output: { status: 200, body: 'ok', attempts: 1 },
            }),
          ],
        });
      }

      // Exactly one call per execution, each with its own contact.
      expect(receiver.requests).toHaveLength(n);
      expect(receiver.requests.map((r) => JSON.parse(r.body).email).sort()).toEqual(
        [...emails].sort(),
      );

      // The calls overlapped: each request is answered `answerMs` after it arrived, so the requests in flight
      // when one arrives are those that arrived less than `answerMs` before it. Calls made one after another
      // (a batch waiting on each) would never have more than the batches in flight (2) at once.
      const arrivals = receiver.requests.map((r) => r.at).sort((a, b) => a - b);
      const inFlight = arrivals.map(
        (at) => arrivals.filter((a) => a <= at && at < a + answerMs).length,
      );
      const most = Math.max(...inFlight);
      expect(most).toBeGreaterThanOrEqual(5);
      // ... and never more than the engine's limit on calls, although the worker held all 80 jobs at once.
      expect(WEBHOOK_RUNS_IN_FLIGHT).toBeLessThan(n);
      expect(most).toBeLessThanOrEqual(WEBHOOK_RUNS_IN_FLIGHT);

      // The batches handed each WEBHOOK job's call off and answered it once the call's step was written.
      const ids = new Set(xs.map((x) => x.id as string));
      const answers = batches.flatMap((b) =>
        b.jobs.flatMap((j, i) =>
          ids.has(j.executionId) && j.version === 0 ? [[j.executionId, b.results[i]] as const] : [],
        ),
      );
      expect(answers).toHaveLength(n);
      expect(answers.filter(([, a]) => !(a?.ok === true && a.value === 'webhook'))).toEqual([]);
    } finally {
      await receiver.close();
    }
  }, 90_000);

  it('a failing FIRST step (SEND_EMAIL over the render limit) records its FAILED step and names it in workflow.execution.failed', async () => {
    const templateId = await template({
      subject: 'Welcome {{ contact.email }}',
      body: '<p>Welcome {{ email }}{% for i in (1..contact.data.repeat) %}!{% endfor %}</p>',
    });
    const w = await create({
      trigger: { type: 'MANUAL' },
      steps: [
        { id: 'welcome', type: 'SEND_EMAIL', templateId },
        { id: 'noted', type: 'UPDATE_CONTACT', data: { welcomed: true } },
      ],
    });
    const n = 8;
    const emails = Array.from({ length: n }, (_, i) => `first-${i}@batch-five.example.org`);
    // Three of them start with data their render cannot hold (a hundred million "!"): their FIRST step fails.
    const failing = new Set([1, 4, 6].map((i) => emails[i]));
    const started = await Promise.all(
      emails.map((email) =>
        req('POST', `/workflows/${w.id}/executions`, {
          email,
          data: { repeat: failing.has(email) ? 100_000_000 : 1 },
        }),
      ),
    );
    expect(started.map((s) => s.status)).toEqual(emails.map(() => 202));
    const emailOf = new Map(started.map((s, i) => [s.body.data.id as string, emails[i]]));

    const xs = await waitForExecutions(w.id, (all) => finished(all, n));
    expect(xs).toHaveLength(n);
    const failed = xs.filter((x) => failing.has(emailOf.get(x.id) as string));
    expect(failed).toHaveLength(failing.size);
    for (const x of xs) {
      const email = emailOf.get(x.id);
      if (failing.has(email as string)) {
        // Exactly one record: the first step's, FAILED, with the render's error.
        expect({ email, status: x.status, steps: x.steps }).toEqual({
          email,
          status: 'FAILED',
          steps: [
            expect.objectContaining({
              stepId: 'welcome',
              type: 'SEND_EMAIL',
              status: 'FAILED',
              output: null,
              error: expect.stringContaining('memory'),
            }),
          ],
        });
      } else {
        expect({ email, status: x.status, steps: stepsOf(x) }).toEqual({
          email,
          status: 'COMPLETED',
          steps: [
            ['welcome', 'SEND_EMAIL', 'COMPLETED'],
            ['noted', 'UPDATE_CONTACT', 'COMPLETED'],
          ],
        });
      }
    }

    // workflow.execution.failed once per failed execution, naming the first step.
    const failures = (await eventsNamed('workflow.execution.failed')).filter(
      (e) => e.data.workflowId === w.id,
    );
    expect(failures.map((e) => [e.data.executionId, e.data.stepId, e.contactId]).sort()).toEqual(
      failed.map((x) => [x.id, 'welcome', x.contactId]).sort(),
    );
    expect(failures.every((e) => String(e.data.error).includes('memory'))).toBe(true);

    // The failed steps left no email behind; the others have theirs.
    const rows = await emailRows(xs.map((x) => x.id));
    expect(rows.map((r) => r.executionId).sort()).toEqual(
      xs
        .filter((x) => x.status === 'COMPLETED')
        .map((x) => x.id)
        .sort(),
    );
  }, 90_000);

  it('an UPDATE_CONTACT {subscribed: false} and a due WAIT_FOR_EVENT timeout of the same contact in one batch: the event ends the wait, which takes then once', async () => {
    const unsubscribed = 'contact.unsubscribed';
    const waiter = await create({
      name: 'Waits for the unsubscribe',
      trigger: { type: 'MANUAL' },
      steps: [
        {
          id: 'wait',
          type: 'WAIT_FOR_EVENT',
          event: unsubscribed,
          timeout: { amount: 2, unit: 'seconds' },
          then: [{ id: 'yes', type: 'UPDATE_CONTACT', data: { viaThen: true } }],
          else: [{ id: 'no', type: 'UPDATE_CONTACT', data: { viaElse: true } }],
        },
      ],
    });
    const updater = await create({
      name: 'Unsubscribes',
      trigger: { type: 'MANUAL' },
      steps: [{ id: 'unsub', type: 'UPDATE_CONTACT', subscribed: false }],
    });
    const email = 'both@batch-six.example.org';
    const b = await req('POST', `/workflows/${waiter.id}/executions`, { email });
    expect(b.status).toBe(202);
    const bId = b.body.data.id as string;
    const contactId = b.body.data.contactId as string;
    const [waiting] = await waitForExecutions(
      waiter.id,
      (xs) => xs.length === 1 && xs[0].status === 'WAITING',
      10_000,
    );
    expect(waiting.status).toBe('WAITING');
    const rowOf = async (id: string) =>
      (
        await db.query(
          `SELECT status, version, current_step_id AS "currentStepId", wait_event AS "waitEvent",
                  resume_event_id AS "resumeEventId"
             FROM workflow_executions WHERE id = $1`,
          [id],
        )
      )[0] as Json;
    const stepRows = (id: string) =>
      db.query(
        `SELECT step_id AS "stepId", status, output FROM workflow_execution_steps WHERE execution_id = $1 ORDER BY seq`,
        [id],
      ) as Promise<Json[]>;

    let answers: string[];
    await pauseQueue();
    try {
      // The queue holds both jobs: B's timeout (delayed) and A's first step, which the paused worker leaves.
      expect(await rowOf(bId)).toEqual({
        status: 'WAITING',
        version: 1,
        currentStepId: 'wait',
        waitEvent: unsubscribed,
        resumeEventId: null,
      });
      const a = await req('POST', `/workflows/${updater.id}/executions`, { contactId });
      expect(a.status).toBe(202);
      const aId = a.body.data.id as string;
      const jobA = await queue.getJob(workflowStepJobId({ id: aId, version: 0 }));
      const jobB = await queue.getJob(workflowStepJobId({ id: bId, version: 1 }));
      expect({ a: jobA?.data.executionId, b: jobB?.data.executionId }).toEqual({ a: aId, b: bId });

      // B's timeout is due (its wait record began more than 2 s ago by the database's clock, with a margin).
      const due = await pollUntil(
        async () =>
          (
            await db.query(
              `SELECT started_at + interval '2 seconds' < now() - interval '100 milliseconds' AS due
                 FROM workflow_execution_steps WHERE execution_id = $1 AND step_id = 'wait'`,
              [bId],
            )
          )[0].due as boolean,
        (d) => d,
        10_000,
      );
      expect(due).toBe(true);

      // Both jobs handed to the engine as the worker does, in the same turn: one batch runs them.
      const toJob = (data: Json): StepJob => ({
        executionId: data.executionId,
        version: data.version,
        direct: data.direct === true,
      });
      const [jobAData, jobBData] = [jobA?.data as Json, jobB?.data as Json];
      answers = await Promise.all([engine.submit(toJob(jobAData)), engine.submit(toJob(jobBData))]);
      const together = batches.filter(
        (batch) =>
          batch.jobs.some((j) => j.executionId === aId && j.version === 0) &&
          batch.jobs.some((j) => j.executionId === bId && j.version === 1),
      );
      expect(together).toHaveLength(1);
      expect(together[0].jobs).toHaveLength(2);
      // A updated its contact; B's own step in that batch (its timeout: it was due) was overtaken by the event.
      expect(answers).toEqual(['updated', 'overtaken']);

      // The event A's update recorded ended B's wait inside the batch's transaction (the events trigger),
      // and that move stood: B is RUNNING at the wait with the event, not on the timeout's branch, and the
      // batch's timeout record was not written.
      const [event] = (await eventsNamed(unsubscribed)).filter((e) => e.contactId === contactId);
      expect(event).toBeDefined();
      expect(await rowOf(bId)).toEqual({
        status: 'RUNNING',
        version: 2,
        currentStepId: 'wait',
        waitEvent: null,
        resumeEventId: event.id,
      });
      expect(await stepRows(bId)).toEqual([
        { stepId: 'wait', status: 'WAITING', output: { event: unsubscribed } },
      ]);
    } finally {
      await queue.resume();
    }

    // B goes on from the event (its job added once the event was published): then, once; never stuck WAITING.
    const [x] = await waitForExecutions(waiter.id, (xs) => finished(xs, 1), 15_000);
    const [event] = (await eventsNamed(unsubscribed)).filter((e) => e.contactId === contactId);
    expect({ status: x.status, steps: stepsOf(x), wait: x.steps[0]?.output }).toEqual({
      status: 'COMPLETED',
      steps: [
        ['wait', 'WAIT_FOR_EVENT', 'COMPLETED'],
        ['yes', 'UPDATE_CONTACT', 'COMPLETED'],
      ],
      wait: { branch: 'then', eventId: event.id },
    });
    expect(await stepRows(bId)).toHaveLength(2);
    const [updated] = await executions(updater.id);
    expect({ status: updated.status, steps: stepsOf(updated) }).toEqual({
      status: 'COMPLETED',
      steps: [['unsub', 'UPDATE_CONTACT', 'COMPLETED']],
    });
    // One unsubscribe, and the contact carries the then branch's change only.
    expect((await eventsNamed(unsubscribed)).filter((e) => e.contactId === contactId)).toHaveLength(
      1,
    );
    const contact = await t.contact(contactId);
    expect({ subscribed: contact.subscribed, data: contact.data }).toEqual({
      subscribed: false,
      data: { viaThen: true },
    });
  }, 90_000);

  it("SEND_EMAIL steps past a batch's share of rendered mail go to the next batch: one message per batch at the lowest share, one email each", async () => {
    const paragraph =
      '<p>Hello {{ contact.email }}, here is a paragraph that pads the message.</p>\n';
    const templateId = await template({
      subject: 'Big one for {{ contact.email }}',
      body: paragraph.repeat(20),
    });
    const w = await create({
      trigger: { type: 'MANUAL' },
      steps: [{ id: 'mail', type: 'SEND_EMAIL', templateId }],
    });
    const n = 30;
    const emails = Array.from({ length: n }, (_, i) => `big-${i}@batch-seven.example.org`);
    // The lowest share: a batch renders its first message, and puts off every other SEND_EMAIL step.
    const share = engine.emailCharsPerBatch;
    engine.emailCharsPerBatch = 1;
    // The messages each batch inserted (the engine inserts a batch's emails in one call).
    const inserted: number[] = [];
    const emailsService = t.app.app.get(EmailsService);
    const insert = emailsService.insert.bind(emailsService);
    jest.spyOn(emailsService, 'insert').mockImplementation((manager, rows) => {
      inserted.push(rows.length);
      return insert(manager, rows);
    });
    try {
      // Started while the queue is paused: all 30 first jobs are there when the worker takes them.
      await pauseQueue();
      try {
        const started = await Promise.all(
          emails.map((email) => req('POST', `/workflows/${w.id}/executions`, { email })),
        );
        expect(started.map((s) => s.status)).toEqual(emails.map(() => 202));
      } finally {
        await queue.resume();
      }
      const xs = await waitForExecutions(w.id, (all) => finished(all, n), 60_000);
      expect(xs.map((x) => x.status)).toEqual(emails.map(() => 'COMPLETED'));
      for (const x of xs) {
        expect({ execution: x.id, steps: stepsOf(x) }).toEqual({
          execution: x.id,
          steps: [['mail', 'SEND_EMAIL', 'COMPLETED']],
        });
      }

      // Exactly one email per execution, to its own contact.
      const rows = await emailRows(xs.map((x) => x.id as string));
      expect(rows).toHaveLength(n);
      expect(new Set(rows.map((r) => r.executionId)).size).toBe(n);
      expect(rows.map((r) => r.toEmail).sort()).toEqual([...emails].sort());
      expect(rows.every((r) => r.subject === `Big one for ${r.toEmail}`)).toBe(true);

      // The share held: every batch inserted one message (30 inserts), however many jobs it took.
      expect(inserted).toEqual(emails.map(() => 1));
      // ... and batches did take more than one of these jobs (put off, the same job came back in a later batch).
      const ids = new Set(xs.map((x) => x.id as string));
      const batchesOf = new Map<string, number>();
      for (const b of batches) {
        for (const j of b.jobs) {
          if (ids.has(j.executionId) && j.version === 0) {
            batchesOf.set(j.executionId, (batchesOf.get(j.executionId) ?? 0) + 1);
          }
        }
      }
      expect(batchesOf.size).toBe(n);
      expect([...batchesOf.values()].filter((k) => k > 1).length).toBeGreaterThan(0);
    } finally {
      engine.emailCharsPerBatch = share;
    }
  }, 90_000);

  it('the recovery pages past overdue executions whose jobs are alive: a lost job behind them gets its job back', async () => {
    const w = await create({
      trigger: { type: 'MANUAL' },
      steps: [{ id: 'end', type: 'EXIT' }],
    });
    const emails = Array.from({ length: 5 }, (_, i) => `late-${i}@batch-eight.example.org`);
    const recovery = t.app.app.get(WorkflowsRecovery);
    const pageSize = recovery.pageSize;
    await pauseQueue();
    try {
      for (const email of emails) {
        expect((await req('POST', `/workflows/${w.id}/executions`, { email })).status).toBe(202);
      }
      const rows = (await db.query(
        `SELECT x.id, x.version FROM workflow_executions x JOIN contacts c ON c.id = x.contact_id
          WHERE x.workflow_id = $1 ORDER BY c.email`,
        [w.id],
      )) as { id: string; version: number }[];
      expect(rows).toHaveLength(5);
      // Overdue by a minute and more, oldest first in the contacts' order; all five started at once
      // (one due_at to the microsecond for the first three, as one statement's executions have).
      await db.query(
        `UPDATE workflow_executions x SET due_at = date_trunc('second', now()) - interval '1 minute'
                 - CASE WHEN r.ord <= 3 THEN interval '10 seconds' ELSE interval '0' END + interval '0.000123 seconds'
           FROM unnest($1::uuid[]) WITH ORDINALITY AS r(id, ord) WHERE x.id = r.id`,
        [rows.map((r) => r.id)],
      );
      // The first three have their jobs (waiting in the paused queue); the last two lost theirs.
      for (const r of rows.slice(3)) await (await queue.getJob(workflowStepJobId(r)))?.remove();
      const hasJob = async (r: { id: string; version: number }) =>
        (await queue.getJob(workflowStepJobId(r))) !== undefined;
      expect(await Promise.all(rows.map(hasJob))).toEqual([true, true, true, false, false]);

      // Pages of two: the oldest page (two alive jobs), then the next (one alive, one lost), then the last.
      recovery.pageSize = 2;
      expect(await recovery.recover()).toEqual({ found: 2 });
      expect(await recovery.recover()).toEqual({ found: 2 });
      expect(await recovery.recover()).toEqual({ found: 1 });
      expect(await Promise.all(rows.map(hasJob))).toEqual([true, true, true, true, true]);
      // A short page starts the next run from the oldest again.
      expect(await recovery.recover()).toEqual({ found: 2 });
    } finally {
      recovery.pageSize = pageSize;
      await queue.resume();
    }
    const xs = await waitForExecutions(w.id, (all) => finished(all, 5));
    expect(xs.map((x) => x.status)).toEqual(emails.map(() => 'EXITED'));
  }, 60_000);
});
