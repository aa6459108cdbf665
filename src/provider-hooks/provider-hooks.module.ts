import { Module } from '@nestjs/common';
import { BouncesModule } from '../bounces/bounces.module';
import { SecretBox } from '../common/crypto/secret-box';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { SendingModule } from '../sending/sending.module';
import { ProviderHooksController } from './provider-hooks.controller';
import {
  PROVIDER_CREDENTIALS_BOX,
  PROVIDER_CREDENTIALS_BOX_LABEL,
} from './provider-hooks.constants';
import { ProviderHooksRepository } from './provider-hooks.repository';
import { ProviderHooksRoutes } from './provider-hooks.routes';
import { ProviderHooksService } from './provider-hooks.service';
import { SnsVerifier } from './sns-verifier';

/**
 * Provider webhooks (contract: "Provider webhooks"): relays that report
 * bounces and complaints by HTTP (SES via SNS, Postmark, Mailgun, SendGrid,
 * Resend) feed the one bounce policy.
 */
@Module({
  imports: [SendingModule, BouncesModule],
  controllers: [ProviderHooksController],
  providers: [
    {
      provide: PROVIDER_CREDENTIALS_BOX,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) =>
        SecretBox.fromSecret(
          config.appSecret,
          PROVIDER_CREDENTIALS_BOX_LABEL,
          config.appSecretPrevious,
        ),
    },
    ProviderHooksRepository,
    ProviderHooksService,
    ProviderHooksRoutes,
    SnsVerifier,
  ],
})
export class ProviderHooksModule {}
