import { Module } from '@nestjs/common';
import { BouncesModule } from '../bounces/bounces.module';
import { ReturnPathTokens } from '../sending/return-path';
import { ReturnPaths } from '../sending/return-paths';
import { SendingModule } from '../sending/sending.module';
import { InboundListener } from './inbound-listener';
import { InboundMessagesRepository } from './inbound-messages.repository';
import { InboundMessagesService } from './inbound-messages.service';
import { InboundMetrics } from './inbound-metrics';
import { InboundParser } from './inbound-parser';
import { InboundReports } from './inbound-reports';
import { InboundUnsubscribes } from './inbound-unsubscribes';
import { InboundProcessor } from './inbound.processor';
import { InboundRecovery } from './inbound.recovery';

/**
 * Bounces and complaints that arrive by mail: the SMTP/LMTP listener (worker
 * roles, INBOUND_SMTP_PORT), the stored messages, and the inbound queue's
 * worker that parses them and hands their reports to the bounce policy.
 */
@Module({
  imports: [SendingModule, BouncesModule],
  providers: [
    // The tokens delivery signs return paths with (sending's ReturnPaths), not a second copy.
    {
      provide: ReturnPathTokens,
      inject: [ReturnPaths],
      useFactory: (paths: ReturnPaths) => paths.tokens,
    },
    InboundMessagesRepository,
    InboundMessagesService,
    InboundMetrics,
    InboundListener,
    InboundParser,
    InboundReports,
    InboundUnsubscribes,
    InboundRecovery,
    InboundProcessor,
  ],
  exports: [InboundMessagesService],
})
export class InboundModule {}
