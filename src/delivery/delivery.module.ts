import { Module } from '@nestjs/common';
import { BouncesModule } from '../bounces/bounces.module';
import { DomainsModule } from '../domains/domains.module';
import { EngagementModule } from '../engagement/engagement.module';
import { EventsModule } from '../events/events.module';
import { SendingModule } from '../sending/sending.module';
import { DeliveryProcessor } from './delivery.processor';
import { DeliveryRecovery } from './delivery-recovery';
import { DeliveryService } from './delivery.service';
import { MailTransport } from './mail-transport';
import { DeliveryPacer } from './delivery-pacer';
import { ProviderGroups } from './provider-groups';

/**
 * Delivering accepted mail: the QUEUES.DELIVERY worker, the per-email state
 * machine (QUEUED → SENDING → a final status), the SMTP or outbox transport,
 * the recovery of emails that lost their job, and the pacing per mailbox
 * provider group (DeliveryPacer). It works on the email
 * records SendingModule accepts.
 */
@Module({
  imports: [SendingModule, BouncesModule, DomainsModule, EventsModule, EngagementModule],
  providers: [
    DeliveryService,
    DeliveryProcessor,
    DeliveryRecovery,
    MailTransport,
    ProviderGroups,
    DeliveryPacer,
  ],
  exports: [DeliveryPacer],
})
export class DeliveryModule {}
