import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { newId } from '../database/id';
import { keysetRows } from '../database/keyset-rows';
import { preparedRows, queryRows } from '../database/query-rows';
import {
  ExecutionStatus,
  StepRunStatus,
  WorkflowExecution,
  WorkflowExecutionStep,
} from './workflow.entity';

export interface ExecutionListFilter {
  status?: ExecutionStatus;
  contactId?: string;
}

export type ExecutionCounts = Record<
  'running' | 'waiting' | 'completed' | 'exited' | 'failed' | 'cancelled',
  number
>;

/** Where a page of overdue executions ended (its last row): `dueAt` as Postgres wrote it, to the microsecond. */
export interface OverdueKey {
  dueAt: string;
  id: string;
}

/** An execution whose next job should exist: its id and version make the job id. */
export interface DueExecution {
  id: string;
  version: number;
  dueAt: Date | null;
  /** Set by the engine when the step the job runs is not a WEBHOOK (its job skips the look before the lock). */
  direct?: true;
}

/** The fields a transition writes; `version` is always bumped by one. */
export interface ExecutionTransition {
  status: ExecutionStatus;
  currentStepId?: string | null;
  dueAt: Date | null;
  waitEvent?: string | null;
  resumeEventId?: null;
  stepAttempts?: number;
  finishedAt?: Date | null;
  exitReason?: string | null;
}

export interface StepRun {
  executionId: string;
  stepId: string;
  type: string;
  status: StepRunStatus;
  output?: Record<string, unknown> | null;
  error?: string | null;
  finished: boolean;
}

/** A transition of a locked execution waiting to be written (writeSteps), with the record of the step that led to it. */
export interface PendingTransition {
  execution: WorkflowExecution;
  to: ExecutionTransition;
  run: StepRun | null;
}

const EXECUTION_COLUMNS = `x.id, x.project_id AS "projectId", x.workflow_id AS "workflowId", x.contact_id AS "contactId",
  x.status, x.current_step_id AS "currentStepId", x.version, x.due_at AS "dueAt", x.wait_event AS "waitEvent",
  x.trigger_event_id AS "triggerEventId", x.resume_event_id AS "resumeEventId", x.data, x.step_attempts AS "stepAttempts",
  x.once_key AS "onceKey", x.started_at AS "startedAt", x.finished_at AS "finishedAt", x.exit_reason AS "exitReason",
  x.created_at AS "createdAt", x.updated_at AS "updatedAt"`;

/** The engine's reads: the execution and when its workflow last changed (whether a cached definition still holds). */
const ENGINE_READ = `SELECT ${EXECUTION_COLUMNS}, (extract(epoch FROM w.updated_at) * 1000000)::bigint::text AS "workflowStamp"
  FROM workflow_executions x JOIN workflows w ON w.id = x.workflow_id WHERE x.id = $1`;

/** ENGINE_LOCK's read without the lock or the step record. */
const ENGINE_UNLOCKED = `SELECT ${EXECUTION_COLUMNS}, (extract(epoch FROM w.updated_at) * 1000000)::bigint::text AS "workflowStamp"
  FROM workflow_executions x JOIN workflows w ON w.id = x.workflow_id WHERE x.id = ANY($1::uuid[])`;

/** Executions locked per statement by lockOpenOfWorkflow. */
const LOCK_CHUNK = 1000;

/** The engine's lock: its executions in id order, with when the current step's record began (a wait's start). */
const ENGINE_LOCK = `SELECT ${EXECUTION_COLUMNS}, (extract(epoch FROM w.updated_at) * 1000000)::bigint::text AS "workflowStamp",
         s.started_at AS "stepStartedAt"
    FROM workflow_executions x JOIN workflows w ON w.id = x.workflow_id
    LEFT JOIN workflow_execution_steps s ON s.execution_id = x.id AND s.step_id = x.current_step_id
   WHERE x.id = ANY($1::uuid[]) ORDER BY x.id FOR UPDATE OF x`;

/**
 * Transitions and step records of many executions in one statement.
 * Transitions ($8-$22): one per execution, a flag per optional field,
 * `version` the new version; one applies only while the execution is still
 * at the version before it (the events trigger may have moved it within the
 * same transaction: an event recorded by another step of the batch). Records
 * ($1-$7, in the order given) of the executions moved: a step's first visit
 * numbers it after the execution's last (those of one execution in this
 * statement in their order), a later write updates it. Answers the ids moved.
 * An end is never earlier than the records' start (now()): the JS clock the
 * interpreter read is whole milliseconds.
 */
const WRITE_STEPS = `WITH moved AS (
    UPDATE workflow_executions x
       SET status = t.status, due_at = t.due_at,
           current_step_id = CASE WHEN t.set_step THEN t.step_id ELSE x.current_step_id END,
           wait_event = CASE WHEN t.set_wait THEN t.wait_event ELSE x.wait_event END,
           resume_event_id = CASE WHEN t.clear_resume THEN NULL ELSE x.resume_event_id END,
           step_attempts = CASE WHEN t.set_attempts THEN t.attempts ELSE x.step_attempts END,
           finished_at = CASE WHEN NOT t.set_finished THEN x.finished_at WHEN t.finished_at IS NOT NULL THEN greatest(t.finished_at, now()) END,
           exit_reason = CASE WHEN t.set_exit THEN t.exit_reason ELSE x.exit_reason END,
           version = t.version, updated_at = now()
      FROM unnest($8::uuid[], $9::workflow_execution_status[], $10::timestamptz[], $11::boolean[], $12::varchar[], $13::boolean[],
                  $14::varchar[], $15::boolean[], $16::boolean[], $17::int[], $18::boolean[], $19::timestamptz[], $20::boolean[],
                  $21::varchar[], $22::int[])
           AS t(id, status, due_at, set_step, step_id, set_wait, wait_event, clear_resume, set_attempts, attempts, set_finished,
                finished_at, set_exit, exit_reason, version)
     WHERE x.id = t.id AND x.version = t.version - 1
    RETURNING x.id
  ), r AS (
    SELECT r.*, EXISTS (SELECT 1 FROM workflow_execution_steps s WHERE s.execution_id = r.execution_id AND s.step_id = r.step_id) AS known
      FROM unnest($1::uuid[], $2::varchar[], $3::varchar[], $4::workflow_step_run_status[], $5::boolean[], $6::jsonb[], $7::text[])
           WITH ORDINALITY AS r(execution_id, step_id, type, status, finished, output, error, ord)
     WHERE r.execution_id IN (SELECT id FROM moved)
  ), recorded AS (
    INSERT INTO workflow_execution_steps (execution_id, step_id, seq, type, status, started_at, finished_at, output, error)
    SELECT r.execution_id, r.step_id,
           coalesce((SELECT max(s.seq) FROM workflow_execution_steps s WHERE s.execution_id = r.execution_id), 0)
             + row_number() OVER (PARTITION BY r.execution_id, r.known ORDER BY r.ord),
           r.type, r.status, now(), CASE WHEN r.finished THEN now() END, r.output, r.error
      FROM r
    ON CONFLICT (execution_id, step_id) DO UPDATE
      SET status = EXCLUDED.status, finished_at = EXCLUDED.finished_at,
          output = coalesce(EXCLUDED.output, workflow_execution_steps.output), error = EXCLUDED.error
  )
  SELECT id FROM moved`;

/** Every statement on workflow executions, their step records and the workflows' execution counters. */
@Injectable()
export class WorkflowExecutionsRepository {
  /**
   * Locks the workflow's open executions in id order, a chunk per statement,
   * until the transaction ends: the order the engine's batches lock them in
   * (ENGINE_LOCK), so an edit or a delete and a batch wait for each other
   * instead of deadlocking. The bulk updates after it find their rows held.
   * A chunk may come back short when rows it waited for stopped being open,
   * so only an empty chunk ends the walk.
   */
  async lockOpenOfWorkflow(manager: EntityManager, workflowId: string): Promise<number> {
    let after: string | null = null;
    let locked = 0;
    for (;;) {
      const rows: Array<{ id: string }> = await queryRows<{ id: string }>(
        manager,
        `SELECT id FROM workflow_executions
          WHERE workflow_id = $1 AND status IN ('RUNNING', 'WAITING') AND ($2::uuid IS NULL OR id > $2::uuid)
          ORDER BY id LIMIT $3 FOR UPDATE`,
        [workflowId, after, LOCK_CHUNK],
      );
      if (rows.length === 0) return locked;
      locked += rows.length;
      after = rows[rows.length - 1].id;
    }
  }

  /**
   * Open executions at a step no longer in the definition end EXITED (step_removed).
   * Ended at the statement's time, not the transaction's: a batch may have
   * stepped an execution while this transaction was locking earlier ones.
   */
  async exitRemovedSteps(
    manager: EntityManager,
    workflowId: string,
    keptStepIds: string[],
  ): Promise<number> {
    const rows = await queryRows(
      manager,
      `UPDATE workflow_executions SET status = 'EXITED', exit_reason = 'step_removed', finished_at = clock_timestamp(), due_at = NULL,
              wait_event = NULL, version = version + 1, updated_at = now()
        WHERE workflow_id = $1 AND status IN ('RUNNING', 'WAITING') AND current_step_id IS NOT NULL
          AND NOT (current_step_id = ANY($2::text[])) RETURNING id`,
      [workflowId, keptStepIds],
    );
    return rows.length;
  }

  /**
   * Executions WAITING at `stepId` take its new wait: due `wait.durationMs`
   * after their wait began (the step record's start; now when that is past),
   * waiting for `wait.event`; with no wait (the step is no longer a DELAY or a
   * WAIT_FOR_EVENT) RUNNING and due now. Each gets a new version; answers them.
   */
  rescheduleWaiting(
    manager: EntityManager,
    workflowId: string,
    stepId: string,
    wait: { durationMs: number; event: string | null } | null,
  ): Promise<DueExecution[]> {
    return queryRows<DueExecution>(
      manager,
      `UPDATE workflow_executions x
          SET status = $3::workflow_execution_status, wait_event = $5, version = x.version + 1, updated_at = now(),
              due_at = CASE WHEN $4::double precision IS NULL THEN now() ELSE greatest(now(),
                         coalesce((SELECT s.started_at FROM workflow_execution_steps s WHERE s.execution_id = x.id AND s.step_id = x.current_step_id), now())
                         + make_interval(secs => $4::double precision / 1000)) END
        WHERE x.workflow_id = $1 AND x.status = 'WAITING' AND x.current_step_id = $2
        RETURNING x.id, x.version, x.due_at AS "dueAt"`,
      [
        workflowId,
        stepId,
        wait ? ExecutionStatus.WAITING : ExecutionStatus.RUNNING,
        wait?.durationMs ?? null,
        wait?.event ?? null,
      ],
    );
  }

  /** Executions by status from the workflows' counter rows (WorkflowCounter): a few rows per workflow, whatever its history. */
  async countsOf(
    manager: EntityManager,
    workflowIds: string[],
  ): Promise<Map<string, ExecutionCounts>> {
    const out = new Map<string, ExecutionCounts>();
    for (const id of workflowIds)
      out.set(id, { running: 0, waiting: 0, completed: 0, exited: 0, failed: 0, cancelled: 0 });
    if (workflowIds.length === 0) return out;
    const rows = await queryRows<ExecutionCounts & { workflowId: string }>(
      manager,
      `SELECT workflow_id AS "workflowId", sum(running)::int AS running, sum(waiting)::int AS waiting, sum(completed)::int AS completed,
              sum(exited)::int AS exited, sum(failed)::int AS failed, sum(cancelled)::int AS cancelled
         FROM workflow_counters WHERE workflow_id = ANY($1::uuid[]) GROUP BY 1`,
      [workflowIds],
    );
    for (const { workflowId, ...counts } of rows) out.set(workflowId, counts);
    return out;
  }

  /**
   * A manual start: one open execution per (workflow, contact), and one ever
   * without re-entry; null when the database refused it (ON CONFLICT).
   */
  async insertExecution(
    manager: EntityManager,
    fields: {
      projectId: string;
      workflowId: string;
      contactId: string;
      data: Record<string, unknown>;
      allowReentry: boolean;
    },
  ): Promise<DueExecution | null> {
    const rows = await queryRows<DueExecution>(
      manager,
      `INSERT INTO workflow_executions (id, project_id, workflow_id, contact_id, status, version, due_at, data, once_key)
       VALUES ($1, $2, $3, $4, 'RUNNING', 0, now(), $5, $6)
       ON CONFLICT DO NOTHING RETURNING id, version, due_at AS "dueAt"`,
      [
        newId(),
        fields.projectId,
        fields.workflowId,
        fields.contactId,
        JSON.stringify(fields.data),
        fields.allowReentry ? null : fields.contactId,
      ],
    );
    return rows[0] ?? null;
  }

  /** The execution under a row lock (the workflow row is read, not locked), with its workflow's updated_at. */
  async lockExecution(manager: EntityManager, id: string): Promise<WorkflowExecution | null> {
    return (await this.lockExecutions(manager, [id])).get(id) ?? null;
  }

  /**
   * Executions under row locks taken in id order, by id (lockExecution's read).
   * Planned at each call, not prepared: a prepared statement's generic plan is
   * made once per connection, and one made while the step records' table was
   * still small (a new database's first seconds) hash-joined a scan of the
   * whole table, which grew with every step (3.3 ms per call at 40,000 step
   * records, 0.3 ms planned afresh).
   */
  async lockExecutions(
    manager: EntityManager,
    ids: string[],
  ): Promise<Map<string, WorkflowExecution>> {
    const rows = await queryRows<WorkflowExecution>(manager, ENGINE_LOCK, [ids]);
    return new Map(rows.map((x) => [x.id, x]));
  }

  /** Executions without locks, by id (the engine's renders before a batch's transaction): lockExecutions' read. */
  async findExecutions(
    manager: EntityManager,
    ids: string[],
  ): Promise<Map<string, WorkflowExecution>> {
    const rows = await queryRows<WorkflowExecution>(manager, ENGINE_UNLOCKED, [ids]);
    return new Map(rows.map((x) => [x.id, x]));
  }

  /** The execution without a lock (the engine's look before a WEBHOOK call), with its workflow's updated_at. */
  async findExecutionById(manager: EntityManager, id: string): Promise<WorkflowExecution | null> {
    const rows = await preparedRows<WorkflowExecution>(manager, ENGINE_READ, [id]);
    return rows[0] ?? null;
  }

  async findExecution(
    manager: EntityManager,
    projectId: string,
    workflowId: string,
    id: string,
  ): Promise<WorkflowExecution | null> {
    const rows = await queryRows<WorkflowExecution>(
      manager,
      `SELECT ${EXECUTION_COLUMNS} FROM workflow_executions x WHERE x.id = $1 AND x.workflow_id = $2 AND x.project_id = $3`,
      [id, workflowId, projectId],
    );
    return rows[0] ?? null;
  }

  listExecutions(
    manager: EntityManager,
    workflowId: string,
    filter: ExecutionListFilter,
    afterId: string | null,
    limit: number,
  ): Promise<{ rows: WorkflowExecution[]; total: number }> {
    const qb = manager
      .createQueryBuilder(WorkflowExecution, 'x')
      .where('x.workflow_id = :workflowId', { workflowId });
    if (filter.status) qb.andWhere('x.status = :status', { status: filter.status });
    if (filter.contactId) qb.andWhere('x.contact_id = :contactId', { contactId: filter.contactId });
    return keysetRows(qb, 'x.id', afterId, limit);
  }

  stepsOf(manager: EntityManager, executionIds: string[]): Promise<WorkflowExecutionStep[]> {
    if (executionIds.length === 0) return Promise.resolve([]);
    return manager
      .createQueryBuilder(WorkflowExecutionStep, 's')
      .where('s.execution_id IN (:...ids)', { ids: executionIds })
      .orderBy('s.execution_id')
      .addOrderBy('s.seq')
      .getMany();
  }

  /** One transition of a locked execution (writeSteps of one); answers the new version. */
  async transition(
    manager: EntityManager,
    execution: WorkflowExecution,
    to: ExecutionTransition,
  ): Promise<number> {
    // The caller holds the row's lock: the version read with it is current.
    await this.writeSteps(manager, [], [{ execution, to, run: null }]);
    return execution.version + 1;
  }

  /**
   * Step records (`records`, in order), then transitions of locked
   * executions, each with the record of the step that led to it when there
   * is one: one statement, prepared once per connection (the engine runs it
   * for every batch of steps). A record repeated (same execution and step)
   * is written once, as its last write says. Every record's execution has a
   * transition; one whose execution was moved meanwhile (see WRITE_STEPS) is
   * not written. Answers the ids of the executions moved.
   */
  async writeSteps(
    manager: EntityManager,
    records: StepRun[],
    transitions: PendingTransition[],
  ): Promise<Set<string>> {
    const runs = new Map<string, StepRun>();
    for (const run of [...records, ...transitions.flatMap((t) => (t.run ? [t.run] : []))]) {
      const key = `${run.executionId}/${run.stepId}`;
      const earlier = runs.get(key);
      runs.delete(key);
      runs.set(key, earlier && !run.output ? { ...run, output: earlier.output } : run);
    }
    if (transitions.length === 0) return new Set();
    const r = [...runs.values()];
    const has = (to: ExecutionTransition, key: keyof ExecutionTransition) => to[key] !== undefined;
    const moved = await preparedRows<{ id: string }>(manager, WRITE_STEPS, [
      r.map((run) => run.executionId),
      r.map((run) => run.stepId),
      r.map((run) => run.type),
      r.map((run) => run.status),
      r.map((run) => run.finished),
      r.map((run) => (run.output ? JSON.stringify(run.output) : null)),
      r.map((run) => run.error ?? null),
      transitions.map((t) => t.execution.id),
      transitions.map((t) => t.to.status),
      transitions.map((t) => t.to.dueAt),
      transitions.map((t) => has(t.to, 'currentStepId')),
      transitions.map((t) => t.to.currentStepId ?? null),
      transitions.map((t) => has(t.to, 'waitEvent')),
      transitions.map((t) => t.to.waitEvent ?? null),
      transitions.map((t) => has(t.to, 'resumeEventId')),
      transitions.map((t) => has(t.to, 'stepAttempts')),
      transitions.map((t) => t.to.stepAttempts ?? null),
      transitions.map((t) => has(t.to, 'finishedAt')),
      transitions.map((t) => t.to.finishedAt ?? null),
      transitions.map((t) => has(t.to, 'exitReason')),
      transitions.map((t) => t.to.exitReason ?? null),
      transitions.map((t) => t.execution.version + 1),
    ]);
    return new Set(moved.map((row) => row.id));
  }

  /** Cancels every open execution of a workflow (delete), ended at the statement's time (see exitRemovedSteps); answers them. */
  cancelOpenOfWorkflow(
    manager: EntityManager,
    workflowId: string,
    reason: string,
  ): Promise<DueExecution[]> {
    return queryRows<DueExecution>(
      manager,
      `UPDATE workflow_executions SET status = 'CANCELLED', finished_at = clock_timestamp(), due_at = NULL, wait_event = NULL,
              exit_reason = $2, version = version + 1, updated_at = now()
        WHERE workflow_id = $1 AND status IN ('RUNNING', 'WAITING') RETURNING id, version, due_at AS "dueAt"`,
      [workflowId, reason],
    );
  }

  /** Executions started or resumed by these events (the events trigger wrote them in the events' transaction). */
  movedByEvents(manager: EntityManager, eventIds: string[]): Promise<DueExecution[]> {
    return queryRows<DueExecution>(
      manager,
      `SELECT id, version, due_at AS "dueAt" FROM workflow_executions
        WHERE (trigger_event_id = ANY($1::uuid[]) AND current_step_id IS NULL AND status = 'RUNNING')
           OR (resume_event_id = ANY($1::uuid[]) AND status = 'RUNNING')`,
      [eventIds],
    );
  }

  /**
   * Open executions overdue by more than `graceMs` (their job was lost or
   * never added, or waits behind a backlog), oldest first, from after `after`
   * (an earlier page's last row) when given. Disabled projects' executions
   * are left out: their steps wait, and come back here once enabled.
   */
  overdue(
    manager: EntityManager,
    graceMs: number,
    limit: number,
    after: OverdueKey | null = null,
  ): Promise<{ id: string; version: number; key: OverdueKey }[]> {
    // The key keeps due_at's microseconds (a Date would drop them: a page of rows sharing one due_at, as the
    // executions one statement started do, would then come back again and again).
    return queryRows<{ id: string; version: number; key: OverdueKey }>(
      manager,
      `SELECT id, version, json_build_object('dueAt', due_at::text, 'id', id) AS key FROM workflow_executions
        WHERE status IN ('RUNNING', 'WAITING') AND due_at < now() - make_interval(secs => $1::double precision / 1000)
          AND ($3::timestamptz IS NULL OR (due_at, id) > ($3::timestamptz, $4::uuid))
          AND project_id NOT IN (SELECT id FROM projects WHERE NOT enabled)
        ORDER BY due_at, id LIMIT $2`,
      [graceMs, limit, after?.dueAt ?? null, after?.id ?? null],
    );
  }
}
