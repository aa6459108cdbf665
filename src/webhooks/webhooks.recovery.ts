import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { QUEUES } from '../queue/queue.constants';
import { OverdueRecovery } from '../queue/recovery';
import { WebhookDispatcher } from './webhook-dispatcher';
import { PendingDelivery, WebhooksRepository } from './webhooks.repository';

/** An attempt this late has lost its job (or never had one: the process died after the event's commit). */
const OVERDUE_GRACE_MS = 5_000;

/**
 * The webhooks queue's recovery job is the dispatch sweep: every
 * min(RECOVERY_EVERY_MS, 5 s), across all workers, PENDING deliveries
 * overdue by more than 5 s (never enqueued, a job lost, or claimed by a
 * worker that died: its claim lease is over) wake their endpoint's drain
 * (one job per endpoint, a deterministic id, so one that exists is left
 * alone). This is what makes the outbox lossless: a committed delivery row is
 * sent even if nobody enqueued it. The query takes each endpoint's oldest
 * overdue delivery, so every run starts from the oldest (no page key).
 */
@Injectable()
export class WebhooksRecovery extends OverdueRecovery<PendingDelivery> {
  readonly queue = QUEUES.WEBHOOKS;
  readonly everyMs: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly repository: WebhooksRepository,
    private readonly dispatcher: WebhookDispatcher,
  ) {
    super();
    this.everyMs = Math.min(config.recoveryEveryMs, 5_000);
  }

  protected findOverdue(limit: number): Promise<PendingDelivery[]> {
    return this.repository.overdue(this.dataSource.manager, OVERDUE_GRACE_MS, limit);
  }

  protected requeue(overdue: PendingDelivery[]): Promise<void> {
    return this.dispatcher.enqueue(overdue.map((d) => ({ ...d, nextAttemptAt: null })));
  }
}
