import { Module } from '@nestjs/common';
import { ContactsModule } from '../contacts/contacts.module';
import { EventsModule } from '../events/events.module';
import { SendingModule } from '../sending/sending.module';
import { BouncePolicy } from './bounce-policy';
import { BounceReportsRepository } from './bounce-reports.repository';

/**
 * Bounces and complaints: the one policy every source feeds (BouncePolicy),
 * suppressions and sender health. Delivery imports it for its own 5xx.
 */
@Module({
  imports: [SendingModule, ContactsModule, EventsModule],
  providers: [BouncePolicy, BounceReportsRepository],
  exports: [BouncePolicy],
})
export class BouncesModule {}
