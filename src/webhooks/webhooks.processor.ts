import { Processor, WorkerHost } from '@nestjs/bullmq';
import { WEBHOOK_JOBS, WebhookQueueJob } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { WEBHOOK_CONCURRENCY, WebhookSender } from './webhook-sender';
import { WebhooksRecovery } from './webhooks.recovery';

export { WEBHOOK_CONCURRENCY };

/**
 * QUEUES.WEBHOOKS worker. A DELIVER job wakes its endpoint's drain in this
 * process: it claims the endpoint's due deliveries in batches and sends them
 * with at most PER_ENDPOINT_IN_FLIGHT (4) in flight to the endpoint across
 * every worker (EndpointSlots, in Redis) and WEBHOOK_CONCURRENCY in the
 * process, so a slow receiver holds one job slot and 4 attempts, never the
 * others'. A job for an endpoint already draining here returns at once (the
 * drain looks again); one for an endpoint whose slots other workers hold
 * parks: it returns, leaving a delayed job (1 s) to look again. A killed
 * worker's claimed deliveries come back through the dispatch sweep when their
 * lease (30 s) is over, and are attempted again with the same webhook-id; its
 * endpoint slots lapse after 30 s too.
 */
@Processor(QUEUES.WEBHOOKS, {
  concurrency: WEBHOOK_CONCURRENCY,
  lockDuration: 30_000,
  stalledInterval: 5_000,
  maxStalledCount: 10,
})
export class WebhooksProcessor extends WorkerHost {
  constructor(
    private readonly sender: WebhookSender,
    private readonly recovery: WebhooksRecovery,
  ) {
    super();
  }

  async process(
    job: WebhookQueueJob,
  ): Promise<{ attempts: number; joined?: true; parked?: true } | { found: number }> {
    if (job.name === WEBHOOK_JOBS.DISPATCH) return this.recovery.recover();
    return this.sender.drain(job.data.endpointId);
  }
}
