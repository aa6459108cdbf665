import { Module } from '@nestjs/common';
import { SecretBox } from '../common/crypto/secret-box';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { ProviderCredentials } from './provider-credentials';
import {
  PROVIDER_CREDENTIALS_BOX,
  PROVIDER_CREDENTIALS_BOX_LABEL,
} from './provider-hooks.constants';
import { ProviderHooksRepository } from './provider-hooks.repository';

/**
 * The box of provider webhook credentials and their re-sealing: a module of
 * its own so the CLI (`secrets rotate`) gets them without the bounce policy.
 */
@Module({
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
    ProviderCredentials,
  ],
  exports: [ProviderHooksRepository, ProviderCredentials],
})
export class ProviderCredentialsModule {}
