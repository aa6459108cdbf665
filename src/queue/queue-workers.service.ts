import { BullRegistrar, WorkerHost } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { Worker } from 'bullmq';

/**
 * Starts the BullMQ workers of every @Processor in the app, for the worker
 * roles only. Each worker gets an error listener (an unlistened 'error' event
 * would crash the process on a Redis hiccup) and is awaited until connected,
 * so a process that is shut down right after boot closes cleanly.
 */
@Injectable()
export class QueueWorkersService {
  private readonly logger = new Logger('QueueWorkers');

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
    for (const worker of workers) {
      worker.on('error', (error) => this.logger.error({ err: error, queue: worker.name }, 'worker error'));
    }
    await Promise.all(workers.map((worker) => worker.waitUntilReady()));
    return workers.map((worker) => worker.name);
  }
}
