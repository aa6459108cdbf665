import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { ContactImportsController } from './contact-imports.controller';
import { ContactImportsProcessor } from './contact-imports.processor';
import { ContactImportsRecovery } from './contact-imports.recovery';
import { ContactImportsRepository } from './contact-imports.repository';
import { ContactImportsService } from './contact-imports.service';
import { ContactsController } from './contacts.controller';
import { ContactsRepository } from './contacts.repository';
import { ContactsService } from './contacts.service';

/** Contacts: CRUD, bulk import, and upsertByEmail for track, send and workflows. */
@Module({
  imports: [EventsModule],
  // The import controller first: its routes are the more specific ones.
  controllers: [ContactImportsController, ContactsController],
  providers: [
    ContactsService,
    ContactsRepository,
    ContactImportsService,
    ContactImportsRepository,
    ContactImportsProcessor,
    ContactImportsRecovery,
  ],
  exports: [ContactsService],
})
export class ContactsModule {}
