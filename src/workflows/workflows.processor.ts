import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger } from '@nestjs/common';
import { WORKFLOW_JOBS, WorkflowQueueJob } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { handBackJob } from '../queue/worker-shutdown';
import { HANDED_BACK, WorkflowEngine } from './workflow-engine';
import { WorkflowsRecovery } from './workflows.recovery';

/**
 * Step jobs a worker process holds at once. A job costs little while it
 * waits: the engine runs the steps of the jobs it holds in batches of up to
 * 512, one transaction each (WorkflowEngine), and a batch's statements cost
 * about the same for 10 steps as for 500, so the more jobs are held, the
 * fewer statements each step costs. bench:workflows at 10,000 executions:
 * 32 → 2,301 steps/s, 128 → 3,934, 512 → 4,955, 1,024 → 6,393 (2026-11-27).
 * WEBHOOK calls have their own, lower limit (WEBHOOK_RUNS_IN_FLIGHT).
 */
export const WORKFLOW_CONCURRENCY = 1024;

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

  async process(job: WorkflowQueueJob, token?: string): Promise<unknown> {
    if (job.name === WORKFLOW_JOBS.RECOVER) return this.recovery.recover();
    const outcome = await this.engine.submit({
      executionId: job.data.executionId,
      version: job.data.version,
      direct: job.data.direct === true,
    });
    // The process is stopping: the job goes back to the queue untouched, for another worker or the next start.
    if (outcome === HANDED_BACK && token) return handBackJob(job, token);
    return outcome;
  }

  @OnWorkerEvent('failed')
  onFailed(job: WorkflowQueueJob | undefined, error: Error): void {
    if (!job || job.name !== WORKFLOW_JOBS.STEP) return;
    this.logger.warn(
      { err: error, executionId: job.data.executionId, attempt: job.attemptsMade },
      'workflow step failed; it is retried',
    );
  }
}
