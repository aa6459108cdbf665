import { BullModule } from '@nestjs/bullmq';
import { DynamicModule, Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { AppConfig } from '../config/config';
import { ParkedJobs } from './parked-jobs';
import { DEFAULT_JOB_OPTIONS, QUEUES } from './queue.constants';
import { QueueWorkersService } from './queue-workers.service';
import { RecoveryScheduler } from './recovery';
import { redisConnectionOptions } from './redis';
import { WorkerShutdown } from './worker-shutdown';

/**
 * BullMQ wiring. Workers are registered by hand (manualRegistration) so an
 * `APP_ROLE=api` process holds queues to produce into but runs no processor;
 * see createApp, which registers them for the worker roles. Every queue of
 * QUEUES is registered here once; feature modules inject them with @InjectQueue.
 * Job names and payloads are in jobs.ts, the recovery schedulers in recovery.ts,
 * the parking of disabled projects' jobs in parked-jobs.ts.
 */
@Global()
@Module({})
export class QueueModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: QueueModule,
      imports: [
        DiscoveryModule,
        BullModule.forRoot({
          connection: redisConnectionOptions(config.redisUrl),
          prefix: config.queuePrefix,
          defaultJobOptions: DEFAULT_JOB_OPTIONS,
          extraOptions: { manualRegistration: true },
        }),
        BullModule.registerQueue(...Object.values(QUEUES).map((name) => ({ name }))),
      ],
      providers: [QueueWorkersService, RecoveryScheduler, WorkerShutdown, ParkedJobs],
      exports: [BullModule, QueueWorkersService, WorkerShutdown, ParkedJobs],
    };
  }
}
