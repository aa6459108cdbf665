import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { SecretBox } from '../common/crypto/secret-box';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { DnsTxtResolver } from './dns-txt-resolver';
import { DomainCheckScheduler } from './domain-check.scheduler';
import { Domain } from './domain.entity';
import { DomainVerificationService } from './domain-verification.service';
import {
  DEFAULT_DOMAIN_CHECK_SCHEDULE,
  DKIM_KEY_BOX,
  DKIM_KEY_BOX_LABEL,
  DOMAIN_CHECK_SCHEDULE,
} from './domains.constants';
import { DomainsController } from './domains.controller';
import { DomainsProcessor } from './domains.processor';
import { DomainsService } from './domains.service';

/** Sending domains. Exports DomainsService: assertCanSend is the sender check of every sending path. */
@Module({
  imports: [TypeOrmModule.forFeature([Domain])],
  controllers: [DomainsController],
  providers: [
    DomainsService,
    DomainVerificationService,
    DnsTxtResolver,
    DomainsProcessor,
    DomainCheckScheduler,
    {
      provide: DKIM_KEY_BOX,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => SecretBox.fromSecret(config.appSecret, DKIM_KEY_BOX_LABEL),
    },
    // A copy per app instance, so a test tuning one instance's schedule leaves the others alone.
    { provide: DOMAIN_CHECK_SCHEDULE, useFactory: () => ({ ...DEFAULT_DOMAIN_CHECK_SCHEDULE }) },
  ],
  exports: [DomainsService],
})
export class DomainsModule {}
