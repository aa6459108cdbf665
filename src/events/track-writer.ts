import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DatabaseError } from 'pg';
import { QueryFailedError, type DataSource } from 'typeorm';
import { TrackRepository, type TrackedRow, type TrackWrite } from './track.repository';

/** Most tracks one statement carries. */
export const MAX_TRACK_BATCH = 100;
/** Most batch statements in flight at once (2 measured best; see docs/contacts-events.md). */
export const MAX_TRACK_BATCHES_IN_FLIGHT = 2;
/** Most one-at-a-time retries in flight (they may wait on locks, so they get few connections). */
export const MAX_TRACK_RETRIES_IN_FLIGHT = 4;

interface Waiting {
  write: TrackWrite;
  key: string;
  resolve: (row: TrackedRow) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for POST /v1/track. Each track waits for its own commit, as
 * before, but tracks that arrive while earlier statements are running share
 * the next one: one multi-row upsert + insert, one transaction, one WAL flush.
 * With nothing in flight a track is written at once, so an idle service adds
 * no latency; under load the batch grows with the queue, which is what keeps
 * Postgres's per-statement cost from capping the throughput.
 *
 * Tracks of one contact are written one statement after another, in arrival
 * order: a track whose contact is in the batch being built, or in a statement
 * still running, waits for a later batch, so it applies on top of the earlier
 * one (and no statement updates a row twice).
 *
 * A batch statement gives up after 100 ms on a contact locked by another
 * transaction (the function's lock_timeout), so one busy contact cannot hold
 * up everyone's tracks. When a batch fails with an error from Postgres (which
 * means nothing of it was written), its tracks are retried one at a time,
 * outside the batch slots and without the lock timeout: an error then belongs
 * to the request that caused it and its neighbours commit. Any other failure
 * (the connection lost, so the commit is unknown) is answered as an error to
 * every track of the batch and never retried, so nothing is written twice.
 */
@Injectable()
export class TrackWriter {
  private readonly logger = new Logger(TrackWriter.name);
  private queue: Waiting[] = [];
  private batchesInFlight = 0;
  private readonly retries: Waiting[] = [];
  private retriesInFlight = 0;
  /** Contacts (project + email) being written by a statement in flight or waiting for a retry. */
  private readonly writing = new Set<string>();

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly repository: TrackRepository,
  ) {}

  write(write: TrackWrite): Promise<TrackedRow> {
    return new Promise<TrackedRow>((resolve, reject) => {
      this.queue.push({ write, key: `${write.projectId}\n${write.email}`, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.batchesInFlight < MAX_TRACK_BATCHES_IN_FLIGHT && this.queue.length > 0) {
      const batch = this.takeBatch();
      if (batch.length === 0) return; // every waiting contact is being written; its settling pumps again
      for (const waiting of batch) this.writing.add(waiting.key);
      this.batchesInFlight++;
      void this.writeBatch(batch);
    }
  }

  /**
   * Up to MAX_TRACK_BATCH waiting tracks, oldest first, for distinct contacts
   * none of which is being written; the rest keep their order.
   */
  private takeBatch(): Waiting[] {
    const batch: Waiting[] = [];
    const skipped: Waiting[] = [];
    const seen = new Set<string>();
    let index = 0;
    for (; index < this.queue.length && batch.length < MAX_TRACK_BATCH; index++) {
      const waiting = this.queue[index];
      if (seen.has(waiting.key) || this.writing.has(waiting.key)) skipped.push(waiting);
      else batch.push(waiting);
      seen.add(waiting.key); // a later track of a skipped contact must not overtake it
    }
    this.queue = index === this.queue.length ? skipped : skipped.concat(this.queue.slice(index));
    return batch;
  }

  private async writeBatch(batch: Waiting[]): Promise<void> {
    let rows: TrackedRow[] | undefined;
    let failure: unknown;
    try {
      rows = await this.repository.upsertContactsAndInsertEvents(
        this.dataSource.manager,
        batch.map((waiting) => waiting.write),
      );
    } catch (error) {
      failure = error;
    }
    this.batchesInFlight--;
    if (rows) {
      batch.forEach((waiting, index) => this.settle(waiting, () => waiting.resolve(rows[index])));
    } else if (rolledBack(failure)) {
      this.logger.warn(
        `a batch of ${batch.length} tracks failed (SQLSTATE ${failure.driverError.code}); writing them one at a time`,
      );
      this.retries.push(...batch);
      this.pumpRetries();
    } else {
      this.logger.error(
        `a batch of ${batch.length} tracks failed with its commit unknown: ${describe(failure)}`,
      );
      for (const waiting of batch) this.settle(waiting, () => waiting.reject(failure));
    }
    this.pump();
  }

  private pumpRetries(): void {
    while (this.retriesInFlight < MAX_TRACK_RETRIES_IN_FLIGHT && this.retries.length > 0) {
      const waiting = this.retries.shift() as Waiting;
      this.retriesInFlight++;
      void this.repository
        .upsertContactAndInsertEvent(this.dataSource.manager, waiting.write)
        .then(
          (row) => this.settle(waiting, () => waiting.resolve(row)),
          (error: unknown) => this.settle(waiting, () => waiting.reject(error)),
        )
        .finally(() => {
          this.retriesInFlight--;
          this.pumpRetries();
          this.pump();
        });
    }
  }

  /** Answers one track and frees its contact for the tracks queued behind it. */
  private settle(waiting: Waiting, answer: () => void): void {
    this.writing.delete(waiting.key);
    answer();
  }
}

/** An error Postgres itself reported for the statement: it was rolled back, so retrying writes nothing twice. */
function rolledBack(error: unknown): error is QueryFailedError & { driverError: DatabaseError } {
  return error instanceof QueryFailedError && error.driverError instanceof DatabaseError;
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : 'unknown error';
}
