import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig, runsWorkers } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { EmailsRepository } from './emails.repository';
import { EmailsService } from './emails.service';

const SWEEP_EVERY_MS = 60_000;
const STALE_AFTER_MINUTES = 5;
const SWEEP_BATCH = 1000;

/**
 * Rows are committed before their jobs are added; a crash (or Redis outage)
 * in between would leave QUEUED emails without a job forever. Every worker
 * process sweeps once a minute and re-adds jobs for QUEUED rows older than
 * five minutes (job id = email id: existing jobs are left as they are), and
 * drops expired idempotency keys. Several workers sweeping at once is harmless.
 */
@Injectable()
export class DeliveryRecovery implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(DeliveryRecovery.name);
  private timer: NodeJS.Timeout | null = null;
  private running = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly repository: EmailsRepository,
    private readonly emails: EmailsService,
  ) {}

  onApplicationBootstrap(): void {
    if (!runsWorkers(this.config)) return;
    this.timer = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  async sweep(staleAfterMinutes = STALE_AFTER_MINUTES): Promise<number> {
    if (this.running) return 0;
    this.running = true;
    try {
      const stale = await this.repository.findStaleQueued(this.dataSource.manager, staleAfterMinutes, SWEEP_BATCH);
      await this.emails.enqueue(stale);
      await this.repository.deleteExpiredIdempotencyKeys(this.dataSource.manager);
      return stale.length;
    } catch (error) {
      this.logger.warn({ err: error }, 'delivery recovery sweep failed; the next one retries');
      return 0;
    } finally {
      this.running = false;
    }
  }
}
