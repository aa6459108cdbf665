import { BullRegistrar, WorkerHost } from '@nestjs/bullmq';
import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { Worker } from 'bullmq';

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
 */
@Injectable()
export class QueueWorkersService implements BeforeApplicationShutdown {
  private readonly logger = new Logger('QueueWorkers');
  private workers: Worker[] = [];

  constructor(
    private readonly registrar: BullRegistrar,
    private readonly discovery: DiscoveryService,
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
      worker.on('error', (error) => this.logger.error({ err: error, queue: worker.name }, 'worker error'));
    }
    await Promise.all(workers.map((worker) => worker.waitUntilReady()));
    return workers.map((worker) => worker.name);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.close()));
  }
}
