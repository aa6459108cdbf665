import { Module } from '@nestjs/common';
import { EventHooks } from './event-hooks';
import { EventsController } from './events.controller';
import { EventsRepository } from './events.repository';
import { EventsService } from './events.service';

/** Events: recording (for every feature), the after-commit hook, and GET /events. */
@Module({
  controllers: [EventsController],
  providers: [EventsService, EventsRepository, EventHooks],
  exports: [EventsService, EventHooks],
})
export class EventsModule {}
