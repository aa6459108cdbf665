import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger } from '@nestjs/common';
import { WORKFLOW_JOBS, WorkflowQueueJob } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { WorkflowEngine } from './workflow-engine';
import { WorkflowsRecovery } from './workflows.recovery';

/** Steps run at once per worker process (a WEBHOOK step may hold one for 10 s). */
export const WORKFLOW_CONCURRENCY = 32;

/** QUEUES.WORKFLOWS worker: one step per job (see WorkflowEngine), and the recovery. */
@Processor(QUEUES.WORKFLOWS, { concurrency: WORKFLOW_CONCURRENCY })
export class WorkflowsProcessor extends WorkerHost {
  private readonly logger = new Logger(WorkflowsProcessor.name);

  constructor(
    private readonly engine: WorkflowEngine,
    private readonly recovery: WorkflowsRecovery,
  ) {
    super();
  }

  process(job: WorkflowQueueJob): Promise<unknown> {
    if (job.name === WORKFLOW_JOBS.RECOVER) return this.recovery.recover();
    return this.engine.submit({ executionId: job.data.executionId, version: job.data.version, direct: job.data.direct === true });
  }

  @OnWorkerEvent('failed')
  onFailed(job: WorkflowQueueJob | undefined, error: Error): void {
    if (!job || job.name !== WORKFLOW_JOBS.STEP) return;
    this.logger.warn({ err: error, executionId: job.data.executionId, attempt: job.attemptsMade }, 'workflow step failed; it is retried');
  }
}
