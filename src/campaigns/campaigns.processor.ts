import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger } from '@nestjs/common';
import { CAMPAIGN_JOBS, CampaignQueueJob } from '../queue/jobs';
import { isPaused, ParkedJobs } from '../queue/parked-jobs';
import { QUEUES } from '../queue/queue.constants';
import { handBackJob } from '../queue/worker-shutdown';
import { CampaignRunner, RunOutcome } from './campaign-runner';
import { CampaignsRecovery } from './campaigns.recovery';

/** Campaigns running at once per worker process (each holds a database connection for its snapshot while fanning out). */
export const CAMPAIGN_CONCURRENCY = 4;

/**
 * QUEUES.CAMPAIGNS worker. A RUN job lasts as long as its campaign sends; a
 * killed worker's job comes back after its lock lapses (15 s) and resumes
 * from the committed state. Stalls never fail a campaign (maxStalledCount is
 * large); a job that throws is retried every 5 s.
 */
@Processor(QUEUES.CAMPAIGNS, {
  concurrency: CAMPAIGN_CONCURRENCY,
  lockDuration: 15_000,
  stalledInterval: 5_000,
  maxStalledCount: 1000,
})
export class CampaignsProcessor extends WorkerHost {
  private readonly logger = new Logger(CampaignsProcessor.name);

  constructor(
    private readonly runner: CampaignRunner,
    private readonly recovery: CampaignsRecovery,
    private readonly parked: ParkedJobs,
  ) {
    super();
  }

  async process(job: CampaignQueueJob, token?: string): Promise<RunOutcome | { found: number }> {
    if (job.name === CAMPAIGN_JOBS.RECOVER) return this.recovery.recover();
    const outcome = await this.runner.run(job.data.campaignId);
    // The project is disabled: parked until it is enabled again.
    if (isPaused(outcome)) {
      if (token) return this.parked.park(job, token, outcome.pausedFor);
      return outcome;
    }
    // Not due yet, or handed back by a stopping process: the job waits in the queue until then.
    if (typeof outcome === 'object' && token) return handBackJob(job, token, outcome.notDueUntil);
    return outcome;
  }

  @OnWorkerEvent('failed')
  onFailed(job: CampaignQueueJob | undefined, error: Error): void {
    if (!job || job.name !== CAMPAIGN_JOBS.RUN) return;
    this.logger.warn(
      { err: error, campaignId: job.data.campaignId, attempt: job.attemptsMade },
      'campaign run failed; it is retried',
    );
  }
}
