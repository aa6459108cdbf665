import { InjectQueue, OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Logger, OnModuleInit } from '@nestjs/common';
import { Queue } from 'bullmq';
import { AppConfig, runsWorkers } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { DELIVERY_JOBS, DeliveryQueueJob } from '../queue/jobs';
import { isPaused, ParkedJobs } from '../queue/parked-jobs';
import { QUEUES } from '../queue/queue.constants';
import { handBackJob } from '../queue/worker-shutdown';
import { DeliveryRecovery } from './delivery-recovery';
import { DeliveryOutcome, DeliveryService, TransientDeliveryError } from './delivery.service';
import { SMTP_POOL_CONNECTIONS } from './mail-transport';

/**
 * Jobs in flight per worker process: one per pooled SMTP connection. More
 * (20 before) only left rendered messages waiting for a connection: fewer
 * messages per second (bench:delivery) and more memory.
 */
export const DELIVERY_CONCURRENCY = SMTP_POOL_CONNECTIONS;

/**
 * QUEUES.DELIVERY worker. Lock and stall settings decide how fast a killed
 * worker's jobs come back: its locks lapse after `lockDuration` (15 s; a live
 * worker renews them every 7.5 s), and a live worker's stalled check, every
 * `stalledInterval` (5 s), puts them back in the queue. A job that stalls more
 * than `maxStalledCount` times is failed and its email marked FAILED.
 */
@Processor(QUEUES.DELIVERY, {
  concurrency: DELIVERY_CONCURRENCY,
  lockDuration: 15_000,
  stalledInterval: 5_000,
  maxStalledCount: 3,
})
export class DeliveryProcessor extends WorkerHost implements OnModuleInit {
  private readonly logger = new Logger(DeliveryProcessor.name);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectQueue(QUEUES.DELIVERY) private readonly queue: Queue,
    private readonly delivery: DeliveryService,
    private readonly recovery: DeliveryRecovery,
    private readonly parked: ParkedJobs,
  ) {
    super();
  }

  /**
   * EMAIL_RATE_PER_SECOND is a queue-level limit stored in Redis (BullMQ's
   * global rate limit, checked in the script that hands a job to any worker),
   * so it holds across every worker process together.
   */
  async onModuleInit(): Promise<void> {
    if (runsWorkers(this.config))
      await this.queue.setGlobalRateLimit(this.config.emailRatePerSecond, 1000);
  }

  async process(
    job: DeliveryQueueJob,
    token?: string,
  ): Promise<DeliveryOutcome | { found: number }> {
    if (job.name === DELIVERY_JOBS.RECOVER) return this.recovery.recover();
    const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    const pace = job.data.pace;
    const held = pace?.attempt === job.attemptsMade ? pace : null;
    const outcome = await this.delivery.deliver(job.data.emailId, lastAttempt, held);
    // The project is disabled: the job waits, parked, for its enable (no attempt counted).
    if (isPaused(outcome)) {
      if (token) return this.parked.park(job, token, outcome.pausedFor);
      return 'skipped';
    }
    // Its provider group's slot is later (pacing, or a deferral): it waits in the queue, not in a worker.
    if (typeof outcome === 'object' && 'pace' in outcome) {
      if (!token) return 'skipped';
      await job.updateData({
        emailId: job.data.emailId,
        pace: { ...outcome.pace, attempt: job.attemptsMade },
      });
      return handBackJob(job, token, Math.ceil(outcome.pace.slot));
    }
    // Marketing mail held by sender health or a paused campaign: it looks again later.
    if (typeof outcome === 'object') {
      if (token) return handBackJob(job, token, outcome.heldUntil);
      return 'skipped';
    }
    return outcome;
  }

  @OnWorkerEvent('failed')
  async onFailed(job: DeliveryQueueJob | undefined, error: Error): Promise<void> {
    if (!job || job.name !== DELIVERY_JOBS.DELIVER) return;
    const exhausted =
      job.attemptsMade >= (job.opts.attempts ?? 1) || /stalled/i.test(error.message);
    if (!exhausted || error instanceof TransientDeliveryError) return;
    try {
      await this.delivery.failLost(job.data.emailId, error.message.slice(0, 1000));
    } catch (failure) {
      this.logger.error(
        { err: failure, emailId: job.data.emailId },
        'could not mark a lost delivery job FAILED',
      );
    }
  }
}
