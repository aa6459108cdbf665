import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { errorMessage } from '../common/errors/error-message';
import { INBOUND_JOBS, InboundQueueJob } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { InboundReports } from './inbound-reports';
import { InboundRecovery } from './inbound.recovery';

/** Messages a worker parses and applies at once (each a few statements; parsing is light). */
export const INBOUND_CONCURRENCY = 8;

/**
 * Runs the inbound queue in worker roles: one stored message per job, and the
 * queue's recovery. A short lock makes a killed worker's messages stalled
 * within seconds, so another worker runs them again (idempotent).
 */
@Processor(QUEUES.INBOUND, {
  concurrency: INBOUND_CONCURRENCY,
  lockDuration: 10_000,
  stalledInterval: 5_000,
  maxStalledCount: 5,
})
export class InboundProcessor extends WorkerHost {
  constructor(
    private readonly reports: InboundReports,
    private readonly recovery: InboundRecovery,
  ) {
    super();
  }

  async process(job: InboundQueueJob): Promise<unknown> {
    if (job.name === INBOUND_JOBS.RECOVER) return this.recovery.recover();
    return this.reports.process(job.data.inboundMessageId);
  }

  @OnWorkerEvent('failed')
  async onFailed(job: InboundQueueJob | undefined, error: Error): Promise<void> {
    if (!job || job.name !== INBOUND_JOBS.PROCESS) return;
    if (job.attemptsMade >= (job.opts.attempts ?? 1))
      await this.reports.markFailed(job.data.inboundMessageId, errorMessage(error));
  }
}
