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

/**
 * Delivering accepted mail: the QUEUES.DELIVERY worker, the per-email state
 * machine (QUEUED → SENDING → a final status), the SMTP or outbox transport,
 * and the recovery of emails that lost their job. It works on the email
 * records SendingModule accepts.
 */
@Module({
  imports: [SendingModule, BouncesModule, DomainsModule, EventsModule, EngagementModule],
  providers: [DeliveryService, DeliveryProcessor, DeliveryRecovery, MailTransport],
})
export class DeliveryModule {}
