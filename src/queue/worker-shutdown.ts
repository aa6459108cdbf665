import { Injectable } from '@nestjs/common';
import { DelayedError, type Job } from 'bullmq';

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

/**
 * Gives a job back to its queue untouched, to run again from `at` (a closing
 * worker's job: at once, by another worker or this one's next start). Call it
 * from a processor's `process` with the job's lock token and let the
 * DelayedError it throws reach BullMQ, which then neither completes nor fails
 * the job and counts no attempt.
 */
export async function handBackJob(
  job: Job,
  token: string,
  at: Date | number = Date.now(),
): Promise<never> {
  await job.moveToDelayed(typeof at === 'number' ? at : at.getTime(), token);
  throw new DelayedError();
}
