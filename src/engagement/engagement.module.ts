import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { EmailHitsRepository } from './email-hits.repository';
import { EmailTrackingProcessor } from './email-tracking.processor';
import { EmailTrackingRoutes } from './email-tracking.routes';
import { EmailTrackingService } from './email-tracking.service';
import { TrackingLinks } from './tracking-links';

/**
 * Open and click tracking of sent mail: the signed links delivery writes into
 * a message (TrackingLinks, exported), the pixel and redirect endpoints, and
 * the hits they count on the email record.
 */
@Module({
  imports: [EventsModule],
  providers: [
    EmailHitsRepository,
    TrackingLinks,
    EmailTrackingService,
    EmailTrackingRoutes,
    EmailTrackingProcessor,
  ],
  exports: [TrackingLinks],
})
export class EngagementModule {}
