import { Module } from '@nestjs/common';
import { SecretBox } from '../common/crypto/secret-box';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { WebhookSecretsService } from './webhook-secrets.service';
import { WEBHOOK_SECRET_BOX, WEBHOOK_SECRET_BOX_LABEL } from './webhooks.constants';
import { WebhooksRepository } from './webhooks.repository';

/**
 * The box that seals webhook signing secrets, and their re-sealing after an
 * APP_SECRET rotation: a module of its own so the CLI (`secrets rotate`)
 * gets them without the queues and processors of WebhooksModule.
 */
@Module({
  providers: [
    {
      provide: WEBHOOK_SECRET_BOX,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) =>
        SecretBox.fromSecret(config.appSecret, WEBHOOK_SECRET_BOX_LABEL, config.appSecretPrevious),
    },
    WebhooksRepository,
    WebhookSecretsService,
  ],
  exports: [WEBHOOK_SECRET_BOX, WebhooksRepository, WebhookSecretsService],
})
export class WebhookSecretsModule {}
