import { Module } from '@nestjs/common';
import { CampaignsModule } from '../campaigns/campaigns.module';
import { ContactsModule } from '../contacts/contacts.module';
import { EventsModule } from '../events/events.module';
import { ProjectsModule } from '../projects/projects.module';
import { SendingModule } from '../sending/sending.module';
import { BouncePolicy } from './bounce-policy';
import { BounceReportsRepository } from './bounce-reports.repository';
import { BouncesController } from './bounces.controller';
import { BouncesService } from './bounces.service';
import { ProjectHealthController } from './project-health.controller';
import { ProjectStatsController } from './project-stats.controller';
import { ProjectStatsService } from './project-stats.service';
import { SenderHealth } from './sender-health';
import { SenderHealthStatusModule } from './sender-health-status.module';
import { SuppressionsController } from './suppressions.controller';

/**
 * Bounces and complaints: the one policy every source feeds (BouncePolicy),
 * POST /bounces, suppressions and sender health. Delivery imports it for its
 * own 5xx.
 */
@Module({
  imports: [
    SendingModule,
    ContactsModule,
    EventsModule,
    ProjectsModule,
    CampaignsModule,
    SenderHealthStatusModule,
  ],
  controllers: [
    BouncesController,
    SuppressionsController,
    ProjectHealthController,
    ProjectStatsController,
  ],
  providers: [
    BouncePolicy,
    BounceReportsRepository,
    BouncesService,
    SenderHealth,
    ProjectStatsService,
  ],
  exports: [BouncePolicy],
})
export class BouncesModule {}
