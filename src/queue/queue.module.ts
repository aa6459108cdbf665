import { BullModule } from '@nestjs/bullmq';
import { DynamicModule, Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import type { ConnectionOptions } from 'bullmq';
import { Cluster } from 'ioredis';
import { AppConfig } from '../config/config';
import { ParkedJobs } from './parked-jobs';
import { DEFAULT_JOB_OPTIONS, QUEUES } from './queue.constants';
import { QueueWorkersService } from './queue-workers.service';
import { RecoveryScheduler } from './recovery';
import { bullConnection } from './redis';
import { queuePrefixOf } from './redis-keys';
import { WorkerShutdown } from './worker-shutdown';

/**
 * BullMQ wiring. Workers are registered by hand (manualRegistration) so an
 * `APP_ROLE=api` process holds queues to produce into but runs no processor;
 * see createApp, which registers them for the worker roles. Every queue of
 * QUEUES is registered here once; feature modules inject them with @InjectQueue.
 * Job names and payloads are in jobs.ts, the recovery schedulers in recovery.ts,
 * the parking of disabled projects' jobs in parked-jobs.ts.
 */
const BULL_CONNECTION = Symbol('BULL_CONNECTION');

/** Closes the shared cluster client of the queues (BullMQ leaves a client it was given open). */
class BullConnectionCloser implements OnApplicationShutdown {
  constructor(@Inject(BULL_CONNECTION) private readonly connection: ConnectionOptions) {}
  async onApplicationShutdown(): Promise<void> {
    const cluster = this.connection;
    if (cluster instanceof Cluster) await cluster.quit().catch(() => cluster.disconnect());
  }
}

@Global()
@Module({})
export class QueueModule {
  static forRoot(config: AppConfig): DynamicModule {
    const connection = bullConnection(config.redis);
    return {
      module: QueueModule,
      imports: [
        DiscoveryModule,
        BullModule.forRoot({
          connection,
          prefix: config.queuePrefix,
          defaultJobOptions: DEFAULT_JOB_OPTIONS,
          extraOptions: { manualRegistration: true },
        }),
        // Workers take their queue's prefix (one hash slot per queue on a cluster: redis-keys.ts).
        BullModule.registerQueue(
          ...Object.values(QUEUES).map((name) => ({ name, prefix: queuePrefixOf(config, name) })),
        ),
      ],
      providers: [
        QueueWorkersService,
        RecoveryScheduler,
        WorkerShutdown,
        ParkedJobs,
        { provide: BULL_CONNECTION, useValue: connection },
        BullConnectionCloser,
      ],
      exports: [BullModule, QueueWorkersService, WorkerShutdown, ParkedJobs],
    };
  }
}
