import { Module } from '@nestjs/common';
import { ContactsModule } from '../contacts/contacts.module';
import { ProjectsModule } from '../projects/projects.module';
import { DomainsModule } from '../domains/domains.module';
import { EngagementModule } from '../engagement/engagement.module';
import { EventsModule } from '../events/events.module';
import { TemplatesModule } from '../templates/templates.module';
import { DeliveryProcessor } from './delivery.processor';
import { DeliveryRecovery } from './delivery-recovery';
import { DeliveryService } from './delivery.service';
import { EmailContentsRepository } from './email-contents.repository';
import { EmailsController } from './emails.controller';
import { EmailsRepository } from './emails.repository';
import { EmailsService } from './emails.service';
import { IdempotencyKeysRepository } from './idempotency-keys.repository';
import { MailTransport } from './mail-transport';
import { SendController } from './send.controller';
import { SendService } from './send.service';
import { UnsubscribeController } from './unsubscribe.controller';
import { UnsubscribeLinks } from './unsubscribe-links';
import { UnsubscribeService } from './unsubscribe.service';

/**
 * Transactional send, email records, the delivery pipeline and unsubscribe.
 * Delivery writes the open/click links of EngagementModule into messages.
 * Campaigns and workflows import this module and use EmailsService
 * (compose → insert in their transaction → enqueue after commit).
 */
@Module({
  imports: [
    TemplatesModule,
    ContactsModule,
    EventsModule,
    DomainsModule,
    ProjectsModule,
    EngagementModule,
  ],
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
  ],
  exports: [EmailsService, TemplatesModule],
})
export class SendingModule {}
