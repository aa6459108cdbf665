import { Inject, Injectable } from '@nestjs/common';
import { QUEUES } from '../queue/queue.constants';
import { QueueRecovery } from '../queue/recovery';
import { DomainVerificationService, SweepResult } from './domain-verification.service';
import { DOMAIN_CHECK_SCHEDULE, DomainCheckSchedule } from './domains.constants';
import { TrackingDomainVerifier } from './tracking-domain-verifier';

/**
 * The repeating sweep is the domains queue's recovery scheduler
 * (queue/recovery.ts): every `sweepEveryMs`, once across all workers, a
 * SWEEP job checks the pending domains (so a domain whose creation check was
 * lost is checked anyway) and the verified ones that are due, and projects'
 * tracking domains on the same terms.
 */
@Injectable()
export class DomainCheckScheduler extends QueueRecovery {
  readonly queue = QUEUES.DOMAINS;

  constructor(
    @Inject(DOMAIN_CHECK_SCHEDULE) private readonly schedule: DomainCheckSchedule,
    private readonly verification: DomainVerificationService,
    private readonly trackingDomains: TrackingDomainVerifier,
  ) {
    super();
  }

  get everyMs(): number {
    return this.schedule.sweepEveryMs;
  }

  async recover(): Promise<SweepResult> {
    const [domains, tracking] = await Promise.all([
      this.verification.sweep(),
      this.trackingDomains.sweep(),
    ]);
    return {
      checked: domains.checked + tracking.checked,
      verified: domains.verified + tracking.verified,
      failed: domains.failed + tracking.failed,
    };
  }
}
