import { Module } from '@nestjs/common';
import { ContactsModule } from '../contacts/contacts.module';
import { EventsModule } from '../events/events.module';
import { TrackController } from './track.controller';
import { TrackRepository } from './track.repository';
import { TrackService } from './track.service';
import { TrackWriter } from './track-writer';

/** POST /v1/track. Separate from EventsModule, which ContactsModule imports, to keep the graph acyclic. */
@Module({
  imports: [ContactsModule, EventsModule],
  controllers: [TrackController],
  providers: [TrackService, TrackRepository, TrackWriter],
})
export class TrackModule {}
