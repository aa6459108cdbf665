import { Inject, Injectable } from '@nestjs/common';
import { QUEUES } from '../queue/queue.constants';
import { QueueRecovery } from '../queue/recovery';
import { DomainVerificationService, SweepResult } from './domain-verification.service';
import { DOMAIN_CHECK_SCHEDULE, DomainCheckSchedule } from './domains.constants';

/**
 * The repeating sweep is the domains queue's recovery scheduler
 * (queue/recovery.ts): every `sweepEveryMs`, once across all workers, a
 * SWEEP job checks the pending domains (so a domain whose creation check was
 * lost is checked anyway) and the verified ones that are due.
 */
@Injectable()
export class DomainCheckScheduler extends QueueRecovery {
  readonly queue = QUEUES.DOMAINS;

  constructor(
    @Inject(DOMAIN_CHECK_SCHEDULE) private readonly schedule: DomainCheckSchedule,
    private readonly verification: DomainVerificationService,
  ) {
    super();
  }

  get everyMs(): number {
    return this.schedule.sweepEveryMs;
  }

  recover(): Promise<SweepResult> {
    return this.verification.sweep();
  }
}
