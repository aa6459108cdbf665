import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { EndpointSlots } from './endpoint-slots';
import { WebhookDispatcher } from './webhook-dispatcher';
import { WebhookSender } from './webhook-sender';
import { WebhookSecretsModule } from './webhook-secrets.module';
import { WebhooksController } from './webhooks.controller';
import { WebhooksProcessor } from './webhooks.processor';
import { WebhooksRecovery } from './webhooks.recovery';
import { WebhooksService } from './webhooks.service';

/**
 * Outbound webhooks (Standard Webhooks): endpoints, the outbox (a trigger on
 * events writes deliveries in the event's transaction), the sender and the
 * dispatch sweep. Depends on events only: every feature's system events
 * reach it through the events table and the after-commit hooks.
 */
@Module({
  imports: [EventsModule, WebhookSecretsModule],
  controllers: [WebhooksController],
  providers: [
    WebhooksService,
    WebhookDispatcher,
    WebhookSender,
    EndpointSlots,
    WebhooksProcessor,
    WebhooksRecovery,
  ],
})
export class WebhooksModule {}
