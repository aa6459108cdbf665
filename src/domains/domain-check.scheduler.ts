import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { Queue } from 'bullmq';
import { AppConfig, runsWorkers } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { QUEUES } from '../queue/queue.constants';
import {
  DOMAIN_CHECK_SCHEDULE,
  DOMAIN_JOBS,
  DOMAIN_SWEEP_SCHEDULER_ID,
  DomainCheckSchedule,
} from './domains.constants';

/**
 * Registers the repeating sweep once per worker start. upsertJobScheduler with
 * a fixed id is idempotent: many worker processes sharing a Redis prefix end
 * up with one scheduler, and one SWEEP job per interval between them.
 */
@Injectable()
export class DomainCheckScheduler implements OnApplicationBootstrap {
  private readonly logger = new Logger(DomainCheckScheduler.name);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectQueue(QUEUES.DOMAINS) private readonly queue: Queue,
    @Inject(DOMAIN_CHECK_SCHEDULE) private readonly schedule: DomainCheckSchedule,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!runsWorkers(this.config)) return;
    await this.queue.upsertJobScheduler(
      DOMAIN_SWEEP_SCHEDULER_ID,
      { every: this.schedule.sweepEveryMs },
      // A sweep that fails is simply replaced by the next one; no retries piling up behind it.
      {
        name: DOMAIN_JOBS.SWEEP,
        data: {},
        opts: { attempts: 1, removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } },
      },
    );
    this.logger.log({ everyMs: this.schedule.sweepEveryMs }, 'domain sweep scheduled');
  }
}
