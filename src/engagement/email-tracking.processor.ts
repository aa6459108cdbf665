import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger } from '@nestjs/common';
import { TrackingQueueJob } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { EmailTrackingService } from './email-tracking.service';

/** QUEUES.TRACKING_HITS worker: writes hits the API could not write at once. */
@Processor(QUEUES.TRACKING_HITS, { concurrency: 4 })
export class EmailTrackingProcessor extends WorkerHost {
  private readonly logger = new Logger(EmailTrackingProcessor.name);

  constructor(private readonly tracking: EmailTrackingService) {
    super();
  }

  async process(job: TrackingQueueJob): Promise<void> {
    await this.tracking.record([job.data]);
  }

  @OnWorkerEvent('failed')
  onFailed(job: TrackingQueueJob | undefined, error: Error): void {
    if (!job || job.attemptsMade < (job.opts.attempts ?? 1)) return;
    this.logger.error(
      { err: error, hit: job.data },
      'open/click hits lost: record-hit attempts used up',
    );
  }
}
