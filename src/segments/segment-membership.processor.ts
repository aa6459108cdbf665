import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger } from '@nestjs/common';
import { SEGMENT_JOBS, SegmentQueueJob } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { SegmentDirtyListener } from './segment-dirty-listener';
import { SegmentMembershipRecovery } from './segment-membership.recovery';
import {
  EvaluationResult,
  SegmentMembershipService,
  SweepResult,
} from './segment-membership.service';

/**
 * QUEUES.SEGMENTS worker. Two jobs at a time per process, so a long sweep
 * (a scan per kept segment) never holds up an EVALUATE: evaluation batches
 * themselves run one at a time across the deployment (an advisory lock).
 * A killed worker's EVALUATE comes back after its lock lapses (10 s); the
 * sweep evaluates the dirty rows meanwhile anyway.
 */
@Processor(QUEUES.SEGMENTS, {
  concurrency: 2,
  lockDuration: 10_000,
  stalledInterval: 5_000,
  maxStalledCount: 5,
})
export class SegmentMembershipProcessor extends WorkerHost {
  private readonly logger = new Logger(SegmentMembershipProcessor.name);

  constructor(
    private readonly membership: SegmentMembershipService,
    private readonly recovery: SegmentMembershipRecovery,
    private readonly listener: SegmentDirtyListener,
  ) {
    super();
  }

  process(job: SegmentQueueJob): Promise<EvaluationResult | SweepResult> {
    if (job.name === SEGMENT_JOBS.SWEEP) return this.recovery.recover();
    return this.membership.evaluateDirty();
  }

  /**
   * A notification that came while this EVALUATE was running (after its
   * last look at the table) found the job id taken and added nothing. Now
   * that the id is free, rows marked meanwhile get a job of their own.
   */
  @OnWorkerEvent('completed')
  async onCompleted(job: SegmentQueueJob): Promise<void> {
    if (job.name !== SEGMENT_JOBS.EVALUATE) return;
    try {
      if (await this.membership.hasPendingDirty()) this.listener.wake();
    } catch (error) {
      this.logger.warn(
        { err: error },
        'cannot check for dirty segment memberships; the sweep will',
      );
    }
  }
}
