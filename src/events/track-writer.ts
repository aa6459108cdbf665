import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { TrackRepository, type TrackedRow, type TrackWrite } from './track.repository';

/** Most tracks one statement carries. */
export const MAX_TRACK_BATCH = 100;
/** Most batch statements in flight at once (of the pool's 20 connections; 2 measured best, see docs/contacts-events.md). */
export const MAX_TRACK_BATCHES_IN_FLIGHT = 2;

interface Waiting {
  write: TrackWrite;
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
 * one (and no statement updates a row twice). If a batch
 * statement fails, its tracks are retried one by one, so a failure belongs to
 * the request that caused it and never to its neighbours.
 */
@Injectable()
export class TrackWriter {
  private readonly logger = new Logger(TrackWriter.name);
  private queue: Waiting[] = [];
  private inFlight = 0;
  /** Contacts (project + email) being written by a statement in flight. */
  private readonly writing = new Set<string>();

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly repository: TrackRepository,
  ) {}

  write(write: TrackWrite): Promise<TrackedRow> {
    return new Promise<TrackedRow>((resolve, reject) => {
      this.queue.push({ write, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < MAX_TRACK_BATCHES_IN_FLIGHT && this.queue.length > 0) {
      const batch = this.takeBatch();
      if (batch.length === 0) return; // every waiting contact is being written; a commit pumps again
      const keys = batch.map((waiting) => contactKey(waiting.write));
      for (const key of keys) this.writing.add(key);
      this.inFlight++;
      void this.flush(batch).finally(() => {
        for (const key of keys) this.writing.delete(key);
        this.inFlight--;
        this.pump();
      });
    }
  }

  /**
   * Up to MAX_TRACK_BATCH waiting tracks, oldest first, for distinct contacts
   * none of which a statement in flight is writing; the rest keep their order.
   */
  private takeBatch(): Waiting[] {
    const batch: Waiting[] = [];
    const rest: Waiting[] = [];
    const keys = new Set<string>();
    for (const waiting of this.queue) {
      const key = contactKey(waiting.write);
      if (batch.length < MAX_TRACK_BATCH && !keys.has(key) && !this.writing.has(key)) {
        keys.add(key);
        batch.push(waiting);
      } else {
        keys.add(key); // a later track of a skipped contact must not overtake it
        rest.push(waiting);
      }
    }
    this.queue = rest;
    return batch;
  }

  private async flush(batch: Waiting[]): Promise<void> {
    if (batch.length === 1) return this.writeOne(batch[0]);
    let rows: TrackedRow[];
    try {
      rows = await this.repository.upsertContactsAndInsertEvents(
        this.dataSource.manager,
        batch.map((waiting) => waiting.write),
      );
    } catch (error) {
      this.logger.warn(
        `a batch of ${batch.length} tracks failed (${describe(error)}); writing them one by one`,
      );
      await Promise.all(batch.map((waiting) => this.writeOne(waiting)));
      return;
    }
    batch.forEach((waiting, index) => waiting.resolve(rows[index]));
  }

  private async writeOne(waiting: Waiting): Promise<void> {
    try {
      waiting.resolve(
        await this.repository.upsertContactAndInsertEvent(this.dataSource.manager, waiting.write),
      );
    } catch (error) {
      waiting.reject(error);
    }
  }
}

function contactKey(write: TrackWrite): string {
  return `${write.projectId}\n${write.email}`;
}

function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string'
    ? `SQLSTATE ${code}`
    : error instanceof Error
      ? error.name
      : 'error';
}
