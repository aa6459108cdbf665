import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { QueryFailedError } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import { RefusedTargetError, sendOutbound } from '../common/http/outbound-http';
import type { ConditionGroup } from '../conditions/condition.types';
import { ConditionsService } from '../conditions/conditions.service';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { isPersistenceWrapper } from '../contacts/contact-data';
import { ContactsService } from '../contacts/contacts.service';
import { sqlState } from '../database/postgres-errors';
import { isReservedEventName } from '../events/event-names';
import type { EventRow } from '../events/event.row';
import { EventsService } from '../events/events.service';
import { DomainsService } from '../domains/domains.service';
import { Email, EmailSource } from '../sending/email.entity';
import { EmailsService } from '../sending/emails.service';
import { TemplateRenderError } from '../templates/template-renderer';
import { TemplateType } from '../templates/template.entity';
import { TemplatesService } from '../templates/templates.service';
import { WorkflowDispatcher } from './workflow-dispatcher';
import { durationMs, StepTree, WebhookStep, WorkflowStep } from './workflow-steps';
import { ExecutionStatus, StepRunStatus, WorkflowExecution } from './workflow.entity';
import { DueExecution, ExecutionTransition, StepRun, WorkflowsRepository } from './workflows.repository';

/** A step's own failure (not the infrastructure's): the step and the execution end FAILED. */
export class StepError extends Error {}

/** What a WEBHOOK call answered, made before the execution is locked (it may take 10 s). */
type WebhookOutcome =
  | { kind: 'answered'; status: number; body: string; stepId: string }
  | { kind: 'refused'; error: string; stepId: string }
  | { kind: 'unreachable'; error: string; stepId: string };

/** Work to do once the step's transaction has committed. */
interface AfterCommit {
  jobs: DueExecution[];
  emails: Email[];
  events: { rows: EventRow[]; email: string | null }[];
}

const WEBHOOK_TIMEOUT_MS = 10_000;
const WEBHOOK_BODY_BYTES = 1024;
/** Workflow definitions kept parsed per process. */
const TREE_CACHE_SIZE = 1000;
/** A DELAY or wait job that fires this early (clock skew between Redis and Postgres) waits again. */
const EARLY_MS = 20;

/**
 * Runs one step of one execution per job. The job names the execution and
 * its version; the row is locked, the version checked (a stale or repeated
 * job does nothing), the step's effect and the move to the next position
 * are written in one transaction, and the next job is added after commit.
 * A SEND_EMAIL step's email is inserted in that transaction (and an index
 * allows one per execution and step), so it exists once whatever is retried.
 */
@Injectable()
export class WorkflowEngine {
  private readonly logger = new Logger(WorkflowEngine.name);
  private readonly trees = new Map<string, { stamp: string; tree: StepTree }>();
  /**
   * A step's record waiting for the transition that follows it (same
   * transaction), so the two are one statement; by execution (one step of an
   * execution runs at a time: its row is locked).
   */
  private readonly pendingRuns = new Map<string, StepRun>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly repository: WorkflowsRepository,
    private readonly dispatcher: WorkflowDispatcher,
    private readonly contacts: ContactsService,
    private readonly conditions: ConditionsService,
    private readonly templates: TemplatesService,
    private readonly emails: EmailsService,
    private readonly domains: DomainsService,
    private readonly events: EventsService,
  ) {}

  /**
   * `direct`: the job's step is known not to be a WEBHOOK (the engine said so
   * when it scheduled it), so there is no call to make before the lock and
   * no look at the execution first. Should the definition have turned it
   * into one meanwhile, the step finds no answer and runs again with a job
   * that looks first.
   */
  async run(executionId: string, version: number, direct = false): Promise<string> {
    let webhook: WebhookOutcome | null = null;
    if (!direct) {
      const peek = await this.peek(executionId, version);
      if (!peek) return 'stale';
      webhook = peek.webhookStep ? await this.callWebhook(peek.execution, peek.webhookStep) : null;
    }
    const after: AfterCommit = { jobs: [], emails: [], events: [] };
    let outcome = 'stale';
    try {
      outcome = await this.dataSource.transaction(async (manager) => {
        const x = await this.repository.lockExecution(manager, executionId);
        if (!x || x.version !== version || !isOpen(x.status)) return 'stale';
        const moved = await this.step(manager, x, webhook, after);
        await this.flushRun(manager, executionId);
        return moved;
      });
    } catch (error) {
      this.pendingRuns.delete(executionId);
      if (!isStepFailure(error)) throw error;
      after.jobs.length = 0;
      after.emails.length = 0;
      after.events.length = 0;
      outcome = await this.dataSource.transaction(async (manager) => {
        const x = await this.repository.lockExecution(manager, executionId);
        if (!x || x.version !== version || !isOpen(x.status)) return 'stale';
        await this.fail(manager, x, x.currentStepId, errorMessage(error), after);
        await this.flushRun(manager, executionId);
        return 'failed';
      }).finally(() => this.pendingRuns.delete(executionId));
    }
    await this.afterCommit(after);
    return outcome;
  }

  private async peek(
    executionId: string,
    version: number,
  ): Promise<{ execution: WorkflowExecution; webhookStep: WebhookStep | null } | null> {
    const manager = this.dataSource.manager;
    const x = await this.repository.findExecutionById(manager, executionId);
    if (!x || x.version !== version || !isOpen(x.status)) return null;
    let webhookStep: WebhookStep | null = null;
    if (x.status === ExecutionStatus.RUNNING) {
      const tree = await this.treeOf(manager, x);
      const position = x.currentStepId ?? tree?.first() ?? null;
      const step = tree && position ? tree.get(position) : null;
      if (step?.type === 'WEBHOOK') webhookStep = step;
    }
    return { execution: x, webhookStep };
  }

  /**
   * The workflow's steps as of the execution's read (which carries the
   * workflow's `updated_at`): parsed once per definition and kept, so a step
   * costs no read of the definition unless it changed.
   */
  private async treeOf(manager: EntityManager, x: WorkflowExecution): Promise<StepTree | null> {
    const stamp = x.workflowStamp as string;
    const cached = this.trees.get(x.workflowId);
    if (cached && cached.stamp === stamp) return cached.tree;
    const workflow = await this.repository.findForEngine(manager, x.workflowId);
    if (!workflow) return null;
    const tree = new StepTree(workflow.steps);
    if (this.trees.size >= TREE_CACHE_SIZE) this.trees.delete(this.trees.keys().next().value as string);
    // Kept under the stamp read with the execution: a definition changed in between is read again next time.
    this.trees.set(x.workflowId, { stamp, tree });
    return tree;
  }

  /** One move of a locked execution. */
  private async step(
    manager: EntityManager,
    x: WorkflowExecution,
    webhook: WebhookOutcome | null,
    after: AfterCommit,
  ): Promise<string> {
    const tree = await this.treeOf(manager, x);
    if (!tree) return 'stale';
    const position = x.currentStepId ?? tree.first();
    if (position === null) {
      await this.finish(manager, x, ExecutionStatus.COMPLETED, null, after);
      return 'completed';
    }
    const step = tree.get(position);
    if (!step) {
      // The definition was edited while the execution waited here.
      await this.finish(manager, x, ExecutionStatus.EXITED, 'step_removed', after);
      return 'step_removed';
    }
    if (x.status === ExecutionStatus.WAITING) return this.wake(manager, x, tree, step, after);
    if (x.resumeEventId && step.type === 'WAIT_FOR_EVENT') {
      await this.record(manager, x, step, StepRunStatus.COMPLETED, { branch: 'then', eventId: x.resumeEventId });
      await this.moveTo(manager, x, tree.enter(step, 'then'), after);
      return 'event';
    }
    return this.execute(manager, x, tree, step, webhook, after);
  }

  /** A DELAY's end or a WAIT_FOR_EVENT's timeout (the definition may have changed the duration meanwhile). */
  private async wake(manager: EntityManager, x: WorkflowExecution, tree: StepTree, step: WorkflowStep, after: AfterCommit): Promise<string> {
    if (step.type !== 'DELAY' && step.type !== 'WAIT_FOR_EVENT') {
      // Edited into another type while waiting: run it now.
      await this.schedule(manager, x, { status: ExecutionStatus.RUNNING, currentStepId: step.id, dueAt: new Date(), waitEvent: null }, after);
      return 'retyped';
    }
    const run = await this.repository.stepRun(manager, x.id, step.id);
    const startedAt = run?.startedAt ?? new Date();
    const due = new Date(startedAt.getTime() + durationMs(step.type === 'DELAY' ? step : step.timeout));
    if (due.getTime() - Date.now() > EARLY_MS) {
      await this.schedule(
        manager,
        x,
        { status: ExecutionStatus.WAITING, dueAt: due, waitEvent: step.type === 'WAIT_FOR_EVENT' ? step.event : null },
        after,
      );
      return 'rescheduled';
    }
    if (step.type === 'DELAY') {
      await this.record(manager, x, step, StepRunStatus.COMPLETED, null);
      await this.moveTo(manager, x, tree.next(step.id), after);
      return 'delayed';
    }
    await this.record(manager, x, step, StepRunStatus.COMPLETED, { branch: 'else', timedOut: true });
    await this.moveTo(manager, x, tree.enter(step, 'else'), after);
    return 'timeout';
  }

  private async execute(
    manager: EntityManager,
    x: WorkflowExecution,
    tree: StepTree,
    step: WorkflowStep,
    webhook: WebhookOutcome | null,
    after: AfterCommit,
  ): Promise<string> {
    switch (step.type) {
      case 'DELAY': {
        await this.record(manager, x, step, StepRunStatus.WAITING, null);
        await this.schedule(manager, x, { status: ExecutionStatus.WAITING, currentStepId: step.id, dueAt: new Date(Date.now() + durationMs(step)) }, after);
        return 'waiting';
      }
      case 'WAIT_FOR_EVENT': {
        await this.record(manager, x, step, StepRunStatus.WAITING, { event: step.event });
        await this.schedule(
          manager,
          x,
          { status: ExecutionStatus.WAITING, currentStepId: step.id, waitEvent: step.event, dueAt: new Date(Date.now() + durationMs(step.timeout)) },
          after,
        );
        return 'waiting';
      }
      case 'CONDITION': {
        const result = await this.conditions.matchesContact(manager, x.projectId, x.contactId, step.condition as ConditionGroup);
        await this.record(manager, x, step, StepRunStatus.COMPLETED, { result, branch: result ? 'then' : 'else' });
        await this.moveTo(manager, x, tree.enter(step, result ? 'then' : 'else'), after);
        return 'condition';
      }
      case 'UPDATE_CONTACT': {
        const updated = await this.contacts.applyUpdate(manager, x.projectId, x.contactId, { data: step.data, subscribed: step.subscribed });
        if (!updated) throw new StepError('the contact no longer exists');
        after.events.push({ rows: updated.events, email: updated.row.email });
        await this.record(manager, x, step, StepRunStatus.COMPLETED, { data: updated.row.data, subscribed: updated.row.subscribed });
        await this.moveTo(manager, x, tree.next(step.id), after);
        return 'updated';
      }
      case 'SEND_EMAIL': {
        const emailId = await this.sendEmail(manager, x, step.id, step.templateId, after);
        await this.record(manager, x, step, StepRunStatus.COMPLETED, { emailId });
        await this.moveTo(manager, x, tree.next(step.id), after);
        return 'sent';
      }
      case 'WEBHOOK':
        return this.webhookResult(manager, x, tree, step, webhook, after);
      case 'EXIT':
        await this.record(manager, x, step, StepRunStatus.COMPLETED, null);
        await this.finish(manager, x, ExecutionStatus.EXITED, 'exit_step', after);
        return 'exited';
    }
  }

  private async sendEmail(manager: EntityManager, x: WorkflowExecution, stepId: string, templateId: string, after: AfterCommit): Promise<string> {
    // Every read inside the step's transaction goes through its manager: a second connection per
    // step would let as many concurrent steps as the pool has connections wait on each other forever.
    const template = await this.templates.findOrFail(x.projectId, templateId, manager);
    if (!template.fromEmail) throw new StepError(`template ${templateId} has no from address`);
    await this.domains.assertCanSend(x.projectId, template.fromEmail, manager);
    const contact = await this.contacts.findRow(manager, x.projectId, x.contactId);
    if (!contact) throw new StepError('the contact no longer exists');
    const email = await this.emails.compose({
      projectId: x.projectId,
      contact,
      source: EmailSource.WORKFLOW,
      marketing: template.type === TemplateType.MARKETING,
      track: template.track,
      templateId,
      from: { email: template.fromEmail, name: template.fromName },
      replyTo: template.replyTo,
      content: { subject: template.subject, body: template.body },
      data: await this.sendData(manager, x),
      workflowExecutionId: x.id,
      workflowStepId: stepId,
    });
    const queued = await this.emails.insert(manager, [email]);
    after.emails.push(email);
    after.events.push({ rows: queued, email: contact.email });
    return email.id;
  }

  /**
   * The send's data of a SEND_EMAIL or WEBHOOK step. The contract's render
   * context is the contact's data, then the send's data over it; the contact
   * is read as it is when the step runs, so what earlier steps (UPDATE_CONTACT)
   * or later tracks wrote shows. The send's data is what the trigger carried
   * that never reached the contact: a track or a manual start merged its data
   * into the contact except `{value, persistent: false}` values, which are
   * the send's data; a system event's data (`email.clicked`'s url) never
   * reaches a contact, so all of it is. Passing a track's merged values again
   * would put the trigger's old values over the contact's newer ones.
   */
  private async sendData(manager: EntityManager, x: WorkflowExecution): Promise<Record<string, unknown>> {
    const entries = Object.entries(x.data ?? {});
    const eventOnly = entries.filter(([, value]) => isPersistenceWrapper(value) && !value.persistent);
    if (eventOnly.length === entries.length) return x.data ?? {};
    if (x.triggerEventId) {
      const name = await this.events.nameOf(manager, x.triggerEventId);
      if (name !== null && isReservedEventName(name)) return x.data;
    }
    return Object.fromEntries(eventOnly);
  }

  private async webhookResult(
    manager: EntityManager,
    x: WorkflowExecution,
    tree: StepTree,
    step: WebhookStep,
    webhook: WebhookOutcome | null,
    after: AfterCommit,
  ): Promise<string> {
    if (!webhook || webhook.stepId !== step.id) {
      // The definition changed between the call and the lock: run the step again with a fresh job.
      await this.schedule(manager, x, { status: ExecutionStatus.RUNNING, currentStepId: step.id, dueAt: new Date() }, after);
      return 'again';
    }
    const attempts = x.stepAttempts + 1;
    if (webhook.kind === 'answered' && webhook.status < 500) {
      await this.record(manager, x, step, StepRunStatus.COMPLETED, { status: webhook.status, body: webhook.body, attempts });
      await this.moveTo(manager, x, tree.next(step.id), after);
      return 'webhook';
    }
    const error = webhook.kind === 'answered' ? `answered ${webhook.status}` : webhook.error;
    const output = webhook.kind === 'answered' ? { status: webhook.status, body: webhook.body, attempts } : { attempts };
    const delays = this.config.workflowRetryDelaysMs;
    if (webhook.kind === 'refused' || attempts > delays.length) {
      await this.record(manager, x, step, StepRunStatus.FAILED, output, error);
      await this.fail(manager, x, null, `WEBHOOK step ${step.id}: ${error}`, after);
      return 'failed';
    }
    await this.record(manager, x, step, StepRunStatus.WAITING, output, error);
    await this.schedule(
      manager,
      x,
      { status: ExecutionStatus.RUNNING, currentStepId: step.id, stepAttempts: attempts, dueAt: new Date(Date.now() + delays[attempts - 1]) },
      after,
    );
    return 'retry';
  }

  private async callWebhook(x: WorkflowExecution, step: WebhookStep): Promise<WebhookOutcome> {
    try {
      const contact = await this.contacts.findRow(this.dataSource.manager, x.projectId, x.contactId);
      if (!contact) return { kind: 'refused', error: 'the contact no longer exists', stepId: step.id };
      const unsubscribeUrl = this.emails.unsubscribeUrl(x.projectId, contact.id, null);
      const data = await this.sendData(this.dataSource.manager, x);
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(step.headers ?? {})) {
        headers[name] = (await this.templates.renderText(value, contact, data, unsubscribeUrl)).replace(/[\r\n\0]/g, ' ');
      }
      const body = step.body !== undefined ? await this.templates.renderText(step.body, contact, data, unsubscribeUrl) : undefined;
      if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
        headers['content-type'] = 'application/json';
      }
      headers['user-agent'] ??= 'Mailwright-Workflows/1';
      const answer = await sendOutbound({
        url: step.url,
        method: step.method,
        headers,
        body,
        timeoutMs: WEBHOOK_TIMEOUT_MS,
        allowPrivate: this.config.webhookAllowPrivate,
        maxBodyBytes: WEBHOOK_BODY_BYTES,
      });
      return { kind: 'answered', status: answer.status, body: answer.body, stepId: step.id };
    } catch (error) {
      if (error instanceof RefusedTargetError || error instanceof TemplateRenderError) {
        return { kind: 'refused', error: error.message, stepId: step.id };
      }
      return { kind: 'unreachable', error: errorMessage(error), stepId: step.id };
    }
  }

  private record(
    _manager: EntityManager,
    x: WorkflowExecution,
    step: WorkflowStep,
    status: StepRunStatus,
    output: Record<string, unknown> | null,
    error: string | null = null,
  ): Promise<void> {
    // Written with the transition that follows (or at the end of the transaction, should none follow).
    this.pendingRuns.set(x.id, {
      executionId: x.id,
      stepId: step.id,
      type: step.type,
      status,
      output,
      error,
      finished: status !== StepRunStatus.WAITING,
    });
    return Promise.resolve();
  }

  /** The step record still waiting for a transition, written on its own. */
  private async flushRun(manager: EntityManager, executionId: string): Promise<void> {
    const run = this.pendingRuns.get(executionId);
    if (!run) return;
    this.pendingRuns.delete(executionId);
    await this.repository.recordStep(manager, run);
  }

  private takeRun(executionId: string): StepRun | null {
    const run = this.pendingRuns.get(executionId) ?? null;
    this.pendingRuns.delete(executionId);
    return run;
  }

  /**
   * On to `next` (RUNNING, due now), or COMPLETED when there is none. A
   * DELAY or WAIT_FOR_EVENT is entered at once, in this transaction (its
   * record WAITING, the execution WAITING until its end or timeout): its own
   * job is the one that ends the wait, so a wait costs one job, not two.
   */
  private async moveTo(manager: EntityManager, x: WorkflowExecution, next: string | null, after: AfterCommit): Promise<void> {
    if (next === null) return this.finish(manager, x, ExecutionStatus.COMPLETED, null, after);
    const step = this.trees.get(x.workflowId)?.tree.get(next);
    if (step?.type === 'DELAY' || step?.type === 'WAIT_FOR_EVENT') {
      await this.flushRun(manager, x.id);
      const waitEvent = step.type === 'WAIT_FOR_EVENT' ? step.event : null;
      await this.record(manager, x, step, StepRunStatus.WAITING, waitEvent === null ? null : { event: waitEvent });
      await this.schedule(
        manager,
        x,
        {
          status: ExecutionStatus.WAITING,
          currentStepId: step.id,
          dueAt: new Date(Date.now() + durationMs(step.type === 'DELAY' ? step : step.timeout)),
          waitEvent,
          resumeEventId: null,
          stepAttempts: 0,
        },
        after,
      );
      return;
    }
    await this.schedule(
      manager,
      x,
      { status: ExecutionStatus.RUNNING, currentStepId: next, dueAt: new Date(), waitEvent: null, resumeEventId: null, stepAttempts: 0 },
      after,
    );
  }

  private async schedule(manager: EntityManager, x: WorkflowExecution, to: ExecutionTransition, after: AfterCommit): Promise<void> {
    const version = await this.repository.transition(manager, x, to, this.takeRun(x.id));
    // The step the job will run, as the definition read in this transaction has it.
    const stepId = to.currentStepId !== undefined ? to.currentStepId : x.currentStepId;
    const step = stepId ? this.trees.get(x.workflowId)?.tree.get(stepId) : undefined;
    after.jobs.push(step && step.type !== 'WEBHOOK' ? { id: x.id, version, dueAt: to.dueAt, direct: true } : { id: x.id, version, dueAt: to.dueAt });
  }

  private async finish(
    manager: EntityManager,
    x: WorkflowExecution,
    status: ExecutionStatus,
    exitReason: string | null,
    _after: AfterCommit,
  ): Promise<void> {
    await this.repository.transition(
      manager,
      x,
      { status, dueAt: null, waitEvent: null, resumeEventId: null, finishedAt: new Date(), exitReason },
      this.takeRun(x.id),
    );
  }

  /** The step (when known) and the execution end FAILED; `workflow.execution.failed` is recorded for the project. */
  private async fail(manager: EntityManager, x: WorkflowExecution, stepId: string | null, error: string, after: AfterCommit): Promise<void> {
    if (stepId) {
      // This step's own record (a failure of the step itself): whatever it had recorded is replaced.
      this.pendingRuns.delete(x.id);
      const workflow = await this.repository.findForEngine(manager, x.workflowId);
      const step = workflow ? new StepTree(workflow.steps).get(stepId) : null;
      await this.repository.recordStep(manager, {
        executionId: x.id,
        stepId,
        type: step?.type ?? 'UNKNOWN',
        status: StepRunStatus.FAILED,
        output: null,
        error,
        finished: true,
      });
    }
    await this.repository.transition(
      manager,
      x,
      { status: ExecutionStatus.FAILED, dueAt: null, waitEvent: null, resumeEventId: null, finishedAt: new Date(), exitReason: error.slice(0, 100) },
      this.takeRun(x.id),
    );
    const event = await this.events.record(manager, {
      projectId: x.projectId,
      contactId: x.contactId,
      name: 'workflow.execution.failed',
      data: { workflowId: x.workflowId, executionId: x.id, stepId, error: error.slice(0, 500) },
    });
    after.events.push({ rows: [event], email: null });
    this.logger.warn({ executionId: x.id, workflowId: x.workflowId, stepId, error }, 'workflow execution failed');
  }

  private async afterCommit(after: AfterCommit): Promise<void> {
    if (after.emails.length > 0) await this.emails.enqueue(after.emails);
    await this.dispatcher.enqueue(after.jobs);
    for (const { rows, email } of after.events) {
      if (rows.length > 0) await this.events.publish(rows.map((row) => ({ ...row, email })));
    }
  }
}

function isOpen(status: ExecutionStatus): boolean {
  return status === ExecutionStatus.RUNNING || status === ExecutionStatus.WAITING;
}

/**
 * The step's own problem (a template gone, a sender not verified, a render
 * over its limits, a condition the database refuses): the execution fails.
 * Anything else (the database or Redis unreachable) is retried by the job.
 */
function isStepFailure(error: unknown): boolean {
  if (error instanceof StepError || error instanceof ApiException || error instanceof TemplateRenderError) return true;
  if (error instanceof QueryFailedError) {
    const state = sqlState(error) ?? '';
    return ['22', '23', '42', '2B', '0A'].some((cls) => state.startsWith(cls));
  }
  return false;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
