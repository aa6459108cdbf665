import { Module } from '@nestjs/common';
import { SecretBox } from '../common/crypto/secret-box';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { DKIM_KEY_BOX, DKIM_KEY_BOX_LABEL } from './domains.constants';
import { DomainsRepository } from './domains.repository';
import { SealedKeysService } from './sealed-keys.service';

/**
 * The DKIM key box and the service that audits and re-seals what it sealed.
 * A module of its own so the CLI (`secrets rotate`) gets them without the
 * queues, processors and schedulers of DomainsModule. DomainsRepository is
 * provided here, the lowest module needing it, and DomainsModule takes it
 * from here: one instance for the feature.
 */
@Module({
  providers: [
    {
      provide: DKIM_KEY_BOX,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) =>
        SecretBox.fromSecret(config.appSecret, DKIM_KEY_BOX_LABEL, config.appSecretPrevious),
    },
    DomainsRepository,
    SealedKeysService,
  ],
  exports: [DKIM_KEY_BOX, DomainsRepository, SealedKeysService],
})
export class SealedKeysModule {}
