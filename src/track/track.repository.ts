import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { DataPatch } from '../contacts/contact-data';
import { contactUpsertInput } from '../contacts/contact-upsert';
import { newId } from '../database/id';
import { queryRows } from '../database/query-rows';

export interface TrackedRow {
  contactId: string;
  email: string;
  eventId: string;
  createdAt: Date;
}

/** One track of the common path: a contact (by normalised email) and the event to record for it. */
export interface TrackWrite {
  projectId: string;
  email: string;
  patch: DataPatch;
  event: { name: string; data: Record<string, unknown> };
}

const TRACKED_COLUMNS = 'ord, "contactId", email, "eventId", "createdAt"';

/**
 * The SQL functions of migration ContactUpsertRule: `record_tracks` upserts
 * the contacts with `upsert_contacts` (the contact rule every writer shares)
 * and inserts the events, in one statement; `track_contacts_and_events` runs
 * it under a 100 ms lock_timeout.
 */
const TRACK_CONTACTS_AND_EVENTS = `SELECT ${TRACKED_COLUMNS} FROM track_contacts_and_events($1::jsonb)`;
const RECORD_TRACKS = `SELECT ${TRACKED_COLUMNS} FROM record_tracks($1::jsonb)`;

/** A batch statement committed but did not answer for every track: nothing about it may be retried. */
export class TrackBatchMismatchError extends Error {
  constructor(rows: number, writes: number) {
    super(`a track batch committed ${rows} rows for ${writes} writes`);
    this.name = 'TrackBatchMismatchError';
  }
}

/**
 * The statements of POST /v1/track when `subscribed` is not given: the
 * contact upsert (the rule of ContactsService.upsertByEmail) and the event
 * insert as ONE statement. A single statement is atomic on its own, so it is
 * the same transaction in one round trip instead of four (BEGIN, upsert,
 * insert, COMMIT).
 */
@Injectable()
export class TrackRepository {
  /**
   * Many tracks, one statement (so one transaction): the rows come back in the
   * order of `writes`. The caller guarantees distinct (projectId, email) pairs;
   * the statement would fail on a repeated one (a row cannot be updated twice).
   * Fails with SQLSTATE 55P03 when a contact stays locked by another
   * transaction for 100 ms (nothing is written then).
   */
  upsertContactsAndInsertEvents(
    manager: EntityManager,
    writes: TrackWrite[],
  ): Promise<TrackedRow[]> {
    return this.record(manager, TRACK_CONTACTS_AND_EVENTS, writes);
  }

  /** One track, waiting for its contact's lock as long as it takes (no lock timeout). */
  async upsertContactAndInsertEvent(
    manager: EntityManager,
    write: TrackWrite,
  ): Promise<TrackedRow> {
    const [row] = await this.record(manager, RECORD_TRACKS, [write]);
    return row;
  }

  private async record(
    manager: EntityManager,
    statement: string,
    writes: TrackWrite[],
  ): Promise<TrackedRow[]> {
    const input = writes.map((write, ord) => ({
      ...contactUpsertInput(ord, {
        projectId: write.projectId,
        email: write.email,
        patch: write.patch,
        subscribed: null,
        subscribedIfNew: true,
      }),
      event_id: newId(),
      name: write.event.name,
      event_data: write.event.data,
    }));
    const rows = await queryRows<TrackedRow & { ord: number }>(manager, statement, [
      JSON.stringify(input),
    ]);
    if (rows.length !== writes.length)
      throw new TrackBatchMismatchError(rows.length, writes.length);
    const result = new Array<TrackedRow>(writes.length);
    for (const { ord, ...row } of rows) result[ord] = row;
    return result;
  }
}
