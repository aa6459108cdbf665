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
 * How long the names that can move a project's executions are trusted in
 * this process (changes made here apply at once). A workflow created,
 * enabled or edited in another process is missed by this fast path for at
 * most this long: its executions then wait for the recovery (5 to 10 s).
 * So does, in one race, an execution still waiting for a name no workflow
 * names any more: a PATCH renaming a waited-for event moves the waiting
 * executions to the new name itself, but one whose step was running on the
 * old definition as the PATCH committed enters its wait under the old name.
 */
const NAMES_TTL_MS = 1_000;
/** Events published within this window share one lookup. */
const BATCH_WINDOW_MS = 5;

/**
 * Hands executions to the queue. The events trigger (migration Workflows)
 * starts executions and ends waits in the events' own transaction; after
 * commit this listener finds the executions those events moved and adds
 * their jobs. It is only the fast path: whatever it misses (a process dying
 * after commit) the recovery finds, since an open execution without its job
 * becomes overdue. Events no workflow starts on or waits for (most system
 * events) cost a map lookup.
 */
@Injectable()
export class WorkflowDispatcher implements EventRecordedListener, OnModuleInit {
  private readonly logger = new Logger(WorkflowDispatcher.name);
  /** By project: the event names its workflows start on or wait for (empty: no workflows). */
  private readonly projects = new Map<string, { names: Set<string>; at: number }>();
  /** By project: bumped by invalidate(), so a lookup that began before a change is not cached after it. */
  private readonly generations = new Map<string, number>();
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
    this.generations.set(projectId, (this.generations.get(projectId) ?? 0) + 1);
  }

  async onEventsRecorded(events: RecordedEvent[]): Promise<void> {
    const withContact = events.filter((e) => e.contactId !== null);
    if (withContact.length === 0) return;
    // Only events that can start an execution or end a wait need the lookup (not email.sent, say).
    const names = await this.movingNames([...new Set(withContact.map((e) => e.projectId))]);
    const matching = withContact.filter((e) => names.get(e.projectId)?.has(e.name));
    if (matching.length === 0) return;
    this.pendingEvents.push(...matching.map((e) => e.id));
    this.flushing ??= new Promise<void>((resolve) => setTimeout(resolve, BATCH_WINDOW_MS)).then(
      () => this.flush(),
    );
    await this.flushing;
  }

  private async flush(): Promise<void> {
    const ids = this.pendingEvents;
    this.pendingEvents = [];
    this.flushing = null;
    try {
      await this.enqueue(await this.repository.movedByEvents(this.dataSource.manager, ids));
    } catch (error) {
      this.logger.warn(
        { err: error, events: ids.length },
        'could not hand workflow executions to the queue; the recovery will',
      );
    }
  }

  /** One job per execution version, delayed until it is due; an existing job id is left alone. */
  async enqueue(executions: DueExecution[]): Promise<void> {
    if (executions.length === 0) return;
    const now = Date.now();
    await this.queue.addBulk(
      executions.map((x) => ({
        name: WORKFLOW_JOBS.STEP,
        data: x.direct
          ? { executionId: x.id, version: x.version, direct: true as const }
          : { executionId: x.id, version: x.version },
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

  private async movingNames(projectIds: string[]): Promise<Map<string, Set<string>>> {
    const now = Date.now();
    const out = new Map<string, Set<string>>();
    const missing: string[] = [];
    for (const id of projectIds) {
      const cached = this.projects.get(id);
      if (cached && now - cached.at < NAMES_TTL_MS) out.set(id, cached.names);
      else missing.push(id);
    }
    if (missing.length > 0) {
      const began = missing.map((id) => this.generations.get(id) ?? 0);
      const found = await this.repository.movingNames(this.dataSource.manager, missing);
      missing.forEach((id, i) => {
        const names = new Set(found.get(id) ?? []);
        // Read before a change made here meanwhile: used for these events, not kept.
        if ((this.generations.get(id) ?? 0) === began[i]) this.projects.set(id, { names, at: now });
        out.set(id, names);
      });
    }
    return out;
  }
}
