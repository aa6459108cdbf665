import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { ProjectsModule } from '../projects/projects.module';
import { DnsResolver } from './dns-resolver';
import { DomainCheckScheduler } from './domain-check.scheduler';
import { DomainVerificationService } from './domain-verification.service';
import { DEFAULT_DOMAIN_CHECK_SCHEDULE, DOMAIN_CHECK_SCHEDULE } from './domains.constants';
import { DomainsController } from './domains.controller';
import { DomainsProcessor } from './domains.processor';
import { DomainsService } from './domains.service';
import { SealedKeysCheck } from './sealed-keys.check';
import { SealedKeysModule } from './sealed-keys.module';
import { TrackingDomainVerifier } from './tracking-domain-verifier';

/**
 * Sending domains. Exports DomainsService: assertCanSend is the sender check of every sending path.
 * Also checks projects' tracking domains (TrackingDomainVerifier, exported), with the same DNS and sweep.
 */
@Module({
  imports: [SealedKeysModule, EventsModule, ProjectsModule],
  controllers: [DomainsController],
  providers: [
    DomainsService,
    DomainVerificationService,
    DnsResolver,
    DomainsProcessor,
    DomainCheckScheduler,
    TrackingDomainVerifier,
    // Fails the boot of every role when APP_SECRET no longer opens the stored DKIM keys.
    SealedKeysCheck,
    // A copy per app instance, so a test tuning one instance's schedule leaves the others alone.
    { provide: DOMAIN_CHECK_SCHEDULE, useFactory: () => ({ ...DEFAULT_DOMAIN_CHECK_SCHEDULE }) },
  ],
  exports: [DomainsService, TrackingDomainVerifier, DnsResolver],
})
export class DomainsModule {}
