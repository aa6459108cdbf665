import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { ApiException, FieldError } from '../common/errors/api-exception';
import type { DeletedResponse } from '../common/openapi/error-envelope.response';
import { decodeCursor, Page, pageOf } from '../common/pagination/pagination';
import { ConditionsService } from '../conditions/conditions.service';
import { persistedValues } from '../contacts/contact-data';
import { ContactsService } from '../contacts/contacts.service';
import { newId } from '../database/id';
import { SegmentMembershipService } from '../segments/segment-membership.service';
import { TemplatesService } from '../templates/templates.service';
import { CreateWorkflowDto, WorkflowTriggerDto } from './dto/create-workflow.dto';
import { ExecutionResponse, toExecutionResponse } from './dto/execution.response';
import { ListExecutionsQueryDto } from './dto/list-executions.query';
import { ListWorkflowsQueryDto } from './dto/list-workflows.query';
import { StartExecutionDto } from './dto/start-execution.dto';
import { UpdateWorkflowDto } from './dto/update-workflow.dto';
import {
  toWorkflowResponse,
  WorkflowResponse,
  WorkflowWithSecretResponse,
} from './dto/workflow.response';
import { WorkflowDispatcher } from './workflow-dispatcher';
import { WorkflowSecrets } from './workflow-secrets';
import { realValues, sealableSteps, StepSecrets } from './workflow-step-secrets';
import { checkSteps, StepTree, waitOf, WorkflowStep } from './workflow-steps';
import { ExecutionStatus, Workflow, WorkflowTriggerType } from './workflow.entity';
import { DueExecution, WorkflowExecutionsRepository } from './workflow-executions.repository';
import { WorkflowsRepository } from './workflows.repository';
import { retryOnDeadlock } from '../database/retry-on-deadlock';
import { ReadDatabase } from '../database/read-database';

/**
 * The event name that starts a workflow of this trigger (the events trigger joins on it). A segment id is
 * lowercased, as membership events spell it (an id sent in capitals would otherwise name no event ever).
 */
export function triggerNameOf(trigger: {
  type: WorkflowTriggerType;
  event?: string | null;
  segmentId?: string | null;
}): string | null {
  switch (trigger.type) {
    case WorkflowTriggerType.EVENT:
      return trigger.event ?? null;
    case WorkflowTriggerType.SEGMENT_ENTRY:
      return `segment.${trigger.segmentId?.toLowerCase()}.entered`;
    case WorkflowTriggerType.SEGMENT_EXIT:
      return `segment.${trigger.segmentId?.toLowerCase()}.exited`;
    case WorkflowTriggerType.MANUAL:
      return null;
  }
}

/**
 * Workflows: the resource, its validation, manual starts, executions and
 * cancel. Starting by events and running steps are the events trigger's and
 * WorkflowEngine's.
 */
@Injectable()
export class WorkflowsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    /** Reads that tolerate lag: list pages (docs/scaling.md). */
    private readonly read: ReadDatabase,
    private readonly workflows: WorkflowsRepository,
    private readonly executions: WorkflowExecutionsRepository,
    private readonly dispatcher: WorkflowDispatcher,
    private readonly conditions: ConditionsService,
    private readonly templates: TemplatesService,
    private readonly contacts: ContactsService,
    private readonly membership: SegmentMembershipService,
    private readonly secrets: WorkflowSecrets,
  ) {}

  async create(projectId: string, dto: CreateWorkflowDto): Promise<WorkflowWithSecretResponse> {
    const id = newId();
    const signing = this.secrets.create(id);
    const row = await this.dataSource.transaction(async (manager) => {
      const checked = await this.checkDefinition(manager, projectId, dto.trigger, dto.steps, []);
      const { steps, secrets } = this.sealSteps(checked, new Map());
      const created = await this.workflows.insert(manager, {
        id,
        secretSealed: signing.sealed,
        stepSecretsSealed: this.secrets.sealSteps(id, secrets),
        projectId,
        name: dto.name,
        description: dto.description ?? null,
        enabled: dto.enabled ?? false,
        triggerType: dto.trigger.type,
        triggerEvent:
          dto.trigger.type === WorkflowTriggerType.EVENT ? (dto.trigger.event as string) : null,
        triggerSegmentId: isSegmentTrigger(dto.trigger.type)
          ? (dto.trigger.segmentId as string).toLowerCase()
          : null,
        triggerName: triggerNameOf(dto.trigger),
        allowReentry: dto.allowReentry ?? false,
        steps,
      });
      await this.syncMembership(manager, projectId);
      return created;
    });
    this.dispatcher.invalidate(projectId);
    return { ...(await this.respond(row)), secret: signing.secret };
  }

  /** A new secret signs the workflow's WEBHOOK calls from the next one on; shown in this answer only. */
  async rotateSecret(projectId: string, id: string): Promise<WorkflowWithSecretResponse> {
    const secret = await this.secrets.rotate(projectId, id);
    if (secret === null) throw ApiException.notFound('workflow', id);
    return { ...(await this.get(projectId, id)), secret };
  }

  async list(projectId: string, query: ListWorkflowsQueryDto): Promise<Page<WorkflowResponse>> {
    const limit = query.limit ?? 20;
    const afterId = query.cursor ? decodeCursor(query.cursor) : null;
    const { rows, total } = await this.workflows.list(
      this.read.manager,
      projectId,
      { enabled: query.enabled, search: query.search?.trim() },
      afterId,
      limit,
    );
    const counts = await this.executions.countsOf(
      this.read.manager,
      rows.map((r) => r.id),
    );
    return pageOf(
      rows,
      limit,
      total,
      (row) => toWorkflowResponse(row, counts.get(row.id) as never),
      (row) => row.id,
    );
  }

  async get(projectId: string, id: string): Promise<WorkflowResponse> {
    return this.respond(await this.findOrFail(this.dataSource.manager, projectId, id));
  }

  /**
   * A change of `steps` applies to executions in flight: one at a step that
   * still exists continues from it under the new definition; one whose step
   * was removed ends EXITED (`step_removed`) here. One waiting at a DELAY or
   * WAIT_FOR_EVENT whose wait changed is re-scheduled here too (see
   * rescheduleChangedWaits), so a shorter wait ends on time, not at the old end.
   */
  async update(projectId: string, id: string, dto: UpdateWorkflowDto): Promise<WorkflowResponse> {
    let moved: DueExecution[] = [];
    // A deadlock's victim is rolled back whole: run it again (lock order makes one rare, triggers can still cross it).
    const row = await retryOnDeadlock(() =>
      this.dataSource.transaction(async (manager) => {
        const current = await this.workflows.lockById(manager, projectId, id);
        if (!current) throw ApiException.notFound('workflow', id);
        const trigger: WorkflowTriggerDto = dto.trigger ?? {
          type: current.triggerType,
          event: current.triggerEvent ?? undefined,
          segmentId: current.triggerSegmentId ?? undefined,
        };
        let steps = await this.checkDefinition(
          manager,
          projectId,
          trigger,
          dto.steps ?? current.steps,
          current.steps,
          !dto.trigger,
          !dto.steps,
        );
        const fields: Partial<Workflow> = {};
        if (dto.name !== undefined) fields.name = dto.name;
        if (dto.description !== undefined) fields.description = dto.description;
        if (dto.enabled !== undefined) fields.enabled = dto.enabled;
        if (dto.allowReentry !== undefined) fields.allowReentry = dto.allowReentry;
        if (dto.trigger) {
          fields.triggerType = trigger.type;
          fields.triggerEvent =
            trigger.type === WorkflowTriggerType.EVENT ? (trigger.event as string) : null;
          fields.triggerSegmentId = isSegmentTrigger(trigger.type)
            ? (trigger.segmentId as string).toLowerCase()
            : null;
          fields.triggerName = triggerNameOf(trigger);
        }
        if (dto.steps) {
          let stored: StepSecrets = {};
          try {
            stored = this.secrets.openSteps(id, current.stepSecretsSealed);
          } catch {
            // Unreadable (APP_SECRET changed without APP_SECRET_PREVIOUS): a `***` then asks for the value again.
          }
          const sealed = this.sealSteps(steps, realValues(current.steps, stored));
          steps = sealed.steps;
          fields.steps = steps;
          fields.stepSecretsSealed = this.secrets.sealSteps(id, sealed.secrets);
          await this.executions.lockOpenOfWorkflow(manager, id);
          await this.executions.exitRemovedSteps(manager, id, new StepTree(steps).ids());
          moved = await this.rescheduleChangedWaits(manager, id, current.steps, steps);
        }
        await this.workflows.update(manager, id, fields);
        await this.syncMembership(manager, projectId);
        return (await this.workflows.findById(manager, projectId, id)) as Workflow;
      }),
    );
    this.dispatcher.invalidate(projectId);
    await this.dispatcher.enqueue(moved);
    return this.respond(row);
  }

  /**
   * Executions waiting at a kept step whose wait changed (a DELAY's duration,
   * a WAIT_FOR_EVENT's timeout or event, or a step no longer a wait) get a new
   * version and due time, so their old job is stale and the new one runs on
   * the new definition. A duration counts from when the wait began, as the
   * engine counts it; a due time already past is now. A step that is no longer
   * a wait runs now. The caller adds the jobs after commit.
   */
  private async rescheduleChangedWaits(
    manager: EntityManager,
    workflowId: string,
    before: WorkflowStep[],
    after: WorkflowStep[],
  ): Promise<DueExecution[]> {
    const old = new StepTree(before);
    const now = new StepTree(after);
    const moved: DueExecution[] = [];
    for (const stepId of now.ids()) {
      const previous = old.get(stepId);
      const wasWait = previous ? waitOf(previous) : null;
      // Executions wait only at a DELAY or a WAIT_FOR_EVENT.
      if (!wasWait) continue;
      const wait = waitOf(now.get(stepId) as WorkflowStep);
      if (wait && wait.durationMs === wasWait.durationMs && wait.event === wasWait.event) continue;
      moved.push(...(await this.executions.rescheduleWaiting(manager, workflowId, stepId, wait)));
    }
    return moved;
  }

  /** Deleting cancels its running executions (exitReason `workflow_deleted`). */
  async remove(projectId: string, id: string): Promise<DeletedResponse> {
    await retryOnDeadlock(() =>
      this.dataSource.transaction(async (manager) => {
        const current = await this.workflows.lockById(manager, projectId, id);
        if (!current || !(await this.workflows.softDelete(manager, projectId, id)))
          throw ApiException.notFound('workflow', id);
        await this.executions.lockOpenOfWorkflow(manager, id);
        await this.executions.cancelOpenOfWorkflow(manager, id, 'workflow_deleted');
        await this.syncMembership(manager, projectId);
      }),
    );
    this.dispatcher.invalidate(projectId);
    return { id, deleted: true };
  }

  /** POST /workflows/{id}/executions: 202 with the execution; 409 when disabled or the contact may not enter. */
  async start(projectId: string, id: string, dto: StartExecutionDto): Promise<ExecutionResponse> {
    const started = await this.dataSource.transaction(async (manager) => {
      const workflow = await this.findOrFail(manager, projectId, id);
      if ((dto.contactId === undefined) === (dto.email === undefined)) {
        throw ApiException.validation([
          {
            field: 'contactId',
            message: 'Give exactly one of contactId and email',
            code: 'custom',
          },
        ]);
      }
      if (!workflow.enabled)
        throw ApiException.conflict(
          `Workflow ${id} is disabled`,
          'Enable it with PATCH /workflows/{id} {enabled: true}.',
        );
      // The start's data is taken as a track's: merged into the contact (the steps read it there, as
      // it is when they run), `{value, persistent: false}` values kept on the execution for rendering.
      let contactId: string;
      if (dto.contactId) {
        const persisted = persistedValues(dto.data);
        const contact =
          Object.keys(persisted).length > 0
            ? (
                await this.contacts.applyUpdate(manager, projectId, dto.contactId, {
                  data: persisted,
                })
              )?.row
            : await this.contacts.findRow(manager, projectId, dto.contactId);
        if (!contact) throw ApiException.notFound('contact', dto.contactId);
        contactId = contact.id;
      } else {
        const { contact } = await this.contacts.upsertByEmail(
          manager,
          projectId,
          dto.email as string,
          { defaultSubscribed: true, data: dto.data },
        );
        contactId = contact.id;
      }
      const execution = await this.executions.insertExecution(manager, {
        projectId,
        workflowId: id,
        contactId,
        data: dto.data ?? {},
        allowReentry: workflow.allowReentry,
      });
      if (!execution) {
        throw ApiException.conflict(
          workflow.allowReentry
            ? `The contact is already running workflow ${id}`
            : `The contact has already run workflow ${id}, which does not allow re-entry`,
        );
      }
      return execution;
    });
    await this.dispatcher.enqueue([started]);
    return this.execution(projectId, id, started.id);
  }

  async listExecutions(
    projectId: string,
    id: string,
    query: ListExecutionsQueryDto,
  ): Promise<Page<ExecutionResponse>> {
    await this.findOrFail(this.read.manager, projectId, id);
    const limit = query.limit ?? 20;
    const afterId = query.cursor ? decodeCursor(query.cursor) : null;
    const { rows, total } = await this.executions.listExecutions(
      this.read.manager,
      id,
      { status: query.status, contactId: query.contactId?.toLowerCase() },
      afterId,
      limit,
    );
    const steps = await this.executions.stepsOf(
      this.dataSource.manager,
      rows.slice(0, limit).map((r) => r.id),
    );
    return pageOf(
      rows,
      limit,
      total,
      (row) =>
        toExecutionResponse(
          row,
          steps.filter((s) => s.executionId === row.id),
        ),
      (row) => row.id,
    );
  }

  async execution(projectId: string, id: string, executionId: string): Promise<ExecutionResponse> {
    await this.findOrFail(this.dataSource.manager, projectId, id);
    const row = await this.executions.findExecution(
      this.dataSource.manager,
      projectId,
      id,
      executionId,
    );
    if (!row) throw executionNotFound(id, executionId);
    return toExecutionResponse(
      row,
      await this.executions.stepsOf(this.dataSource.manager, [row.id]),
    );
  }

  /** 200 with the execution; 409 when it has already finished. */
  async cancel(projectId: string, id: string, executionId: string): Promise<ExecutionResponse> {
    await this.dataSource.transaction(async (manager) => {
      await this.findOrFail(manager, projectId, id);
      const found = await this.executions.findExecution(manager, projectId, id, executionId);
      if (!found) throw executionNotFound(id, executionId);
      // Gone between the read and the lock (its contact erased): 404, as a read after it would answer.
      const x = await this.executions.lockExecution(manager, executionId);
      if (!x) throw executionNotFound(id, executionId);
      if (x.status !== ExecutionStatus.RUNNING && x.status !== ExecutionStatus.WAITING) {
        throw ApiException.conflict(`Execution ${executionId} has already finished (${x.status})`);
      }
      await this.executions.transition(manager, x, {
        status: ExecutionStatus.CANCELLED,
        dueAt: null,
        waitEvent: null,
        resumeEventId: null,
        finishedAt: new Date(),
        exitReason: 'cancelled',
      });
    });
    return this.execution(projectId, id, executionId);
  }

  /** The steps to store (masked) and their sealed values; a `***` with nothing to keep is a 422. */
  private sealSteps(
    steps: WorkflowStep[],
    stored: ReturnType<typeof realValues>,
  ): { steps: WorkflowStep[]; secrets: StepSecrets } {
    const sealed = sealableSteps(steps, stored);
    if (sealed.errors.length > 0) throw ApiException.validation(sealed.errors);
    return sealed;
  }

  private async findOrFail(
    manager: EntityManager,
    projectId: string,
    id: string,
  ): Promise<Workflow> {
    const row = await this.workflows.findById(manager, projectId, id);
    if (!row) throw ApiException.notFound('workflow', id);
    return row;
  }

  private async respond(row: Workflow): Promise<WorkflowResponse> {
    const counts = await this.executions.countsOf(this.dataSource.manager, [row.id]);
    return toWorkflowResponse(row, counts.get(row.id) as never);
  }

  /** The segments enabled workflows of the project enter or leave on have their membership kept. */
  private async syncMembership(manager: EntityManager, projectId: string): Promise<void> {
    await this.membership.keep(
      manager,
      projectId,
      await this.workflows.keptSegments(manager, projectId),
    );
  }

  /**
   * The trigger's fields by type and the steps (structure, templates with a
   * sender, conditions, Liquid): 422 with a `field` path for each problem.
   * Stored steps are re-checked against what they refer to only when the
   * request changes them (`stepsUnchanged`): an edit of the name must not
   * fail because a template was deleted since.
   */
  private async checkDefinition(
    manager: EntityManager,
    projectId: string,
    trigger: WorkflowTriggerDto,
    rawSteps: unknown,
    storedSteps: WorkflowStep[],
    triggerUnchanged = false,
    stepsUnchanged = false,
  ): Promise<WorkflowStep[]> {
    const errors: FieldError[] = [];
    if (!triggerUnchanged) errors.push(...(await this.checkTrigger(manager, projectId, trigger)));
    const { steps, errors: stepErrors, refs } = checkSteps(rawSteps, storedSteps);
    errors.push(...stepErrors);
    if (!stepsUnchanged && stepErrors.length === 0) {
      for (const ref of refs.templates) {
        const template = await this.templates
          .findOrFail(projectId, ref.templateId, manager)
          .catch(() => null);
        if (!template)
          errors.push({
            field: ref.path,
            message: `Unknown template ${ref.templateId}`,
            code: 'custom',
          });
        else if (!template.fromEmail) {
          errors.push({
            field: ref.path,
            message: `Template ${ref.templateId} has no from address; a SEND_EMAIL step needs one`,
            code: 'custom',
          });
        }
      }
      for (const ref of refs.conditions) {
        errors.push(
          ...(await this.conditions.validate(manager, ref.condition, {
            projectId,
            path: ref.path,
          })),
        );
      }
      for (const ref of refs.liquid) {
        const problem = this.templates.liquidError(ref.source);
        if (problem)
          errors.push({
            field: ref.path,
            message: `Liquid does not parse: ${problem}`,
            code: 'invalid_template',
          });
      }
    }
    if (errors.length > 0) throw ApiException.validation(errors);
    return steps;
  }

  private async checkTrigger(
    manager: EntityManager,
    projectId: string,
    trigger: WorkflowTriggerDto,
  ): Promise<FieldError[]> {
    const errors: FieldError[] = [];
    if (trigger.type === WorkflowTriggerType.EVENT) {
      if (!trigger.event)
        errors.push({
          field: 'trigger.event',
          message: 'An EVENT trigger names its event',
          code: 'required',
        });
    } else if (trigger.event !== undefined) {
      errors.push({
        field: 'trigger.event',
        message: `Only an EVENT trigger has an event`,
        code: 'custom',
      });
    }
    if (isSegmentTrigger(trigger.type)) {
      if (!trigger.segmentId)
        errors.push({
          field: 'trigger.segmentId',
          message: `A ${trigger.type} trigger names its segment`,
          code: 'required',
        });
      else if (!(await this.workflows.segmentExists(manager, projectId, trigger.segmentId))) {
        errors.push({
          field: 'trigger.segmentId',
          message: `Unknown segment ${trigger.segmentId}`,
          code: 'custom',
        });
      }
    } else if (trigger.segmentId !== undefined) {
      errors.push({
        field: 'trigger.segmentId',
        message: 'Only a SEGMENT_ENTRY or SEGMENT_EXIT trigger has a segment',
        code: 'custom',
      });
    }
    return errors;
  }

  /** For the engine's callers and tests: the jobs of these executions. */
  enqueue(executions: DueExecution[]): Promise<void> {
    return this.dispatcher.enqueue(executions);
  }
}

/**
 * The contract's 404 codes name resources, and an execution is part of its
 * workflow: a missing one is WORKFLOW_NOT_FOUND, its message naming both.
 */
function executionNotFound(workflowId: string, executionId: string): ApiException {
  return new ApiException(
    404,
    'WORKFLOW_NOT_FOUND',
    `Execution ${executionId} of workflow ${workflowId} was not found`,
    {
      suggestion:
        'Check the execution id with GET /workflows/{id}/executions; ids of another project are not visible with this key.',
    },
  );
}

function isSegmentTrigger(type: WorkflowTriggerType): boolean {
  return type === WorkflowTriggerType.SEGMENT_ENTRY || type === WorkflowTriggerType.SEGMENT_EXIT;
}
