import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Queue } from 'bullmq';
import type { DataSource } from 'typeorm';
import { EventHooks, EventRecordedListener, RecordedEvent } from '../events/event-hooks';
import { WORKFLOW_JOBS, WorkflowStepJobData, workflowStepJobId } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { DueExecution, WorkflowsRepository } from './workflows.repository';

/**
 * How long "this project has workflows" is trusted in this process (changes
 * made here apply at once). "It has none" is trusted for less: a workflow
 * created or enabled in another process is then missed by this fast path
 * (its executions wait for the recovery, 5 to 10 s) for at most a second.
 */
const PROJECTS_TTL_MS = 5_000;
const NO_WORKFLOWS_TTL_MS = 1_000;
/** Events published within this window share one lookup. */
const BATCH_WINDOW_MS = 5;

/**
 * Hands executions to the queue. The events trigger (migration Workflows)
 * starts executions and ends waits in the events' own transaction; after
 * commit this listener finds the executions those events moved and adds
 * their jobs. It is only the fast path: whatever it misses (a process dying
 * after commit) the recovery finds, since an open execution without its job
 * becomes overdue. Projects without workflows cost a map lookup.
 */
@Injectable()
export class WorkflowDispatcher implements EventRecordedListener, OnModuleInit {
  private readonly logger = new Logger(WorkflowDispatcher.name);
  private readonly projects = new Map<string, { has: boolean; at: number }>();
  private pendingEvents: string[] = [];
  private flushing: Promise<void> | null = null;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectQueue(QUEUES.WORKFLOWS) private readonly queue: Queue<WorkflowStepJobData>,
    private readonly repository: WorkflowsRepository,
    private readonly hooks: EventHooks,
  ) {}

  onModuleInit(): void {
    this.hooks.register(this);
  }

  /** A project's workflows changed in this process. */
  invalidate(projectId: string): void {
    this.projects.delete(projectId);
  }

  async onEventsRecorded(events: RecordedEvent[]): Promise<void> {
    const withContact = events.filter((e) => e.contactId !== null);
    if (withContact.length === 0) return;
    const has = await this.projectsWithWorkflows([...new Set(withContact.map((e) => e.projectId))]);
    const matching = withContact.filter((e) => has.has(e.projectId));
    if (matching.length === 0) return;
    this.pendingEvents.push(...matching.map((e) => e.id));
    this.flushing ??= new Promise<void>((resolve) => setTimeout(resolve, BATCH_WINDOW_MS)).then(() => this.flush());
    await this.flushing;
  }

  private async flush(): Promise<void> {
    const ids = this.pendingEvents;
    this.pendingEvents = [];
    this.flushing = null;
    try {
      await this.enqueue(await this.repository.movedByEvents(this.dataSource.manager, ids));
    } catch (error) {
      this.logger.warn({ err: error, events: ids.length }, 'could not hand workflow executions to the queue; the recovery will');
    }
  }

  /** One job per execution version, delayed until it is due; an existing job id is left alone. */
  async enqueue(executions: DueExecution[]): Promise<void> {
    if (executions.length === 0) return;
    const now = Date.now();
    await this.queue.addBulk(
      executions.map((x) => ({
        name: WORKFLOW_JOBS.STEP,
        data: x.direct ? { executionId: x.id, version: x.version, direct: true as const } : { executionId: x.id, version: x.version },
        opts: {
          jobId: workflowStepJobId(x),
          delay: Math.max(0, (x.dueAt ? new Date(x.dueAt).getTime() : now) - now),
          // Nothing kept: a job that failed (the database was down) must not block the recovery from adding it again.
          removeOnComplete: true,
          removeOnFail: true,
          attempts: 3,
          backoff: { type: 'exponential', delay: 1000 },
        },
      })),
    );
  }

  private async projectsWithWorkflows(projectIds: string[]): Promise<Set<string>> {
    const now = Date.now();
    const out = new Set<string>();
    const missing: string[] = [];
    for (const id of projectIds) {
      const cached = this.projects.get(id);
      if (cached && now - cached.at < (cached.has ? PROJECTS_TTL_MS : NO_WORKFLOWS_TTL_MS)) {
        if (cached.has) out.add(id);
      } else missing.push(id);
    }
    if (missing.length > 0) {
      const found = new Set(await this.repository.projectsWithWorkflows(this.dataSource.manager, missing));
      for (const id of missing) {
        this.projects.set(id, { has: found.has(id), at: now });
        if (found.has(id)) out.add(id);
      }
    }
    return out;
  }
}
