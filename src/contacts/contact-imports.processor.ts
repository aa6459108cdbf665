import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger } from '@nestjs/common';
import { IMPORT_JOBS, ImportQueueJob } from '../queue/jobs';
import { QUEUES } from '../queue/queue.constants';
import { ContactImportsRecovery } from './contact-imports.recovery';
import { ContactImportsService } from './contact-imports.service';

/**
 * Runs imports in worker roles. A short lock makes a killed worker's import
 * visible as stalled within seconds, so another worker resumes it from its
 * last committed chunk.
 */
@Processor(QUEUES.IMPORTS, {
  concurrency: 2,
  lockDuration: 10_000,
  stalledInterval: 5_000,
  maxStalledCount: 5,
})
export class ContactImportsProcessor extends WorkerHost {
  private readonly logger = new Logger(ContactImportsProcessor.name);

  constructor(
    private readonly imports: ContactImportsService,
    private readonly recovery: ContactImportsRecovery,
  ) {
    super();
  }

  async process(job: ImportQueueJob): Promise<void | { found: number }> {
    if (job.name === IMPORT_JOBS.RECOVER) return this.recovery.recover();
    await this.imports.process(job.data.importId);
  }

  @OnWorkerEvent('failed')
  async onFailed(job: ImportQueueJob | undefined, error: Error): Promise<void> {
    if (!job || job.name !== IMPORT_JOBS.IMPORT) return;
    const attempts = job.opts.attempts ?? 1;
    this.logger.warn(
      { err: error, importId: job.data.importId, attempt: job.attemptsMade },
      'Contact import attempt failed',
    );
    if (job.attemptsMade >= attempts) await this.imports.markFailed(job.data.importId);
  }
}
