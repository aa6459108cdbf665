import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { QUEUES } from '../queue/queue.constants';
import { QueueRecovery } from '../queue/recovery';
import { CampaignStatus } from './campaign.entity';
import { CampaignJobs } from './campaign-jobs';
import { CampaignsRepository } from './campaigns.repository';

/**
 * The campaigns queue's recovery (queue/recovery.ts, RECOVERY_EVERY_MS, and
 * at the first worker's boot on an empty Redis): every SCHEDULED campaign
 * gets its delayed RUN job again and every SENDING one a RUN job now, under
 * the campaign's job id, which adds nothing when the job exists. So a
 * schedule or a fan-out survives Redis losing its data.
 */
@Injectable()
export class CampaignsRecovery extends QueueRecovery {
  readonly queue = QUEUES.CAMPAIGNS;
  readonly everyMs: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly repository: CampaignsRepository,
    private readonly jobs: CampaignJobs,
  ) {
    super();
    this.everyMs = config.recoveryEveryMs;
  }

  async recover(): Promise<{ found: number }> {
    const open = await this.repository.openCampaigns(this.dataSource.manager);
    for (const campaign of open) {
      const delay =
        campaign.status === CampaignStatus.SCHEDULED && campaign.scheduledAt
          ? campaign.scheduledAt.getTime() - Date.now()
          : 0;
      await this.jobs.addRunJob(campaign.id, delay);
    }
    return { found: open.length };
  }
}
