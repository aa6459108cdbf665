import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { errorMessage } from '../common/errors/error-message';
import { INBOUND_JOBS, InboundJobData, InboundQueueJob } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { InboundReports } from './inbound-reports';
import { InboundRecovery } from './inbound.recovery';

/**
 * Jobs a worker runs at once: InboundReports applies the messages of concurrent jobs in batches,
 * so the jobs it holds bound a batch's size. A listener's job carries only the few messages of
 * one group commit; many jobs in hand let a batch fill up while the one before it writes.
 */
export const INBOUND_CONCURRENCY = 256;

/** The messages of a PROCESS job: a listener's group commit, or one message. */
function messagesOf(job: Job<InboundJobData>): string[] {
  return job.data.inboundMessageIds ?? [job.data.inboundMessageId];
}

/**
 * Runs the inbound queue in worker roles: the stored messages of each job
 * (a listener's group commit, or one the recovery re-added), and the
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
    // Each message answers on its own; one that throws fails the job, whose retry finds the others done.
    const settled = await Promise.allSettled(messagesOf(job).map((id) => this.reports.process(id)));
    const failed = settled.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
    const outcomes = settled.map((outcome) => (outcome as PromiseFulfilledResult<unknown>).value);
    return outcomes.length === 1 ? outcomes[0] : outcomes;
  }

  @OnWorkerEvent('failed')
  async onFailed(job: InboundQueueJob | undefined, error: Error): Promise<void> {
    if (!job || job.name !== INBOUND_JOBS.PROCESS) return;
    if (job.attemptsMade >= (job.opts.attempts ?? 1))
      for (const id of messagesOf(job)) await this.reports.markFailed(id, errorMessage(error));
  }
}
