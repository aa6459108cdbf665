import { Module } from '@nestjs/common';
import { ConditionsModule } from '../conditions/conditions.module';
import { ContactsModule } from '../contacts/contacts.module';
import { DomainsModule } from '../domains/domains.module';
import { DisabledProjectsModule } from '../projects/disabled-projects.module';
import { ProjectsModule } from '../projects/projects.module';
import { EventsModule } from '../events/events.module';
import { SendingModule } from '../sending/sending.module';
import { TemplatesModule } from '../templates/templates.module';
import { CampaignJobs } from './campaign-jobs';
import { CampaignRunner } from './campaign-runner';
import { CampaignStatusService } from './campaign-status.service';
import { CampaignTestSendService } from './campaign-test-send.service';
import { CampaignsController } from './campaigns.controller';
import { CampaignsProcessor } from './campaigns.processor';
import { CampaignsRecovery } from './campaigns.recovery';
import { CampaignsRepository } from './campaigns.repository';
import { CampaignsService } from './campaigns.service';

/** Bulk email to an audience: the resource, its status machine, the fan-out and its statistics. */
@Module({
  imports: [
    SendingModule,
    TemplatesModule,
    ConditionsModule,
    ContactsModule,
    DomainsModule,
    EventsModule,
    DisabledProjectsModule,
    ProjectsModule,
  ],
  controllers: [CampaignsController],
  providers: [
    CampaignsRepository,
    CampaignsService,
    CampaignJobs,
    CampaignStatusService,
    CampaignTestSendService,
    CampaignRunner,
    CampaignsProcessor,
    CampaignsRecovery,
  ],
  exports: [CampaignStatusService],
})
export class CampaignsModule {}
