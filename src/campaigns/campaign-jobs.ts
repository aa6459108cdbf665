import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { CAMPAIGN_JOBS, CampaignJobData, campaignJobId } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';

/** Options of every RUN job: the id is the campaign's, and a finished job leaves nothing that would block a new one. */
function runJobOptions(campaignId: string, delay: number) {
  return {
    jobId: campaignJobId(campaignId),
    delay: Math.max(0, delay),
    attempts: 1000,
    backoff: { type: 'fixed', delay: 5000 },
    removeOnComplete: true,
    removeOnFail: true,
  };
}

/** A campaign's one RUN job on QUEUES.CAMPAIGNS: added for its time, removed when the status no longer needs it. */
@Injectable()
export class CampaignJobs {
  private readonly logger = new Logger(CampaignJobs.name);

  constructor(@InjectQueue(QUEUES.CAMPAIGNS) private readonly queue: Queue<CampaignJobData>) {}

  async addRunJob(campaignId: string, delay: number): Promise<void> {
    await this.queue.add(CAMPAIGN_JOBS.RUN, { campaignId }, runJobOptions(campaignId, delay));
  }

  /** Drops a waiting or delayed RUN job; an active one finds the new status itself. */
  async removeJob(campaignId: string): Promise<void> {
    try {
      await this.queue.remove(campaignJobId(campaignId));
    } catch (error) {
      this.logger.warn(
        { err: error, campaignId },
        'could not remove a campaign job (it is running; it follows the new status)',
      );
    }
  }
}
