import { Module } from '@nestjs/common';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { ReturnPathTokens } from '../sending/return-path';
import { InboundListener } from './inbound-listener';
import { InboundMessagesRepository } from './inbound-messages.repository';
import { InboundMessagesService } from './inbound-messages.service';
import { InboundMetrics } from './inbound-metrics';

/**
 * Bounces and complaints that arrive by mail: the SMTP/LMTP listener (worker
 * roles, INBOUND_SMTP_PORT), the stored messages, and the inbound queue's
 * worker that parses them and hands their reports to the bounce policy.
 */
@Module({
  providers: [
    {
      provide: ReturnPathTokens,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) =>
        new ReturnPathTokens(config.appSecret, config.appSecretPrevious),
    },
    InboundMessagesRepository,
    InboundMessagesService,
    InboundMetrics,
    InboundListener,
  ],
  exports: [InboundMessagesService],
})
export class InboundModule {}
