import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { queryRows } from '../contacts/query-rows';
import { newId } from '../database/id';
import type { EventRow } from './event.view';

export interface NewEvent {
  projectId: string;
  contactId: string;
  name: string;
  data?: Record<string, unknown>;
  emailId?: string | null;
}

export const EVENT_COLUMNS = `e.id, e.project_id AS "projectId", e.contact_id AS "contactId", e.email_id AS "emailId",
  e.name, e.data, e.created_at AS "createdAt"`;

/** Every SQL statement on `events` and `event_name_stats`. */
@Injectable()
export class EventsRepository {
  /** Inserts one or more events in one statement; ids are UUIDv7 in input order. */
  async insert(manager: EntityManager, events: NewEvent[]): Promise<EventRow[]> {
    if (events.length === 0) return [];
    const params: unknown[] = [];
    const tuples = events.map((event) => {
      params.push(newId(), event.projectId, event.contactId, event.emailId ?? null, event.name, JSON.stringify(event.data ?? {}));
      const n = params.length;
      return `($${n - 5}::uuid, $${n - 4}::uuid, $${n - 3}::uuid, $${n - 2}::uuid, $${n - 1}, $${n}::jsonb, now())`;
    });
    const rows = await queryRows<EventRow>(
      manager,
      `INSERT INTO events AS e (id, project_id, contact_id, email_id, name, data, created_at)
       VALUES ${tuples.join(', ')}
       RETURNING ${EVENT_COLUMNS}`,
      params,
    );
    // Ids were generated in input order (UUIDv7 is monotonic), so sorting restores it.
    return rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }
}
