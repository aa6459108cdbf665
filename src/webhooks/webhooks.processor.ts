import { Processor, WorkerHost } from '@nestjs/bullmq';
import { DelayedError } from 'bullmq';
import { WEBHOOK_JOBS, WebhookQueueJob } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { SendOutcome, WebhookSender } from './webhook-sender';
import { WebhooksRecovery } from './webhooks.recovery';

/** Attempts in flight per worker process, all endpoints together. */
export const WEBHOOK_CONCURRENCY = 64;
/** A job for an endpoint with enough in flight waits this long (plus jitter) and asks again. */
const BUSY_WAIT_MS = 1000;

/**
 * QUEUES.WEBHOOKS worker. An attempt lasts at most 10 s; a killed worker's
 * jobs come back when their lock lapses (30 s) and are attempted again with
 * the same webhook-id. An endpoint with PER_ENDPOINT_IN_FLIGHT attempts
 * running in this process gets no more slots: its further jobs step aside
 * (delayed by about a second), so a slow receiver cannot take every slot.
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

  async process(job: WebhookQueueJob, token?: string): Promise<SendOutcome | { found: number }> {
    if (job.name === WEBHOOK_JOBS.DISPATCH) return this.recovery.recover();
    const outcome = this.sender.busy(job.data.endpointId) ? 'busy' : await this.sender.deliver(job.data.deliveryId);
    if (outcome === 'busy' && token) {
      await job.moveToDelayed(Date.now() + BUSY_WAIT_MS + Math.floor(Math.random() * 500), token);
      throw new DelayedError();
    }
    return outcome;
  }
}
