import { Module } from '@nestjs/common';
import { ContactsModule } from '../contacts/contacts.module';
import { ProjectsModule } from '../projects/projects.module';
import { DomainsModule } from '../domains/domains.module';
import { EventsModule } from '../events/events.module';
import { TemplatesModule } from '../templates/templates.module';
import { EmailContentsRepository } from './email-contents.repository';
import { EmailsController } from './emails.controller';
import { EmailsRepository } from './emails.repository';
import { EmailsService } from './emails.service';
import { IdempotencyKeysRepository } from './idempotency-keys.repository';
import { SendController } from './send.controller';
import { SendService } from './send.service';
import { UnsubscribeController } from './unsubscribe.controller';
import { ReturnPaths } from './return-paths';
import { UnsubscribeLinks } from './unsubscribe-links';
import { UnsubscribeService } from './unsubscribe.service';

/**
 * Accepting mail: transactional send (with Idempotency-Key), email records
 * and their content, and unsubscribe. Campaigns and workflows import this
 * module and use EmailsService (compose → insert in their transaction →
 * enqueue after commit). DeliveryModule delivers what it accepts, through
 * the repositories, links and return paths exported here.
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
    UnsubscribeService,
    UnsubscribeLinks,
    ReturnPaths,
  ],
  exports: [
    EmailsService,
    TemplatesModule,
    EmailsRepository,
    EmailContentsRepository,
    IdempotencyKeysRepository,
    UnsubscribeLinks,
    UnsubscribeService,
    ReturnPaths,
  ],
})
export class SendingModule {}
