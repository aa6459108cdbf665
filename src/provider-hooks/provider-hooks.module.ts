import { Module } from '@nestjs/common';
import { BouncesModule } from '../bounces/bounces.module';
import { SendingModule } from '../sending/sending.module';
import { ProviderCredentialsModule } from './provider-credentials.module';
import { ProviderHooksController } from './provider-hooks.controller';
import { ProviderHooksRoutes } from './provider-hooks.routes';
import { ProviderHooksService } from './provider-hooks.service';
import { SnsVerifier } from './sns-verifier';

/**
 * Provider webhooks (contract: "Provider webhooks"): relays that report
 * bounces and complaints by HTTP (SES via SNS, Postmark, Mailgun, SendGrid,
 * Resend) feed the one bounce policy.
 */
@Module({
  imports: [SendingModule, BouncesModule, ProviderCredentialsModule],
  controllers: [ProviderHooksController],
  providers: [ProviderHooksService, ProviderHooksRoutes, SnsVerifier],
})
export class ProviderHooksModule {}
