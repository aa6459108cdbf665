import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { ContactsRepository } from './contacts.repository';
import { ContactsService } from './contacts.service';

/** Contacts: CRUD, bulk import, and upsertByEmail for track, send and workflows. */
@Module({
  imports: [EventsModule],
  providers: [ContactsService, ContactsRepository],
  exports: [ContactsService],
})
export class ContactsModule {}
