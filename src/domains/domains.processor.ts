import { Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger } from '@nestjs/common';
import { DOMAIN_JOBS, DomainQueueJob } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { DomainCheckScheduler } from './domain-check.scheduler';
import { DomainVerificationService, SweepResult } from './domain-verification.service';

/** Runs domain checks: the one after creation (CHECK) and the repeating sweep (SWEEP). */
@Processor(QUEUES.DOMAINS, { concurrency: 2 })
export class DomainsProcessor extends WorkerHost {
  private readonly logger = new Logger(DomainsProcessor.name);

  constructor(
    private readonly verification: DomainVerificationService,
    private readonly sweep: DomainCheckScheduler,
  ) {
    super();
  }

  async process(job: DomainQueueJob): Promise<{ status?: string } | SweepResult | null> {
    switch (job.name) {
      case DOMAIN_JOBS.CHECK: {
        if (!job.data.domainId) return null;
        // The row decides: a deleted domain is simply skipped, a re-run only re-checks DNS.
        const row = await this.verification.checkById(job.data.domainId);
        return row ? { status: row.status } : null;
      }
      case DOMAIN_JOBS.SWEEP: {
        const result = await this.sweep.recover();
        if (result.checked > 0) this.logger.log(result, 'domain sweep done');
        return result;
      }
      default:
        this.logger.warn(
          { name: (job as { name: string }).name },
          'unknown job on the domains queue',
        );
        return null;
    }
  }
}
