import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Queue } from 'bullmq';
import type { DataSource } from 'typeorm';
import { AfterCommitDispatcher } from '../events/after-commit-dispatcher';
import { EventHooks, RecordedEvent } from '../events/event-hooks';
import { WORKFLOW_JOBS, WorkflowStepJobData, workflowStepJobId } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { DueExecution, WorkflowExecutionsRepository } from './workflow-executions.repository';
import { WorkflowsRepository } from './workflows.repository';

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

/**
 * Hands executions to the queue. The events trigger (migration Workflows)
 * starts executions and ends waits in the events' own transaction; after
 * commit this listener finds the executions those events moved and adds
 * their jobs (AfterCommitDispatcher: cached interests, a window, one lookup).
 * It is only the fast path: whatever it misses (a process dying after
 * commit) the recovery finds, since an open execution without its job
 * becomes overdue. Events no workflow starts on or waits for (most system
 * events) cost a map lookup.
 */
@Injectable()
export class WorkflowDispatcher extends AfterCommitDispatcher<Set<string>> {
  protected readonly logger = new Logger(WorkflowDispatcher.name);
  protected readonly failureMessage =
    'could not hand workflow executions to the queue; the recovery will';
  /** A project's interest is the event names its workflows start on or wait for; none without workflows. */
  protected readonly noInterest = new Set<string>();

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectQueue(QUEUES.WORKFLOWS) private readonly queue: Queue<WorkflowStepJobData>,
    private readonly workflows: WorkflowsRepository,
    private readonly executions: WorkflowExecutionsRepository,
    hooks: EventHooks,
  ) {
    super(hooks);
  }

  /** Only events with a contact start executions or end waits. */
  protected candidate(event: RecordedEvent): boolean {
    return event.contactId !== null;
  }

  protected async loadInterests(projectIds: string[]): Promise<Map<string, Set<string>>> {
    const found = await this.workflows.movingNames(this.dataSource.manager, projectIds);
    return new Map([...found].map(([projectId, names]) => [projectId, new Set(names)]));
  }

  protected ttlMs(): number {
    return NAMES_TTL_MS;
  }

  /** Only events that can start an execution or end a wait need the lookup (not email.sent, say). */
  protected matches(event: RecordedEvent, names: Set<string>): boolean {
    return names.has(event.name);
  }

  protected async dispatch(events: RecordedEvent[]): Promise<void> {
    await this.enqueue(
      await this.executions.movedByEvents(
        this.dataSource.manager,
        events.map((e) => e.id),
      ),
    );
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
}
