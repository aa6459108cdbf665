import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { MicroBatcher } from '../common/concurrency/micro-batcher';
import { errorMessage } from '../common/errors/error-message';
import { Semaphore } from '../common/concurrency/semaphore';
import { DisabledProjects } from '../projects/disabled-projects';
import { WorkerShutdown } from '../queue/worker-shutdown';
import { WorkflowExecutionsRepository } from './workflow-executions.repository';
import { StepBatch } from './workflow-step-batch';
import {
  isOpen,
  isStepFailure,
  PAUSED,
  StepJob,
  WorkflowStepInterpreter,
} from './workflow-step-interpreter';
import { WebhookOutcome, WorkflowWebhookCaller } from './workflow-webhook-caller';

type Settled = { ok: true; value: string } | { ok: false; error: unknown };

/**
 * Steps of concurrent jobs run in one transaction, at most this many: half the
 * worker's concurrency (WORKFLOW_CONCURRENCY), so that one batch fills while
 * the other runs.
 */
const BATCH_SIZE = 512;
/** Batches in flight at once (each on its own connection). */
const BATCHES_IN_FLIGHT = 2;
/** WEBHOOK steps run on their own (the call may take 10 s): at most this many at once per process, as before batches. */
export const WEBHOOK_RUNS_IN_FLIGHT = 32;
/** A failed batch's jobs, each run again on its own: at most this many at once (each holds a pool connection). */
const SOLO_RUNS_IN_FLIGHT = 8;
/** A job's outcome when the process is stopping before its WEBHOOK run's turn: the processor gives it back to the queue. */
export const HANDED_BACK = 'handed-back';

/**
 * Schedules the workflow jobs: one step of one execution per job, run by
 * WorkflowStepInterpreter in a transaction this class opens. The jobs a
 * worker runs at once share that transaction (`submit`): each job is still
 * one step of one execution and answers its own outcome. A step's own
 * failure ends its execution FAILED in the same transaction; any other
 * error (a statement refused, a deadlock) rolls the batch back and each job
 * runs again on its own. A job that may find a WEBHOOK step looks at the
 * execution first and has WorkflowWebhookCaller make the call before the
 * lock (`run`).
 */
@Injectable()
export class WorkflowEngine {
  private readonly logger = new Logger(WorkflowEngine.name);
  /**
   * One job per execution in a batch (a repeated one waits for the next); a
   * batch starts after the jobs that arrive in this turn of the event loop.
   */
  private readonly batcher = new MicroBatcher<StepJob, string>(
    {
      maxBatch: BATCH_SIZE,
      maxInFlight: BATCHES_IN_FLIGHT,
      start: 'tick',
      keyOf: (job) => job.executionId,
    },
    async (jobs) => (await this.runBatch(jobs)).map(answerOf),
  );
  private readonly webhookRuns = new Semaphore(WEBHOOK_RUNS_IN_FLIGHT);
  private readonly soloRuns = new Semaphore(SOLO_RUNS_IN_FLIGHT);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly executions: WorkflowExecutionsRepository,
    private readonly shutdown: WorkerShutdown,
    private readonly webhookCaller: WorkflowWebhookCaller,
    private readonly interpreter: WorkflowStepInterpreter,
    private readonly disabledProjects: DisabledProjects,
  ) {}

  /** The interpreter's share of rendered mail per batch (BATCH_EMAIL_CHARS); tests lower it. */
  get emailCharsPerBatch(): number {
    return this.interpreter.emailCharsPerBatch;
  }

  set emailCharsPerBatch(chars: number) {
    this.interpreter.emailCharsPerBatch = chars;
  }

  /** One job's step, run with the steps of the jobs submitted meanwhile; answers its outcome. */
  submit(job: StepJob): Promise<string> {
    return this.enter(job, false);
  }

  /** `first`: ahead of the jobs waiting (one a batch put off, which has waited longest). */
  private enter(job: StepJob, first: boolean): Promise<string> {
    return this.batcher.submit(job, { first });
  }

  /**
   * A job run on its own outside any batch slot: one that may find a WEBHOOK
   * step (it has not looked first) at most WEBHOOK_RUNS_IN_FLIGHT at once,
   * and handed back to the queue when the process is stopping before its
   * turn (so a shutdown waits for the calls in progress only); any other at
   * most SOLO_RUNS_IN_FLIGHT at once.
   */
  private runAlone(job: StepJob): Promise<Settled> {
    if (job.direct) return settled(this.soloRuns.run(() => this.run(job)));
    return settled(
      this.webhookRuns.run(() =>
        this.shutdown.stopping ? Promise.resolve(HANDED_BACK) : this.run(job),
      ),
    );
  }

  /**
   * The steps of these jobs (one per execution) in one transaction; each
   * job's outcome or error, or for a WEBHOOK step found by a job that had
   * not looked first, the promise of it (its call is made on its own, after
   * the batch).
   */
  async runBatch(jobs: StepJob[]): Promise<(Settled | Promise<Settled>)[]> {
    let batch: StepBatch;
    let outcomes: string[];
    try {
      // Messages are rendered before the transaction opens: a render never holds its connection.
      const prerendered = await this.interpreter.prerender(jobs);
      ({ batch, outcomes } = await this.dataSource.transaction(async (manager) => {
        const b = new StepBatch(manager, prerendered);
        const out = await this.interpreter.steps(b, jobs, null);
        await this.interpreter.write(b);
        return { batch: b, outcomes: out };
      }));
    } catch (error) {
      // One job: a step failure the database reported is ended by run(); anything else is the job's error (retried).
      if (jobs.length === 1)
        return [isStepFailure(error) ? this.runAlone(jobs[0]) : { ok: false, error }];
      this.logger.debug(
        { err: error, jobs: jobs.length },
        'a batch of workflow steps failed; each runs on its own',
      );
      // Answered as each one's run ends: the batch's slot is free at once (a run may make a WEBHOOK call).
      return jobs.map((job) => this.runAlone(job));
    }
    try {
      await this.interpreter.afterCommit(batch.after);
    } catch (error) {
      return jobs.map(() => ({ ok: false, error }));
    }
    return jobs.map((job, i) => {
      // A WEBHOOK step found by a job that had not looked first: its call is made before the lock, on its own.
      if (outcomes[i] === 'look') return this.runAlone(job);
      // A SEND_EMAIL step past the batch's share of rendered mail: in the next batch (its answer then).
      if (outcomes[i] === 'later') return settled(this.enter(job, true));
      return { ok: true, value: batch.overtaken.has(job.executionId) ? 'overtaken' : outcomes[i] };
    });
  }

  /**
   * One job on its own: a job that may find a WEBHOOK step looks at the
   * execution first and makes the call before the lock (it may take 10 s).
   * A step failure the database reported (the transaction is then
   * aborted) ends the execution FAILED in a second transaction.
   */
  async run(job: StepJob): Promise<string> {
    let webhook: WebhookOutcome | null = null;
    if (!job.direct) {
      const peek = await this.interpreter.peek(job.executionId, job.version);
      if (!peek) return 'stale';
      // No WEBHOOK call for a disabled project.
      if (await this.disabledProjects.isDisabled(peek.execution.projectId)) return PAUSED;
      webhook = peek.webhookStep
        ? await this.webhookCaller.call(peek.execution, peek.webhookStep)
        : null;
    }
    let batch: StepBatch;
    let outcome: string;
    try {
      ({ batch, outcome } = await this.dataSource.transaction(async (manager) => {
        const b = new StepBatch(manager);
        const [out] = await this.interpreter.steps(b, [{ ...job, direct: true }], webhook);
        await this.interpreter.write(b);
        return { batch: b, outcome: out };
      }));
    } catch (error) {
      if (!isStepFailure(error)) throw error;
      ({ batch, outcome } = await this.dataSource.transaction(async (manager) => {
        const b = new StepBatch(manager);
        const x = await this.executions.lockExecution(manager, job.executionId);
        if (!x || x.version !== job.version || !isOpen(x.status))
          return { batch: b, outcome: 'stale' };
        await this.interpreter.fail(
          b,
          x,
          (await this.interpreter.whereIs(manager, x)).position,
          errorMessage(error),
        );
        await this.interpreter.write(b);
        return { batch: b, outcome: 'failed' };
      }));
    }
    await this.interpreter.afterCommit(batch.after);
    return outcome;
  }
}

/** A batch's answer for one job, as the batcher takes it: the outcome, or a promise of it that fails with the job's error. */
function answerOf(result: Settled | Promise<Settled>): string | Promise<string> {
  if (result instanceof Promise)
    return result.then((r) => (r.ok ? r.value : Promise.reject(r.error)));
  if (result.ok) return result.value;
  const failed = Promise.reject(result.error);
  // Handled by the batcher once the batch's answers are in; marked now so no unhandled rejection is reported meanwhile.
  failed.catch(() => undefined);
  return failed;
}

async function settled(promise: Promise<string>): Promise<Settled> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    return { ok: false, error };
  }
}
