import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { QueryFailedError } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import { errorMessage } from '../common/errors/error-message';
import type { ConditionGroup } from '../conditions/condition.types';
import { ConditionsService } from '../conditions/conditions.service';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { ContactsService } from '../contacts/contacts.service';
import { sqlState } from '../database/postgres-errors';
import { EventsService } from '../events/events.service';
import { DomainsService } from '../domains/domains.service';
import type { ContactRow } from '../contacts/contact.row';
import { DisabledProjects } from '../projects/disabled-projects';
import { Email, EmailSource } from '../sending/email.entity';
import { ComposeEmailInput, EmailsService } from '../sending/emails.service';
import { rendersAlike } from '../sending/rendered-recipients';
import { TemplateRenderError } from '../templates/template-renderer';
import { Template, TemplateType } from '../templates/template.entity';
import { TemplatesService } from '../templates/templates.service';
import { WorkflowDispatcher } from './workflow-dispatcher';
import { AfterCommit, Prerendered, StepBatch } from './workflow-step-batch';
import { eventOnlyData, sendData } from './workflow-send-data';
import { WebhookOutcome } from './workflow-webhook-caller';
import {
  durationMs,
  SendEmailStep,
  StepTree,
  UpdateContactStep,
  WebhookStep,
  WorkflowStep,
} from './workflow-steps';
import { ExecutionStatus, StepRunStatus, WorkflowExecution } from './workflow.entity';
import {
  ExecutionTransition,
  StepRun,
  WorkflowExecutionsRepository,
} from './workflow-executions.repository';
import { WorkflowsRepository } from './workflows.repository';

/**
 * A job's outcome when its execution's project is disabled: nothing is
 * written and the job ends (its queue keeps no finished jobs); the
 * execution stays due, and the recovery, which skips disabled projects,
 * adds its job again once the project is enabled.
 */
export const PAUSED = 'paused';

/** A step's own failure (not the infrastructure's): the step and the execution end FAILED. */
export class StepError extends Error {}

/** One job's request: the execution, the version the job was added for, and whether it may skip the look first. */
export interface StepJob {
  executionId: string;
  version: number;
  direct: boolean;
}

/** Workflow definitions kept parsed per process. */
const TREE_CACHE_SIZE = 1000;
/** A DELAY or wait job that fires this early (clock skew between Redis and Postgres) waits again. */
const EARLY_MS = 20;
/**
 * Characters of rendered messages a batch holds at most (subject, HTML and
 * text of its SEND_EMAIL steps): once past it, the batch's remaining
 * SEND_EMAIL steps go to the next batch. 512 messages of 100 KB would
 * otherwise sit in memory (and again as the insert's JSON) twice over, in
 * two batches, in a worker whose heap may be capped at 256 MB. 8 M
 * characters are 8 MB of Latin text, up to 16 MB in V8 and 24 MB as UTF-8
 * JSON for other scripts.
 */
const BATCH_EMAIL_CHARS = 8 * 1024 * 1024;

/**
 * Runs one step of each of a batch's jobs in the caller's transaction. The
 * job names the execution and its version; the rows are locked in one
 * statement, the version checked (a stale or repeated job does nothing),
 * the reads the steps need made once for all (the contacts a SEND_EMAIL
 * renders, the contacts a CONDITION tests, templates, senders), each step's
 * effect and move to the next position recorded in the batch (StepBatch),
 * and the records, transitions and emails written in a few statements at
 * the transaction's end (`write`); the next jobs are added after commit
 * (`afterCommit`). A SEND_EMAIL step's email is inserted in that
 * transaction (and an index allows one per execution and step), so it
 * exists once whatever is retried. A step's own failure ends its execution
 * FAILED in the same transaction (its part of the batch undone).
 */
@Injectable()
export class WorkflowStepInterpreter {
  // Its log lines keep the engine's name, which operators already search by.
  private readonly logger = new Logger('WorkflowEngine');
  private readonly trees = new Map<string, { stamp: string; tree: StepTree }>();
  /** BATCH_EMAIL_CHARS; tests lower it (through WorkflowEngine.emailCharsPerBatch). */
  emailCharsPerBatch = BATCH_EMAIL_CHARS;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly workflows: WorkflowsRepository,
    private readonly executions: WorkflowExecutionsRepository,
    private readonly dispatcher: WorkflowDispatcher,
    private readonly contacts: ContactsService,
    private readonly conditions: ConditionsService,
    private readonly templates: TemplatesService,
    private readonly emails: EmailsService,
    private readonly domains: DomainsService,
    private readonly events: EventsService,
    private readonly disabledProjects: DisabledProjects,
  ) {}

  /**
   * Locks the jobs' executions and runs each one's step; 'look' for a
   * WEBHOOK step its job did not look at first, 'later' for a SEND_EMAIL step
   * left to a later batch (this one holds its share of rendered mail: it
   * writes nothing for that execution).
   */
  async steps(b: StepBatch, jobs: StepJob[], webhook: WebhookOutcome | null): Promise<string[]> {
    const locked = await this.executions.lockExecutions(
      b.manager,
      jobs.map((job) => job.executionId),
    );
    const due: { job: StepJob; x: WorkflowExecution; step: WorkflowStep | null }[] = [];
    const outcomes = new Map<StepJob, string>();
    for (const job of jobs) {
      const x = locked.get(job.executionId);
      if (!x || x.version !== job.version || !isOpen(x.status)) {
        outcomes.set(job, 'stale');
        continue;
      }
      if (await this.disabledProjects.isDisabled(x.projectId, b.manager)) {
        outcomes.set(job, PAUSED);
        continue;
      }
      const { step } = await this.whereIs(b.manager, x);
      if (!job.direct && x.status === ExecutionStatus.RUNNING && step?.type === 'WEBHOOK')
        outcomes.set(job, 'look');
      else due.push({ job, x, step });
    }
    await this.prefetch(b, due);
    await this.startCompositions(b, due);
    for (const { job, x, step } of due) {
      if (
        (b.emailChars >= this.emailCharsPerBatch || b.later.has(x.id)) &&
        x.status === ExecutionStatus.RUNNING &&
        step?.type === 'SEND_EMAIL'
      ) {
        outcomes.set(job, 'later');
        continue;
      }
      const mark = b.mark();
      try {
        outcomes.set(job, await this.step(b, x, webhook));
      } catch (error) {
        // A statement's error has aborted the transaction: the caller handles it.
        if (!isStepFailure(error) || error instanceof QueryFailedError) throw error;
        b.undo(x.id, mark);
        await this.fail(b, x, (await this.whereIs(b.manager, x)).position, errorMessage(error));
        outcomes.set(job, 'failed');
      }
    }
    return jobs.map((job) => outcomes.get(job) as string);
  }

  /**
   * The work of the batch's RUNNING steps done once for all, each step of a
   * definition in one statement: UPDATE_CONTACT changes first, then the
   * reads (which see them): the contacts SEND_EMAIL steps render (by
   * project), CONDITION results, the trigger events' names.
   */
  private async prefetch(
    b: StepBatch,
    due: { x: WorkflowExecution; step: WorkflowStep | null }[],
  ): Promise<void> {
    const contacts = new Map<string, Set<string>>();
    const conditions = new Map<
      string,
      { projectId: string; condition: ConditionGroup; executions: WorkflowExecution[] }
    >();
    const updates = new Map<
      string,
      { projectId: string; step: UpdateContactStep; executions: WorkflowExecution[] }
    >();
    const names: string[] = [];
    for (const { x, step } of due) {
      if (x.status !== ExecutionStatus.RUNNING || !step) continue;
      if (step.type === 'UPDATE_CONTACT') {
        const key = `${x.workflowId}/${x.workflowStamp}/${step.id}`;
        let group = updates.get(key);
        if (!group) updates.set(key, (group = { projectId: x.projectId, step, executions: [] }));
        group.executions.push(x);
      } else if (step.type === 'SEND_EMAIL') {
        let ids = contacts.get(x.projectId);
        if (!ids) contacts.set(x.projectId, (ids = new Set()));
        ids.add(x.contactId);
        if (x.triggerEventId && !eventOnlyData(x)) names.push(x.triggerEventId);
      } else if (step.type === 'CONDITION') {
        const key = `${x.workflowId}/${x.workflowStamp}/${step.id}`;
        let group = conditions.get(key);
        if (!group)
          conditions.set(
            key,
            (group = {
              projectId: x.projectId,
              condition: step.condition as ConditionGroup,
              executions: [],
            }),
          );
        group.executions.push(x);
      }
    }
    for (const { projectId, step, executions } of updates.values()) {
      const change = { data: step.data, subscribed: step.subscribed };
      const done = await this.contacts.applyUpdates(
        b.manager,
        projectId,
        executions.map((x) => x.contactId),
        change,
      );
      for (const x of executions) b.updates.set(x.id, done.get(x.contactId) ?? null);
    }
    for (const [projectId, ids] of contacts) {
      for (const [id, row] of await this.contacts.findRows(b.manager, projectId, [...ids]))
        b.contacts.set(id, row);
    }
    for (const { projectId, condition, executions } of conditions.values()) {
      if (executions.length < 2) continue;
      const matching = await this.conditions.matchingContacts(
        b.manager,
        projectId,
        executions.map((x) => x.contactId),
        condition,
      );
      for (const x of executions) b.matches.set(x.id, matching.has(x.contactId));
    }
    if (names.length > 0) {
      const found = await this.events.namesOf(b.manager, names);
      for (const id of names) b.triggerNames.set(id, found.get(id) ?? null);
    }
  }

  /**
   * Renders the SEND_EMAIL messages of a batch's jobs before its transaction, from an unlocked
   * read of their executions, contacts and templates, so no render (which may run to
   * RENDER_TIMEOUT_MS) holds the transaction's connection and row locks: the steps then take
   * each message whose execution, template and contact are still as they were rendered for
   * (startCompositions). The renders of one template go to the render threads together; up to
   * the batch's character budget.
   */
  async prerender(jobs: StepJob[]): Promise<Map<string, Prerendered>> {
    const manager = this.dataSource.manager;
    const found = await this.executions.findExecutions(
      manager,
      jobs.map((job) => job.executionId),
    );
    const due: { x: WorkflowExecution; step: WorkflowStep | null }[] = [];
    for (const job of jobs) {
      const x = found.get(job.executionId);
      if (!x || x.version !== job.version || x.status !== ExecutionStatus.RUNNING) continue;
      const { step } = await this.whereIs(manager, x);
      if (step?.type === 'SEND_EMAIL') due.push({ x, step });
    }
    const out = new Map<string, Prerendered>();
    if (due.length === 0) return out;
    // The batch's reads, made as the transaction will make them (prefetch), without locks.
    const b = new StepBatch(manager);
    await this.prefetch(b, due);
    let chars = 0;
    for (const { x, step } of due) {
      if (chars >= this.emailCharsPerBatch) break;
      if (step?.type !== 'SEND_EMAIL') continue;
      const sendable = await this.sendable(b, x, step);
      if (!sendable) continue;
      const { contact, template } = sendable;
      chars += template.subject.length + template.body.length;
      const input = await this.composeInput(b, x, step.id, template, contact);
      const rendered = this.emails.render(input);
      // Awaited by its step, or never when the step does not send: no unhandled rejection either way.
      rendered.catch(() => undefined);
      out.set(x.id, { version: x.version, stepId: step.id, template, contact, rendered });
    }
    // Every render ends (or fails) before the transaction opens.
    await Promise.allSettled([...out.values()].map((pre) => pre.rendered));
    return out;
  }

  /**
   * Starts rendering the batch's SEND_EMAIL messages together, once their
   * reads are made: each render is a round trip to a render thread, and
   * awaiting them one by one in the step loop left the threads idle between
   * them (bench:workflows). The step loop then takes each message as it runs
   * the step, in order, with the same checks as before; a message whose step
   * does not run (a template or sender error, the batch's character budget)
   * is dropped. Started only up to the batch's character budget.
   * A batch rendered before its transaction (b.prerendered) renders nothing
   * here: a step whose message was not rendered then, or was rendered for an
   * execution, template or contact that changed since, runs in a later batch.
   */
  private async startCompositions(
    b: StepBatch,
    due: { x: WorkflowExecution; step: WorkflowStep | null }[],
  ): Promise<void> {
    let chars = 0;
    for (const { x, step } of due) {
      if (x.status !== ExecutionStatus.RUNNING || step?.type !== 'SEND_EMAIL') continue;
      if (b.prerendered) {
        await this.takePrerendered(b, x, step);
        continue;
      }
      if (chars >= this.emailCharsPerBatch) return;
      const sendable = await this.sendable(b, x, step);
      if (!sendable) continue;
      const { contact, template } = sendable;
      chars += template.subject.length + template.body.length;
      const composing = this.compose(b, x, step.id, template, contact);
      // Awaited by its step, or never when the step does not send: no unhandled rejection either way.
      composing.catch(() => undefined);
      b.composing.set(x.id, composing);
    }
  }

  /** The message rendered before the transaction for this step, if it still fits; else the step waits for a later batch. */
  private async takePrerendered(
    b: StepBatch,
    x: WorkflowExecution,
    step: SendEmailStep,
  ): Promise<void> {
    const sendable = await this.sendable(b, x, step);
    if (!sendable) return;
    const { contact, template } = sendable;
    const pre = b.prerendered?.get(x.id);
    if (
      !pre ||
      pre.version !== x.version ||
      pre.stepId !== step.id ||
      !sameTemplate(template, pre.template) ||
      !rendersAlike(contact, pre.contact)
    ) {
      b.later.add(x.id);
      return;
    }
    const composing = pre.rendered.then((rendered) => this.emails.toRow(rendered, contact));
    // Awaited by its step, or never when the step does not send: no unhandled rejection either way.
    composing.catch(() => undefined);
    b.composing.set(x.id, composing);
  }

  /**
   * The contact and template of a SEND_EMAIL step that can render; null when the step will fail
   * (no contact, no template, no sender): it reports that itself when it runs, rendering nothing.
   */
  private async sendable(
    b: StepBatch,
    x: WorkflowExecution,
    step: SendEmailStep,
  ): Promise<{ contact: ContactRow; template: Template } | null> {
    const contact = b.contacts.get(x.contactId);
    let template: Template;
    try {
      template = await this.templateOf(b, x.projectId, step.templateId);
    } catch {
      return null;
    }
    return contact && template.fromEmail ? { contact, template } : null;
  }

  private templateOf(b: StepBatch, projectId: string, templateId: string): Promise<Template> {
    return b.once(`template/${projectId}/${templateId}`, () =>
      this.templates.findOrFail(projectId, templateId, b.manager),
    );
  }

  private async compose(
    b: StepBatch,
    x: WorkflowExecution,
    stepId: string,
    template: Template,
    contact: ContactRow,
  ): Promise<Email> {
    return this.emails.compose(await this.composeInput(b, x, stepId, template, contact));
  }

  private async composeInput(
    b: StepBatch,
    x: WorkflowExecution,
    stepId: string,
    template: Template,
    contact: ContactRow,
  ): Promise<ComposeEmailInput> {
    return {
      projectId: x.projectId,
      contact,
      source: EmailSource.WORKFLOW,
      marketing: template.type === TemplateType.MARKETING,
      track: template.track,
      templateId: template.id,
      from: { email: template.fromEmail as string, name: template.fromName },
      replyTo: template.replyTo,
      content: { subject: template.subject, body: template.body },
      data: await sendData(this.events, b.manager, x, b.triggerNames),
      workflowExecutionId: x.id,
      workflowStepId: stepId,
    };
  }

  /** Where the execution is: its definition, its position (the first step when it has not begun) and that step. */
  async whereIs(
    manager: EntityManager,
    x: WorkflowExecution,
  ): Promise<{ tree: StepTree | null; position: string | null; step: WorkflowStep | null }> {
    const tree = await this.treeOf(manager, x);
    const position = x.currentStepId ?? tree?.first() ?? null;
    return { tree, position, step: tree && position ? (tree.get(position) ?? null) : null };
  }

  async peek(
    executionId: string,
    version: number,
  ): Promise<{ execution: WorkflowExecution; webhookStep: WebhookStep | null } | null> {
    const manager = this.dataSource.manager;
    const x = await this.executions.findExecutionById(manager, executionId);
    if (!x || x.version !== version || !isOpen(x.status)) return null;
    let webhookStep: WebhookStep | null = null;
    if (x.status === ExecutionStatus.RUNNING) {
      const { step } = await this.whereIs(manager, x);
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
    const workflow = await this.workflows.findForEngine(manager, x.workflowId);
    if (!workflow) return null;
    const tree = new StepTree(workflow.steps);
    if (this.trees.size >= TREE_CACHE_SIZE)
      this.trees.delete(this.trees.keys().next().value as string);
    // Kept under the stamp read with the execution: a definition changed in between is read again next time.
    this.trees.set(x.workflowId, { stamp, tree });
    return tree;
  }

  /** One move of a locked execution. */
  private async step(
    b: StepBatch,
    x: WorkflowExecution,
    webhook: WebhookOutcome | null,
  ): Promise<string> {
    const { tree, position, step } = await this.whereIs(b.manager, x);
    if (!tree) return 'stale';
    b.trees.set(x.id, tree);
    if (position === null) {
      this.finish(b, x, ExecutionStatus.COMPLETED, null);
      return 'completed';
    }
    if (!step) {
      // The definition was edited while the execution waited here.
      this.finish(b, x, ExecutionStatus.EXITED, 'step_removed');
      return 'step_removed';
    }
    if (x.status === ExecutionStatus.WAITING) return this.wake(b, x, tree, step);
    if (x.resumeEventId && step.type === 'WAIT_FOR_EVENT') {
      this.record(b, x, step, StepRunStatus.COMPLETED, {
        branch: 'then',
        eventId: x.resumeEventId,
      });
      this.moveTo(b, x, tree.enter(step, 'then'));
      return 'event';
    }
    return this.execute(b, x, tree, step, webhook);
  }

  /** A DELAY's end or a WAIT_FOR_EVENT's timeout (the definition may have changed the duration meanwhile). */
  private wake(b: StepBatch, x: WorkflowExecution, tree: StepTree, step: WorkflowStep): string {
    if (step.type !== 'DELAY' && step.type !== 'WAIT_FOR_EVENT') {
      // Edited into another type while waiting: run it now.
      this.schedule(b, x, {
        status: ExecutionStatus.RUNNING,
        currentStepId: step.id,
        dueAt: new Date(),
        waitEvent: null,
      });
      return 'retyped';
    }
    const startedAt = x.stepStartedAt ?? new Date();
    const due = new Date(
      new Date(startedAt).getTime() + durationMs(step.type === 'DELAY' ? step : step.timeout),
    );
    if (due.getTime() - Date.now() > EARLY_MS) {
      this.schedule(b, x, {
        status: ExecutionStatus.WAITING,
        dueAt: due,
        waitEvent: step.type === 'WAIT_FOR_EVENT' ? step.event : null,
      });
      return 'rescheduled';
    }
    if (step.type === 'DELAY') {
      this.record(b, x, step, StepRunStatus.COMPLETED, null);
      this.moveTo(b, x, tree.next(step.id));
      return 'delayed';
    }
    this.record(b, x, step, StepRunStatus.COMPLETED, { branch: 'else', timedOut: true });
    this.moveTo(b, x, tree.enter(step, 'else'));
    return 'timeout';
  }

  private async execute(
    b: StepBatch,
    x: WorkflowExecution,
    tree: StepTree,
    step: WorkflowStep,
    webhook: WebhookOutcome | null,
  ): Promise<string> {
    switch (step.type) {
      case 'DELAY': {
        this.record(b, x, step, StepRunStatus.WAITING, null);
        this.schedule(b, x, {
          status: ExecutionStatus.WAITING,
          currentStepId: step.id,
          dueAt: new Date(Date.now() + durationMs(step)),
        });
        return 'waiting';
      }
      case 'WAIT_FOR_EVENT': {
        this.record(b, x, step, StepRunStatus.WAITING, { event: step.event });
        this.schedule(b, x, {
          status: ExecutionStatus.WAITING,
          currentStepId: step.id,
          waitEvent: step.event,
          dueAt: new Date(Date.now() + durationMs(step.timeout)),
        });
        return 'waiting';
      }
      case 'CONDITION': {
        const result =
          b.matches.get(x.id) ??
          (await this.conditions.matchesContact(
            b.manager,
            x.projectId,
            x.contactId,
            step.condition as ConditionGroup,
          ));
        this.record(b, x, step, StepRunStatus.COMPLETED, {
          result,
          branch: result ? 'then' : 'else',
        });
        this.moveTo(b, x, tree.enter(step, result ? 'then' : 'else'));
        return 'condition';
      }
      case 'UPDATE_CONTACT': {
        const change = { data: step.data, subscribed: step.subscribed };
        const updated = b.updates.has(x.id)
          ? b.updates.get(x.id)
          : await this.contacts.applyUpdate(b.manager, x.projectId, x.contactId, change);
        if (!updated) throw new StepError('the contact no longer exists');
        b.after.events.push({ rows: updated.events, email: updated.row.email });
        this.record(b, x, step, StepRunStatus.COMPLETED, {
          data: updated.row.data,
          subscribed: updated.row.subscribed,
        });
        this.moveTo(b, x, tree.next(step.id));
        return 'updated';
      }
      case 'SEND_EMAIL': {
        const emailId = await this.sendEmail(b, x, step.id, step.templateId);
        this.record(b, x, step, StepRunStatus.COMPLETED, { emailId });
        this.moveTo(b, x, tree.next(step.id));
        return 'sent';
      }
      case 'WEBHOOK':
        return this.webhookResult(b, x, tree, step, webhook);
      case 'EXIT':
        this.record(b, x, step, StepRunStatus.COMPLETED, null);
        this.finish(b, x, ExecutionStatus.EXITED, 'exit_step');
        return 'exited';
    }
  }

  private async sendEmail(
    b: StepBatch,
    x: WorkflowExecution,
    stepId: string,
    templateId: string,
  ): Promise<string> {
    // Every read inside the step's transaction goes through its manager: a second connection per
    // step would let as many concurrent steps as the pool has connections wait on each other forever.
    const manager = b.manager;
    const template = await this.templateOf(b, x.projectId, templateId);
    if (!template.fromEmail) throw new StepError(`template ${templateId} has no from address`);
    const fromEmail = template.fromEmail;
    await b.once(`sender/${x.projectId}/${fromEmail}`, () =>
      this.domains.assertCanSend(x.projectId, fromEmail, manager),
    );
    const contact =
      b.contacts.get(x.contactId) ??
      (await this.contacts.findRow(manager, x.projectId, x.contactId));
    if (!contact) throw new StepError('the contact no longer exists');
    const email = await (b.composing.get(x.id) ?? this.compose(b, x, stepId, template, contact));
    // Inserted with the batch's other emails at the end of the transaction (write).
    b.emails.push({ email, address: contact.email });
    b.emailChars += email.subject.length + (email.html?.length ?? 0) + (email.text?.length ?? 0);
    b.after.emails.push(email);
    return email.id;
  }

  private async webhookResult(
    b: StepBatch,
    x: WorkflowExecution,
    tree: StepTree,
    step: WebhookStep,
    webhook: WebhookOutcome | null,
  ): Promise<string> {
    if (!webhook || webhook.stepId !== step.id) {
      // The definition changed between the call and the lock: run the step again with a fresh job.
      this.schedule(b, x, {
        status: ExecutionStatus.RUNNING,
        currentStepId: step.id,
        dueAt: new Date(),
      });
      return 'again';
    }
    const attempts = x.stepAttempts + 1;
    if (webhook.kind === 'answered' && webhook.status < 500) {
      this.record(b, x, step, StepRunStatus.COMPLETED, {
        status: webhook.status,
        body: webhook.body,
        attempts,
      });
      this.moveTo(b, x, tree.next(step.id));
      return 'webhook';
    }
    const error = webhook.kind === 'answered' ? `answered ${webhook.status}` : webhook.error;
    const output =
      webhook.kind === 'answered'
        ? { status: webhook.status, body: webhook.body, attempts }
        : { attempts };
    const delays = this.config.workflowRetryDelaysMs;
    if (webhook.kind === 'refused' || attempts > delays.length) {
      this.record(b, x, step, StepRunStatus.FAILED, output, error);
      await this.fail(b, x, null, `WEBHOOK step ${step.id}: ${error}`);
      return 'failed';
    }
    this.record(b, x, step, StepRunStatus.WAITING, output, error);
    this.schedule(b, x, {
      status: ExecutionStatus.RUNNING,
      currentStepId: step.id,
      stepAttempts: attempts,
      dueAt: new Date(Date.now() + delays[attempts - 1]),
    });
    return 'retry';
  }

  private record(
    b: StepBatch,
    x: WorkflowExecution,
    step: WorkflowStep,
    status: StepRunStatus,
    output: Record<string, unknown> | null,
    error: string | null = null,
  ): void {
    // Written with the transition that follows (or on its own, should none follow).
    b.runs.set(x.id, {
      executionId: x.id,
      stepId: step.id,
      type: step.type,
      status,
      output,
      error,
      finished: status !== StepRunStatus.WAITING,
    });
  }

  /** The step record still waiting for a transition, to be written on its own. */
  private flushRun(b: StepBatch, executionId: string): void {
    const run = b.runs.get(executionId);
    if (!run) return;
    b.runs.delete(executionId);
    b.records.push(run);
  }

  private takeRun(b: StepBatch, executionId: string): StepRun | null {
    const run = b.runs.get(executionId) ?? null;
    b.runs.delete(executionId);
    return run;
  }

  /**
   * On to `next` (RUNNING, due now), or COMPLETED when there is none. A
   * DELAY or WAIT_FOR_EVENT is entered at once, in this transaction (its
   * record WAITING, the execution WAITING until its end or timeout): its own
   * job is the one that ends the wait, so a wait costs one job, not two.
   */
  private moveTo(b: StepBatch, x: WorkflowExecution, next: string | null): void {
    if (next === null) return this.finish(b, x, ExecutionStatus.COMPLETED, null);
    const step = b.trees.get(x.id)?.get(next);
    if (step?.type === 'DELAY' || step?.type === 'WAIT_FOR_EVENT') {
      this.flushRun(b, x.id);
      const waitEvent = step.type === 'WAIT_FOR_EVENT' ? step.event : null;
      this.record(
        b,
        x,
        step,
        StepRunStatus.WAITING,
        waitEvent === null ? null : { event: waitEvent },
      );
      this.schedule(b, x, {
        status: ExecutionStatus.WAITING,
        currentStepId: step.id,
        dueAt: new Date(Date.now() + durationMs(step.type === 'DELAY' ? step : step.timeout)),
        waitEvent,
        resumeEventId: null,
        stepAttempts: 0,
      });
      return;
    }
    this.schedule(b, x, {
      status: ExecutionStatus.RUNNING,
      currentStepId: next,
      dueAt: new Date(),
      waitEvent: null,
      resumeEventId: null,
      stepAttempts: 0,
    });
  }

  /** The execution's transition (written at the end of the batch), and its next job once committed. */
  private schedule(b: StepBatch, x: WorkflowExecution, to: ExecutionTransition): void {
    b.transitions.set(x.id, { execution: x, to, run: this.takeRun(b, x.id) });
    const version = x.version + 1;
    // The step the job will run, as the definition read in this transaction has it.
    const stepId = to.currentStepId !== undefined ? to.currentStepId : x.currentStepId;
    const step = stepId ? b.trees.get(x.id)?.get(stepId) : undefined;
    b.after.jobs.push(
      step && step.type !== 'WEBHOOK'
        ? { id: x.id, version, dueAt: to.dueAt, direct: true }
        : { id: x.id, version, dueAt: to.dueAt },
    );
  }

  private finish(
    b: StepBatch,
    x: WorkflowExecution,
    status: ExecutionStatus,
    exitReason: string | null,
  ): void {
    b.transitions.set(x.id, {
      execution: x,
      to: {
        status,
        dueAt: null,
        waitEvent: null,
        resumeEventId: null,
        finishedAt: new Date(),
        exitReason,
      },
      run: this.takeRun(b, x.id),
    });
  }

  /** The step (when known) and the execution end FAILED; `workflow.execution.failed` is recorded for the project. */
  async fail(
    b: StepBatch,
    x: WorkflowExecution,
    stepId: string | null,
    error: string,
  ): Promise<void> {
    if (stepId) {
      // This step's own record (a failure of the step itself): whatever it had recorded is replaced.
      b.runs.delete(x.id);
      const tree = b.trees.get(x.id) ?? (await this.treeOf(b.manager, x));
      const step = tree?.get(stepId) ?? null;
      b.records.push({
        executionId: x.id,
        stepId,
        type: step?.type ?? 'UNKNOWN',
        status: StepRunStatus.FAILED,
        output: null,
        error,
        finished: true,
      });
    }
    b.transitions.set(x.id, {
      execution: x,
      to: {
        status: ExecutionStatus.FAILED,
        dueAt: null,
        waitEvent: null,
        resumeEventId: null,
        finishedAt: new Date(),
        exitReason: error.slice(0, 100),
      },
      run: this.takeRun(b, x.id),
    });
    const event = await this.events.record(b.manager, {
      projectId: x.projectId,
      contactId: x.contactId,
      name: 'workflow.execution.failed',
      data: { workflowId: x.workflowId, executionId: x.id, stepId, error: error.slice(0, 500) },
    });
    b.after.events.push({ rows: [event], email: null });
    this.logger.warn(
      { executionId: x.id, workflowId: x.workflowId, stepId, error },
      'workflow execution failed',
    );
  }

  /** The batch's writes, at the end of its transaction: emails (with `email.queued`), step records, transitions. */
  async write(b: StepBatch): Promise<void> {
    for (const executionId of [...b.runs.keys()]) this.flushRun(b, executionId);
    if (b.emails.length > 0) {
      const queued = await this.emails.insert(
        b.manager,
        b.emails.map((e) => e.email),
      );
      const addresses = new Map(b.emails.map((e) => [e.email.id, e.address]));
      for (const row of queued)
        b.after.events.push({
          rows: [row],
          email: row.emailId ? (addresses.get(row.emailId) ?? null) : null,
        });
    }
    const moved = await this.executions.writeSteps(b.manager, b.records, [
      ...b.transitions.values(),
    ]);
    if (moved.size < b.transitions.size) {
      // Moved within this transaction by an event another step recorded (the events trigger ended its wait):
      // the trigger's move stands, and the dispatcher adds its job once the event is published.
      b.after.jobs = b.after.jobs.filter((job) => moved.has(job.id));
      for (const id of b.transitions.keys()) if (!moved.has(id)) b.overtaken.add(id);
    }
  }

  async afterCommit(after: AfterCommit): Promise<void> {
    if (after.emails.length > 0) await this.emails.enqueue(after.emails);
    await this.dispatcher.enqueue(after.jobs);
    const events = after.events.flatMap(({ rows, email }) =>
      rows.map((row) => ({ ...row, email })),
    );
    if (events.length > 0) await this.events.publish(events);
  }
}

export function isOpen(status: ExecutionStatus): boolean {
  return status === ExecutionStatus.RUNNING || status === ExecutionStatus.WAITING;
}

/**
 * The step's own problem (a template gone, a sender not verified, a render
 * over its limits, a condition the database refuses): the execution fails.
 * Anything else (the database or Redis unreachable) is retried by the job.
 */
export function isStepFailure(error: unknown): boolean {
  if (
    error instanceof StepError ||
    error instanceof ApiException ||
    error instanceof TemplateRenderError
  )
    return true;
  if (error instanceof QueryFailedError) {
    const state = sqlState(error) ?? '';
    return ['22', '23', '42', '2B', '0A'].some((cls) => state.startsWith(cls));
  }
  return false;
}

/** Whether a message rendered from `rendered` is what `current` would make (every field compose reads). */
function sameTemplate(current: Template, rendered: Template): boolean {
  return (
    current === rendered ||
    (current.id === rendered.id &&
      current.subject === rendered.subject &&
      current.body === rendered.body &&
      current.fromEmail === rendered.fromEmail &&
      current.fromName === rendered.fromName &&
      current.replyTo === rendered.replyTo &&
      current.type === rendered.type &&
      current.track === rendered.track)
  );
}
