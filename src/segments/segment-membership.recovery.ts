import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { QUEUES } from '../queue/queue.constants';
import { QueueRecovery } from '../queue/recovery';
import { SegmentMembershipService, SweepResult } from './segment-membership.service';

/** The contract's bound: time windows are re-evaluated at least every minute. */
const MAX_SWEEP_EVERY_MS = 60_000;

/**
 * The segments queue's recovery job is the membership sweep, every
 * min(RECOVERY_EVERY_MS, 1 minute) across all workers: each kept segment's
 * differences with its condition now (lapsed time windows, ...) are
 * evaluated, and so is every dirty row whose wake-up was lost.
 */
@Injectable()
export class SegmentMembershipRecovery extends QueueRecovery {
  readonly queue = QUEUES.SEGMENTS;
  readonly everyMs: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly membership: SegmentMembershipService,
  ) {
    super();
    this.everyMs = Math.min(config.recoveryEveryMs, MAX_SWEEP_EVERY_MS);
  }

  recover(): Promise<SweepResult> {
    return this.membership.sweep();
  }
}
