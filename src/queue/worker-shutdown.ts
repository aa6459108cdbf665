import { Injectable } from '@nestjs/common';

/**
 * Set when this process starts closing its workers (SIGTERM). BullMQ's close
 * waits for the active jobs; a job that could run for a long time (a
 * campaign's RUN job lasts as long as the campaign sends) checks `stopping`
 * between units of work and hands itself back to the queue instead.
 */
@Injectable()
export class WorkerShutdown {
  private requested = false;

  get stopping(): boolean {
    return this.requested;
  }

  begin(): void {
    this.requested = true;
  }
}
