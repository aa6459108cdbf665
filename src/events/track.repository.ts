import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { DataPatch } from '../contacts/contact-data';
import { queryRows } from '../contacts/query-rows';
import { newId } from '../database/id';

export interface TrackedRow {
  contactId: string;
  email: string;
  eventId: string;
  createdAt: Date;
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
    projectId: string,
    email: string,
    patch: DataPatch,
    event: { name: string; data: Record<string, unknown> },
  ): Promise<TrackedRow> {
    const rows = await queryRows<TrackedRow>(manager, UPSERT_CONTACT_AND_INSERT_EVENT, [
      newId(),
      projectId,
      email,
      JSON.stringify(patch.set),
      patch.remove,
      newId(),
      event.name,
      JSON.stringify(event.data),
    ]);
    return rows[0];
  }
}
