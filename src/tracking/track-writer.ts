import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DatabaseError } from 'pg';
import { QueryFailedError, type DataSource } from 'typeorm';
import { sqlState, SQLSTATE } from '../database/postgres-errors';
import { TrackRepository, type TrackedRow, type TrackWrite } from './track.repository';

/** Most tracks one statement carries. */
export const MAX_TRACK_BATCH = 100;
/** Most batch statements in flight at once (2 measured best; see docs/contacts-events.md). */
export const MAX_TRACK_BATCHES_IN_FLIGHT = 2;
/** Most one-at-a-time retries in flight per lane (they may wait on locks, so they get few connections). */
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
 * outside the batch slots and still under the lock timeout, so an error then
 * belongs to the request that caused it and its neighbours commit; a track
 * that times out alone has a busy contact and is written once more without
 * the timeout, in a lane of its own, so it waits without holding up anyone
 * else's track. Any other failure (the connection lost, so the commit is
 * unknown) is answered as an error to every track of the batch and never
 * retried, so nothing is written twice.
 */
@Injectable()
export class TrackWriter {
  private readonly logger = new Logger(TrackWriter.name);
  private queue: Waiting[] = [];
  private batchesInFlight = 0;
  /** Tracks of failed batches, retried one at a time under the lock timeout. */
  private readonly alone = new Lane(
    MAX_TRACK_RETRIES_IN_FLIGHT,
    (w) => this.writeAlone(w),
    () => this.pump(),
  );
  /** Tracks whose contact stayed locked, written without the timeout. */
  private readonly patient = new Lane(
    MAX_TRACK_RETRIES_IN_FLIGHT,
    (w) => this.writePatiently(w),
    () => this.pump(),
  );
  /** Contacts (project + email) being written by a statement in flight or waiting in a lane. */
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
      this.alone.push(batch);
      this.logger.warn(
        `a batch of ${batch.length} tracks failed (SQLSTATE ${failure.driverError.code}); writing them one at a time`,
      );
    } else {
      for (const waiting of batch) this.settle(waiting, () => waiting.reject(failure));
      this.logger.error(
        `a batch of ${batch.length} tracks failed with its commit unknown: ${describe(failure)}`,
      );
    }
    this.pump();
  }

  /**
   * One track of a failed batch, alone but still under the 100 ms lock
   * timeout, so a batch-mate's locked contact delays no one. A lock timeout
   * now means this contact is busy: it waits in the patient lane.
   */
  private async writeAlone(waiting: Waiting): Promise<void> {
    try {
      const [row] = await this.repository.upsertContactsAndInsertEvents(this.dataSource.manager, [
        waiting.write,
      ]);
      this.settle(waiting, () => waiting.resolve(row));
    } catch (error) {
      if (rolledBack(error) && sqlState(error) === SQLSTATE.LOCK_NOT_AVAILABLE)
        this.patient.push([waiting]);
      else this.settle(waiting, () => waiting.reject(error));
    }
  }

  /** A track whose contact stayed locked: written without a lock timeout, as a lone track always was. */
  private async writePatiently(waiting: Waiting): Promise<void> {
    try {
      const row = await this.repository.upsertContactAndInsertEvent(
        this.dataSource.manager,
        waiting.write,
      );
      this.settle(waiting, () => waiting.resolve(row));
    } catch (error) {
      this.settle(waiting, () => waiting.reject(error));
    }
  }

  /** Answers one track and frees its contact for the tracks queued behind it. */
  private settle(waiting: Waiting, answer: () => void): void {
    this.writing.delete(waiting.key);
    answer();
  }
}

/** An ERROR Postgres itself reported for the statement: it was rolled back, so retrying writes nothing twice. */
function rolledBack(error: unknown): error is QueryFailedError & { driverError: DatabaseError } {
  return (
    error instanceof QueryFailedError &&
    error.driverError instanceof DatabaseError &&
    error.driverError.severity === 'ERROR'
  );
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : 'unknown error';
}

/** A FIFO of one-track writes, at most `limit` at once; `run` settles its track and never rejects. */
class Lane {
  private readonly waiting: Waiting[] = [];
  private running = 0;

  constructor(
    private readonly limit: number,
    private readonly run: (waiting: Waiting) => Promise<void>,
    private readonly onSettled: () => void,
  ) {}

  push(items: Waiting[]): void {
    this.waiting.push(...items);
    this.next();
  }

  private next(): void {
    while (this.running < this.limit && this.waiting.length > 0) {
      const item = this.waiting.shift() as Waiting;
      this.running++;
      void this.run(item).finally(() => {
        this.running--;
        this.next();
        this.onSettled();
      });
    }
  }
}
