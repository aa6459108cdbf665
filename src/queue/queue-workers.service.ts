import { BullRegistrar, getQueueToken, WorkerHost } from '@nestjs/bullmq';
import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { DiscoveryService, ModuleRef } from '@nestjs/core';
import type { Queue, RedisClient, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import {
  ConsumptionReport,
  HEARTBEAT_PING_TIMEOUT_MS,
  WorkerHeartbeat,
  workerHeartbeatPath,
} from './worker-heartbeat';
import { QUEUES } from './queue.constants';
import { RecoveryScheduler } from './recovery';
import { REDIS } from './redis.module';
import { WorkerShutdown } from './worker-shutdown';

/**
 * Starts the BullMQ workers of every @Processor in the app, for the worker
 * roles only. Each worker gets an error listener (an unlistened 'error' event
 * would crash the process on a Redis hiccup) and is awaited until connected,
 * so a process that is shut down right after boot closes cleanly.
 *
 * On shutdown (SIGTERM) the workers are closed first, waiting for their
 * active jobs, before any pool closes: @nestjs/bullmq closes workers in
 * onApplicationShutdown, in no set order with TypeORM's pool, and a job
 * finishing after its database went away (an accepted message not yet marked
 * SENT, an import chunk) would be redone by the next worker.
 *
 * While the workers run, a heartbeat file says whether every one of them is
 * consuming its queue: the worker health probe reads it (queue/worker-heartbeat.ts).
 * It is removed first on shutdown.
 *
 * Once the workers are connected, the recovery schedulers are registered
 * (queue/recovery.ts): only processes that run workers register them.
 */
/** Longest wait at shutdown for queue connections still starting. */
const QUEUE_READY_WAIT_MS = 2_000;
/** While workers wait for their active jobs at shutdown, the queues still waited for are logged this often. */
const CLOSE_REPORT_MS = 10_000;

@Injectable()
export class QueueWorkersService implements BeforeApplicationShutdown {
  private readonly logger = new Logger('QueueWorkers');
  private workers: Worker[] = [];
  /** Each worker's blocking connection, the one that fetches its jobs. */
  private consumers: RedisClient[] = [];
  private heartbeat: WorkerHeartbeat | undefined;

  constructor(
    private readonly registrar: BullRegistrar,
    private readonly discovery: DiscoveryService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(REDIS) private readonly redis: Redis,
    private readonly recovery: RecoveryScheduler,
    private readonly moduleRef: ModuleRef,
    private readonly shutdown: WorkerShutdown,
  ) {}

  async start(): Promise<string[]> {
    this.registrar.register();
    const workers = this.discovery
      .getProviders()
      .map((wrapper) => wrapper.instance as unknown)
      .filter((instance): instance is WorkerHost => instance instanceof WorkerHost)
      .map((host) => host.worker as Worker);
    this.workers = workers;
    for (const worker of workers) {
      worker.on('error', (error) =>
        this.logger.error({ err: error, queue: worker.name }, 'worker error'),
      );
    }
    this.consumers = await Promise.all(workers.map((worker) => worker.waitUntilReady()));
    this.heartbeat = new WorkerHeartbeat(
      workerHeartbeatPath(this.config.queuePrefix),
      () => this.consumption(),
      (error) => this.logger.warn({ err: error }, 'cannot write the worker heartbeat'),
    );
    await this.heartbeat.start();
    await this.recovery.start();
    return workers.map((worker) => worker.name);
  }

  async beforeApplicationShutdown(): Promise<void> {
    // Long jobs (a campaign's RUN) see this and give their job back rather than hold the close.
    this.shutdown.begin();
    await this.heartbeat?.stop();
    await this.recovery.stop();
    await this.closeWorkers();
    // A queue closed while its connection is still starting (a boot refused right away, a
    // SIGTERM just after start) makes bullmq emit 'error' once its listeners are gone: an
    // uncaught exception that ended the process before it could say why it stopped. Bounded:
    // with Redis unreachable the connections never get ready, and shutdown must go on.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(this.queues().map((queue) => queue.waitUntilReady())),
      new Promise((resolve) => (timer = setTimeout(resolve, QUEUE_READY_WAIT_MS))),
    ]);
    clearTimeout(timer);
  }

  /**
   * Closes every worker, each waiting for its active jobs; a close that takes
   * long is logged with the queues not closed yet, so a shutdown that hangs
   * says where.
   */
  private async closeWorkers(): Promise<void> {
    const open = new Set(this.workers.map((worker) => worker.name));
    const started = Date.now();
    const report = setInterval(
      () =>
        this.logger.warn(
          { queues: [...open], waitedMs: Date.now() - started },
          'shutdown still waiting for the active jobs of these queues',
        ),
      CLOSE_REPORT_MS,
    );
    try {
      await Promise.all(
        this.workers.map((worker) => worker.close().finally(() => open.delete(worker.name))),
      );
    } finally {
      clearInterval(report);
    }
  }

  private queues(): Queue[] {
    return Object.values(QUEUES).map((name) =>
      this.moduleRef.get<Queue>(getQueueToken(name), { strict: false }),
    );
  }

  /**
   * What the heartbeat reports: every worker's main loop running and not
   * paused, both its connections (the blocking one fetches its jobs) ready,
   * and Redis answering a PING.
   */
  private async consumption(): Promise<ConsumptionReport> {
    const problems: string[] = [];
    const commandClients = await Promise.all(this.workers.map((worker) => worker.client));
    this.workers.forEach((worker, i) => {
      if (!worker.isRunning()) problems.push(`${worker.name}: worker not running`);
      else if (worker.isPaused()) problems.push(`${worker.name}: worker paused`);
      const fetching = this.consumers[i]?.status ?? 'missing';
      if (fetching !== 'ready')
        problems.push(`${worker.name}: job-fetching connection ${fetching}`);
      const command = commandClients[i]?.status ?? 'missing';
      if (command !== 'ready') problems.push(`${worker.name}: command connection ${command}`);
    });
    const ping = await this.pingRedis(HEARTBEAT_PING_TIMEOUT_MS);
    if (ping) problems.push(ping);
    return { queues: this.workers.map((worker) => worker.name), problems };
  }

  /** null when Redis answers in time, else the problem. */
  private async pingRedis(timeoutMs: number): Promise<string | null> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.redis.ping(),
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${timeoutMs} ms`)),
            timeoutMs,
          );
        }),
      ]);
      return null;
    } catch (error) {
      return `Redis PING failed (${error instanceof Error ? error.message : String(error)})`;
    } finally {
      clearTimeout(timer);
    }
  }
}
