import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger } from '@nestjs/common';
import type { Job } from 'bullmq';
import { QUEUES } from '../queue/queue.constants';
import { ContactImportsService, ImportJobData } from './contact-imports.service';

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

  constructor(private readonly imports: ContactImportsService) {
    super();
  }

  async process(job: Job<ImportJobData>): Promise<void> {
    await this.imports.process(job.data.importId);
  }

  /** The worker is connected (worker roles only): pick up imports whose enqueue may have been lost. */
  @OnWorkerEvent('ready')
  async onReady(): Promise<void> {
    await this.imports.recoverUnfinished().catch((error: unknown) => {
      this.logger.warn({ err: error }, 'Could not re-enqueue unfinished imports');
    });
  }

  @OnWorkerEvent('failed')
  async onFailed(job: Job<ImportJobData> | undefined, error: Error): Promise<void> {
    if (!job) return;
    const attempts = job.opts.attempts ?? 1;
    this.logger.warn(
      { err: error, importId: job.data.importId, attempt: job.attemptsMade },
      'Contact import attempt failed',
    );
    if (job.attemptsMade >= attempts) await this.imports.markFailed(job.data.importId);
  }
}
