import { Module } from '@nestjs/common';
import { ContactsModule } from '../contacts/contacts.module';
import { ProjectsModule } from '../projects/projects.module';
import { DomainsModule } from '../domains/domains.module';
import { EventsModule } from '../events/events.module';
import { TemplatesModule } from '../templates/templates.module';
import { DeliveryProcessor } from './delivery.processor';
import { DeliveryRecovery } from './delivery-recovery';
import { DeliveryService } from './delivery.service';
import { EmailContentsRepository } from './email-contents.repository';
import { EmailTrackingProcessor } from './email-tracking.processor';
import { EmailTrackingRoutes } from './email-tracking.routes';
import { EmailTrackingService } from './email-tracking.service';
import { EmailsController } from './emails.controller';
import { EmailsRepository } from './emails.repository';
import { EmailsService } from './emails.service';
import { IdempotencyKeysRepository } from './idempotency-keys.repository';
import { MailTransport } from './mail-transport';
import { SendController } from './send.controller';
import { SendService } from './send.service';
import { TrackingLinks } from './tracking-links';
import { UnsubscribeController } from './unsubscribe.controller';
import { UnsubscribeLinks } from './unsubscribe-links';
import { UnsubscribeService } from './unsubscribe.service';

/**
 * Transactional send, email records, the delivery pipeline, unsubscribe, and
 * open/click tracking (the hits are counters on the email record).
 * Campaigns and workflows import this module and use EmailsService
 * (compose → insert in their transaction → enqueue after commit).
 */
@Module({
  imports: [TemplatesModule, ContactsModule, EventsModule, DomainsModule, ProjectsModule],
  controllers: [SendController, EmailsController, UnsubscribeController],
  providers: [
    EmailsRepository,
    EmailContentsRepository,
    IdempotencyKeysRepository,
    EmailsService,
    SendService,
    DeliveryService,
    DeliveryProcessor,
    DeliveryRecovery,
    MailTransport,
    UnsubscribeService,
    UnsubscribeLinks,
    TrackingLinks,
    EmailTrackingService,
    EmailTrackingRoutes,
    EmailTrackingProcessor,
  ],
  exports: [EmailsService, TemplatesModule],
})
export class SendingModule {}
