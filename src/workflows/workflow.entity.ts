import {
  Column,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  UpdateDateColumn,
} from 'typeorm';
import { BaseEntity } from '../database/base.entity';
import { Project } from '../projects/project.entity';
import { Segment } from '../segments/segment.entity';
import type { WorkflowStep } from './workflow-steps';

export enum WorkflowTriggerType {
  EVENT = 'EVENT',
  SEGMENT_ENTRY = 'SEGMENT_ENTRY',
  SEGMENT_EXIT = 'SEGMENT_EXIT',
  MANUAL = 'MANUAL',
}

export enum ExecutionStatus {
  RUNNING = 'RUNNING',
  WAITING = 'WAITING',
  COMPLETED = 'COMPLETED',
  EXITED = 'EXITED',
  FAILED = 'FAILED',
  CANCELLED = 'CANCELLED',
}

export const OPEN_EXECUTION_STATUSES = [ExecutionStatus.RUNNING, ExecutionStatus.WAITING] as const;

export enum StepRunStatus {
  COMPLETED = 'COMPLETED',
  FAILED = 'FAILED',
  SKIPPED = 'SKIPPED',
  WAITING = 'WAITING',
}

/**
 * An automation: a trigger and a tree of steps (jsonb, step ids stable across
 * edits). `triggerName` is the event name that starts it, derived from the
 * trigger (EVENT: the event; SEGMENT_ENTRY/EXIT: `segment.<id>.entered|exited`;
 * MANUAL: null): the events trigger (migration Workflows) joins on it.
 * A delete is soft (`deletedAt`): executions keep their workflow row.
 */
@Entity('workflows')
@Index('workflows_project_id_id_idx', ['projectId', 'id'])
@Index('workflows_trigger_idx', ['projectId', 'triggerName'], {
  where: 'enabled AND deleted_at IS NULL',
})
export class Workflow extends BaseEntity {
  @Column('uuid')
  projectId: string;

  @ManyToOne(() => Project, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'project_id' })
  project?: Project;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  @Column({ type: 'boolean', default: false })
  enabled: boolean;

  @Column({ type: 'enum', enum: WorkflowTriggerType, enumName: 'workflow_trigger_type' })
  triggerType: WorkflowTriggerType;

  @Column({ type: 'varchar', length: 100, nullable: true })
  triggerEvent: string | null;

  /** A deleted segment would leave the trigger naming nothing: the segment's delete is refused (409) instead. */
  @Column({ type: 'uuid', nullable: true })
  triggerSegmentId: string | null;

  @ManyToOne(() => Segment, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'trigger_segment_id' })
  triggerSegment?: Segment;

  @Column({ type: 'varchar', length: 120, nullable: true })
  triggerName: string | null;

  @Column({ type: 'boolean', default: false })
  allowReentry: boolean;

  @Column({ type: 'jsonb' })
  steps: WorkflowStep[];

  /**
   * The secret that signs WEBHOOK calls, sealed (WorkflowSecrets). Null only
   * for a workflow from before signing until its first WEBHOOK call seals one.
   */
  @Column({ type: 'text', nullable: true })
  secretSealed: string | null;

  /**
   * The WEBHOOK steps' credentials, sealed (WorkflowStepSecrets): header
   * values and URL credentials by step id, which `steps` holds as `***`.
   */
  @Column({ type: 'text', nullable: true })
  stepSecretsSealed: string | null;

  @Column({ type: 'timestamptz', nullable: true })
  deletedAt: Date | null;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}

/**
 * One contact's run through a workflow. `currentStepId` is the position
 * (null before the first step); `version` changes at every transition and is
 * part of the step job's id, so a stale or repeated job does nothing. `dueAt`
 * is when the next job is due (RUNNING: now; WAITING: the delay's end or the
 * wait's timeout); the recovery re-adds jobs of open executions overdue by a
 * margin. Re-entry is enforced here: `onceKey` (the contact id when the
 * workflow does not allow re-entry) is unique per workflow, and at most one
 * open execution per (workflow, contact).
 */
@Entity('workflow_executions')
@Index('workflow_executions_workflow_id_id_idx', ['workflowId', 'id'])
@Index('workflow_executions_once_idx', ['workflowId', 'onceKey'], { unique: true })
@Index('workflow_executions_open_idx', ['workflowId', 'contactId'], {
  unique: true,
  where: `status IN ('RUNNING', 'WAITING')`,
})
@Index('workflow_executions_due_idx', ['dueAt'], { where: `status IN ('RUNNING', 'WAITING')` })
@Index('workflow_executions_waiting_idx', ['contactId', 'waitEvent'], {
  where: `status = 'WAITING' AND wait_event IS NOT NULL`,
})
// ON DELETE CASCADE from contacts looks executions up by contact_id alone.
@Index('workflow_executions_contact_id_idx', ['contactId'])
@Index('workflow_executions_trigger_event_idx', ['triggerEventId'], {
  where: 'trigger_event_id IS NOT NULL',
})
@Index('workflow_executions_resume_event_idx', ['resumeEventId'], {
  where: 'resume_event_id IS NOT NULL',
})
export class WorkflowExecution extends BaseEntity {
  @Column('uuid')
  projectId: string;

  @Column('uuid')
  workflowId: string;

  @ManyToOne(() => Workflow, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'workflow_id' })
  workflow?: Workflow;

  @Column('uuid')
  contactId: string;

  @ManyToOne('Contact', { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'contact_id' })
  contact?: unknown;

  @Column({
    type: 'enum',
    enum: ExecutionStatus,
    enumName: 'workflow_execution_status',
    default: ExecutionStatus.RUNNING,
  })
  status: ExecutionStatus;

  @Column({ type: 'varchar', length: 64, nullable: true })
  currentStepId: string | null;

  @Column({ type: 'integer', default: 0 })
  version: number;

  @Column({ type: 'timestamptz', nullable: true })
  dueAt: Date | null;

  /** WAITING in a WAIT_FOR_EVENT step: the event that resumes it. */
  @Column({ type: 'varchar', length: 100, nullable: true })
  waitEvent: string | null;

  /** The event that started it (EVENT and segment triggers). */
  @Column({ type: 'uuid', nullable: true })
  triggerEventId: string | null;

  /** The event that ended its wait (set by the events trigger; cleared when the step moves on). */
  @Column({ type: 'uuid', nullable: true })
  resumeEventId: string | null;

  /** Variables for templates and webhook bodies: the trigger event's data or the manual start's. */
  @Column({ type: 'jsonb', default: () => `'{}'` })
  data: Record<string, unknown>;

  /** Attempts made of the current step (WEBHOOK retries). */
  @Column({ type: 'integer', default: 0 })
  stepAttempts: number;

  @Column({ type: 'uuid', nullable: true })
  onceKey: string | null;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  startedAt: Date;

  @Column({ type: 'timestamptz', nullable: true })
  finishedAt: Date | null;

  @Column({ type: 'varchar', length: 100, nullable: true })
  exitReason: string | null;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;

  /** Read with the execution by the engine (workflows.updated_at in microseconds): not a column of this table. */
  workflowStamp?: string;

  /** Read with the execution by the engine's lock: when the current step's record began (null before it has one). */
  stepStartedAt?: Date | null;
}

/** What one step did in one execution (a step runs at most once per execution: no loops). */
@Entity('workflow_execution_steps')
export class WorkflowExecutionStep {
  @PrimaryColumn('uuid')
  executionId: string;

  @PrimaryColumn({ type: 'varchar', length: 64 })
  stepId: string;

  @ManyToOne(() => WorkflowExecution, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'execution_id' })
  execution?: WorkflowExecution;

  /** Visit order within the execution. */
  @Column({ type: 'integer' })
  seq: number;

  @Column({ type: 'varchar', length: 20 })
  type: string;

  @Column({ type: 'enum', enum: StepRunStatus, enumName: 'workflow_step_run_status' })
  status: StepRunStatus;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  startedAt: Date;

  @Column({ type: 'timestamptz', nullable: true })
  finishedAt: Date | null;

  @Column({ type: 'jsonb', nullable: true })
  output: Record<string, unknown> | null;

  @Column({ type: 'text', nullable: true })
  error: string | null;
}
