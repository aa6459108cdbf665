import { Module } from '@nestjs/common';
import { InboundListing } from './inbound-listing';
import { InboundMessagesRepository } from './inbound-messages.repository';

/** What the CLI needs of inbound mail: reads only, no queue. */
@Module({
  providers: [InboundMessagesRepository, InboundListing],
  exports: [InboundListing],
})
export class InboundListingModule {}
