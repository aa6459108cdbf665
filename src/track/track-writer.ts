import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DatabaseError } from 'pg';
import { QueryFailedError, type DataSource } from 'typeorm';
import { ItemAnswer, MicroBatcher } from '../common/concurrency/micro-batcher';
import { Semaphore } from '../common/concurrency/semaphore';
import { sqlState, SQLSTATE } from '../database/postgres-errors';
import { TrackRepository, type TrackedRow, type TrackWrite } from './track.repository';

/** Most tracks one statement carries. */
export const MAX_TRACK_BATCH = 100;
/** Most batch statements in flight at once (2 measured best; see docs/contacts-events.md). */
export const MAX_TRACK_BATCHES_IN_FLIGHT = 2;
/** Most one-at-a-time retries in flight per lane (they may wait on locks, so they get few connections). */
export const MAX_TRACK_RETRIES_IN_FLIGHT = 4;

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
 * else's track (MicroBatcher holds a contact until its track is answered,
 * so the contact's later tracks wait behind it). Any other failure (the
 * connection lost, so the commit is unknown) is answered as an error to
 * every track of the batch and never retried, so nothing is written twice.
 */
@Injectable()
export class TrackWriter {
  private readonly logger = new Logger(TrackWriter.name);
  private readonly batcher = new MicroBatcher<TrackWrite, TrackedRow>(
    {
      maxBatch: MAX_TRACK_BATCH,
      maxInFlight: MAX_TRACK_BATCHES_IN_FLIGHT,
      start: 'now',
      // Tracks of one contact, one statement after another, in arrival order.
      keyOf: (write) => `${write.projectId}\n${write.email}`,
      holdKeys: true,
    },
    (writes) => this.writeBatch(writes),
  );
  /** Tracks of failed batches, retried one at a time under the lock timeout. */
  private readonly alone = new Semaphore(MAX_TRACK_RETRIES_IN_FLIGHT);
  /** Tracks whose contact stayed locked, written without the timeout. */
  private readonly patient = new Semaphore(MAX_TRACK_RETRIES_IN_FLIGHT);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly repository: TrackRepository,
  ) {}

  write(write: TrackWrite): Promise<TrackedRow> {
    return this.batcher.submit(write);
  }

  /** One statement for the batch; when Postgres refused it (nothing written), each track's retry alone. */
  private async writeBatch(writes: TrackWrite[]): Promise<ItemAnswer<TrackedRow>[]> {
    try {
      return await this.repository.upsertContactsAndInsertEvents(this.dataSource.manager, writes);
    } catch (error) {
      if (!rolledBack(error)) {
        this.logger.error(
          `a batch of ${writes.length} tracks failed with its commit unknown: ${describe(error)}`,
        );
        throw error;
      }
      this.logger.warn(
        `a batch of ${writes.length} tracks failed (SQLSTATE ${error.driverError.code}); writing them one at a time`,
      );
      return writes.map((write) => this.writeAlone(write));
    }
  }

  /**
   * One track of a failed batch, alone but still under the 100 ms lock
   * timeout, so a batch-mate's locked contact delays no one. A lock timeout
   * now means this contact is busy: it waits in the patient lane (without
   * holding a place in this one).
   */
  private async writeAlone(write: TrackWrite): Promise<TrackedRow> {
    try {
      return await this.alone.run(async () => {
        const [row] = await this.repository.upsertContactsAndInsertEvents(this.dataSource.manager, [
          write,
        ]);
        return row;
      });
    } catch (error) {
      if (!(rolledBack(error) && sqlState(error) === SQLSTATE.LOCK_NOT_AVAILABLE)) throw error;
      // Without a lock timeout, as a lone track always was.
      return this.patient.run(() =>
        this.repository.upsertContactAndInsertEvent(this.dataSource.manager, write),
      );
    }
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
