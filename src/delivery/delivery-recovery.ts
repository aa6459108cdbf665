import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { QUEUES } from '../queue/queue.constants';
import { QueueRecovery } from '../queue/recovery';
import { EmailsRepository } from '../sending/emails.repository';
import { IdempotencyKeysRepository } from '../sending/idempotency-keys.repository';
import { EmailsService } from '../sending/emails.service';
import { DeliveryService } from './delivery.service';

/** Open for longer than this, an email may have lost its job (normally it is a retry waiting out its backoff). */
export const DELIVERY_STALE_AFTER_MINUTES = 5;
const RECOVERY_BATCH = 1000;
const PENDING_JOB_STATES = new Set([
  'waiting',
  'delayed',
  'prioritized',
  'active',
  'waiting-children',
]);

/**
 * Rows are committed before their jobs are added; a crash (or Redis losing
 * its data) in between would leave emails open without a job forever. The
 * delivery queue's recovery scheduler (queue/recovery.ts, RECOVERY_EVERY_MS,
 * default once a minute across all workers) runs recover(): it re-adds jobs
 * for QUEUED and SENDING rows open for more than five minutes (job id =
 * email id: existing jobs are left as they are; SENDING rows only while
 * attempts remain), fails the SENDING rows that used every attempt and whose
 * job is no longer waiting or running anywhere (its worker died during the
 * last attempt and the job was lost with Redis, or its end was never
 * recorded), sets the global rate limit again (Redis may have lost it) and
 * drops expired idempotency keys. A failed run is not retried; the next one
 * is.
 */
@Injectable()
export class DeliveryRecovery extends QueueRecovery {
  readonly queue = QUEUES.DELIVERY;
  readonly everyMs: number;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectQueue(QUEUES.DELIVERY) private readonly deliveryQueue: Queue,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly repository: EmailsRepository,
    private readonly idempotencyKeys: IdempotencyKeysRepository,
    private readonly emails: EmailsService,
    private readonly delivery: DeliveryService,
  ) {
    super();
    this.everyMs = config.recoveryEveryMs;
  }

  /** `found`: the open emails found, each re-added unless its job exists. */
  async recover(staleAfterMinutes = DELIVERY_STALE_AFTER_MINUTES): Promise<{ found: number }> {
    // The global rate limit lives in Redis too: a Redis restarted empty under running workers lost it.
    await this.deliveryQueue.setGlobalRateLimit(this.config.emailRatePerSecond, 1000);
    const stale = await this.repository.findStaleOpen(
      this.dataSource.manager,
      staleAfterMinutes,
      RECOVERY_BATCH,
      this.config.deliveryAttempts,
    );
    await this.emails.enqueue(stale);
    const lastAttempts = await this.repository.findStaleLastAttempts(
      this.dataSource.manager,
      staleAfterMinutes,
      RECOVERY_BATCH,
      this.config.deliveryAttempts,
    );
    for (const { id } of lastAttempts) {
      // A job still waiting, delayed or running finishes the row itself; any other (gone, or ended) never will.
      if (PENDING_JOB_STATES.has(await this.deliveryQueue.getJobState(id))) continue;
      await this.delivery.failLost(id, 'delivery was interrupted during its last attempt');
    }
    await this.idempotencyKeys.deleteExpiredIdempotencyKeys(this.dataSource.manager);
    return { found: stale.length + lastAttempts.length };
  }
}
