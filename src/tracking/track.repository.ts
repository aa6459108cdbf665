import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { DataPatch } from '../contacts/contact-data';
import { queryRows } from '../database/query-rows';
import { newId } from '../database/id';

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

/**
 * $1 contact id, $2 project id, $3 email, $4 data to merge, $5 keys to remove,
 * $6 event id, $7 event name, $8 event data. Exported for the baseline of
 * bench/track.js, which times this very statement without the service around it.
 */
export const UPSERT_CONTACT_AND_INSERT_EVENT = `WITH c AS (
    INSERT INTO contacts AS c (id, project_id, email, subscribed, suppressed, data, created_at, updated_at)
    VALUES ($1, $2, $3, true, false, $4::jsonb, now(), now())
    ON CONFLICT (project_id, email) DO UPDATE
      SET data = (c.data || $4::jsonb) - $5::text[], updated_at = now()
    RETURNING c.id, c.email
  ), e AS (
    INSERT INTO events (id, project_id, contact_id, email_id, name, data, created_at)
    SELECT $6, $2, c.id, NULL, $7, $8::jsonb, now() FROM c
    RETURNING id, created_at
  )
  SELECT c.id AS "contactId", c.email, e.id AS "eventId", e.created_at AS "createdAt" FROM c, e`;

/**
 * The same work for many tracks in one statement: the function
 * `track_contacts_and_events` (migration TrackBatches, which documents it)
 * holds the multi-row upsert + insert and runs it under a 100 ms lock_timeout.
 */
const TRACK_CONTACTS_AND_EVENTS = `SELECT * FROM track_contacts_and_events($1::jsonb)`;

/** A batch statement committed but did not answer for every track: nothing about it may be retried. */
export class TrackBatchMismatchError extends Error {
  constructor(rows: number, writes: number) {
    super(`a track batch committed ${rows} rows for ${writes} writes`);
    this.name = 'TrackBatchMismatchError';
  }
}

/**
 * The hot path of POST /v1/track when `subscribed` is not given: the contact
 * upsert (the same INSERT ... ON CONFLICT (project_id, email) DO UPDATE as
 * ContactsService.upsertByEmail) and the event insert as ONE statement. A
 * single statement is atomic on its own, so this is the same transaction in
 * one round trip instead of four (BEGIN, upsert, insert, COMMIT).
 */
@Injectable()
export class TrackRepository {
  async upsertContactAndInsertEvent(
    manager: EntityManager,
    write: TrackWrite,
  ): Promise<TrackedRow> {
    const rows = await queryRows<TrackedRow>(manager, UPSERT_CONTACT_AND_INSERT_EVENT, [
      newId(),
      write.projectId,
      write.email,
      JSON.stringify(write.patch.set),
      write.patch.remove,
      newId(),
      write.event.name,
      JSON.stringify(write.event.data),
    ]);
    return rows[0];
  }

  /**
   * Many tracks, one statement (so one transaction): the rows come back in the
   * order of `writes`. The caller guarantees distinct (projectId, email) pairs;
   * the statement would fail on a repeated one (a row cannot be updated twice).
   * Fails with SQLSTATE 55P03 when a contact stays locked by another
   * transaction for 100 ms (nothing is written then).
   */
  async upsertContactsAndInsertEvents(
    manager: EntityManager,
    writes: TrackWrite[],
  ): Promise<TrackedRow[]> {
    const input = writes.map((write, ord) => ({
      ord,
      contact_id: newId(),
      project_id: write.projectId,
      email: write.email,
      set_data: write.patch.set,
      remove_keys: write.patch.remove,
      event_id: newId(),
      name: write.event.name,
      event_data: write.event.data,
    }));
    const rows = await queryRows<TrackedRow & { ord: number }>(manager, TRACK_CONTACTS_AND_EVENTS, [
      JSON.stringify(input),
    ]);
    if (rows.length !== writes.length)
      throw new TrackBatchMismatchError(rows.length, writes.length);
    const result = new Array<TrackedRow>(writes.length);
    for (const { ord, ...row } of rows) result[ord] = row;
    return result;
  }
}
