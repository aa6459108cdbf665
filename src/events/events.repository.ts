import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { queryRows } from '../database/query-rows';
import { idTimeRange, newId } from '../database/id';
import type { EventRow } from './event.row';
import { microsOf, timeOfMicros } from '../database/micros';

export interface NewEvent {
  projectId: string;
  /** null for a project-level event (`campaign.started`). */
  contactId: string | null;
  name: string;
  data?: Record<string, unknown>;
  emailId?: string | null;
}

export const EVENT_COLUMNS = `e.id, e.project_id AS "projectId", e.contact_id AS "contactId", e.email_id AS "emailId",
  e.name, e.data, e.created_at AS "createdAt"`;

export interface EventListFilter {
  name?: string;
  contactId?: string;
  since?: string;
  until?: string;
}

export type EventPageRow = EventRow & { micros: string };

export interface EventNameRow {
  name: string;
  count: string;
  lastSeenAt: Date;
  micros: string;
}

/** Microseconds since the epoch as exact text, and back. */
const MICROS = microsOf;
const FROM_MICROS = timeOfMicros;

/** The columns an event INSERT writes, in the order of eventValues. */
const INSERT_COLUMNS = 'id, project_id, contact_id, email_id, name, data, created_at';

/** One event's parameters (a fresh UUIDv7 id first), for the placeholders of eventPlaceholders. */
function eventValues(event: NewEvent): unknown[] {
  return [
    newId(),
    event.projectId,
    event.contactId,
    event.emailId ?? null,
    event.name,
    JSON.stringify(event.data ?? {}),
  ];
}

/** The six placeholders of one event from `$first` on, and created_at. */
function eventPlaceholders(first: number): string {
  const p = (i: number) => `$${first + i}`;
  return `${p(0)}::uuid, ${p(1)}::uuid, ${p(2)}::uuid, ${p(3)}::uuid, ${p(4)}, ${p(5)}::jsonb, now()`;
}

/**
 * An event INSERT for a statement of another aggregate that records its
 * event in the same statement: `WITH <source> AS (UPDATE … RETURNING …)`
 * followed by this. The event is written once per row `source` answers
 * (none: no event). One statement is one transaction, so the change and its
 * event commit together in one round trip (delivery's finish). Its
 * parameters are numbered from `$first`; it answers EVENT_COLUMNS.
 */
export function insertEventFrom(
  source: string,
  first: number,
  event: NewEvent,
): { sql: string; params: unknown[] } {
  return {
    sql: `INSERT INTO events AS e (${INSERT_COLUMNS})
       SELECT ${eventPlaceholders(first)} FROM ${source}
       RETURNING ${EVENT_COLUMNS}`,
    params: eventValues(event),
  };
}

/** Every SQL statement on `events` and `event_name_stats`. */
@Injectable()
export class EventsRepository {
  /** Inserts one or more events in one statement; ids are UUIDv7 in input order. */
  async insert(manager: EntityManager, events: NewEvent[]): Promise<EventRow[]> {
    if (events.length === 0) return [];
    const params: unknown[] = [];
    const tuples = events.map((event) => {
      const first = params.length + 1;
      params.push(...eventValues(event));
      return `(${eventPlaceholders(first)})`;
    });
    const rows = await queryRows<EventRow>(
      manager,
      `INSERT INTO events AS e (${INSERT_COLUMNS})
       VALUES ${tuples.join(', ')}
       RETURNING ${EVENT_COLUMNS}`,
      params,
    );
    // Ids were generated in input order (UUIDv7 is monotonic), so sorting restores it.
    return rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** The name of one event, or null when it is gone (erased with its contact). */
  async namesOf(manager: EntityManager, ids: string[]): Promise<Map<string, string>> {
    const rows = await queryRows<{ id: string; name: string }>(
      manager,
      // The months from the oldest id's to the newest's only (migration IdTimeRange).
      `SELECT id, name FROM events WHERE id = ANY($1::uuid[]) AND ${idTimeRange('created_at', '$1::uuid[]')}`,
      [ids],
    );
    return new Map(rows.map((r) => [r.id, r.name]));
  }

  /**
   * GET /events: newest first by (created_at, id), keyset on both. Served by
   * (project_id, created_at), (project_id, name, created_at) and
   * (contact_id, created_at). `total` comes from event_name_stats (its
   * months and shards summed) when only `name` (or nothing) filters, so it
   * costs nothing at ten million events.
   */
  async list(
    manager: EntityManager,
    projectId: string,
    filter: EventListFilter,
    after: { micros: string; id: string } | null,
    limit: number,
  ): Promise<{ rows: EventPageRow[]; total: number }> {
    const params: unknown[] = [projectId];
    const where = ['e.project_id = $1'];
    const add = (sql: (p: string) => string, value: unknown) => {
      params.push(value);
      where.push(sql(`$${params.length}`));
    };
    if (filter.name !== undefined) add((p) => `e.name = ${p}`, filter.name);
    if (filter.contactId !== undefined) add((p) => `e.contact_id = ${p}`, filter.contactId);
    if (filter.since !== undefined) add((p) => `e.created_at >= ${p}::timestamptz`, filter.since);
    if (filter.until !== undefined) add((p) => `e.created_at < ${p}::timestamptz`, filter.until);

    const fromStats =
      filter.contactId === undefined && filter.since === undefined && filter.until === undefined;
    const totalRows = fromStats
      ? await queryRows<{ total: number }>(
          manager,
          `SELECT COALESCE(sum(count), 0)::bigint AS total FROM event_name_stats
           WHERE project_id = $1 ${filter.name !== undefined ? 'AND name = $2' : ''}`,
          filter.name !== undefined ? [projectId, filter.name] : [projectId],
        )
      : await queryRows<{ total: number }>(
          manager,
          `SELECT count(*)::int AS total FROM events e WHERE ${where.join(' AND ')}`,
          params,
        );

    const pageParams = [...params];
    const pageWhere = [...where];
    if (after) {
      pageParams.push(after.micros, after.id);
      const t = FROM_MICROS(`$${pageParams.length - 1}`);
      pageWhere.push(
        `e.created_at <= ${t} AND (e.created_at, e.id) < (${t}, $${pageParams.length}::uuid)`,
      );
    }
    pageParams.push(limit + 1);
    const rows = await queryRows<EventPageRow>(
      manager,
      `SELECT ${EVENT_COLUMNS}, ${MICROS('e.created_at')} AS micros
       FROM events e WHERE ${pageWhere.join(' AND ')}
       ORDER BY e.created_at DESC, e.id DESC LIMIT $${pageParams.length}`,
      pageParams,
    );
    // bigint arrives as a string from pg.
    return { rows, total: Number(totalRows[0].total) };
  }

  /**
   * GET /events/per-minute: events of the last `minutes` minutes (the current one included) by
   * minute, from a range scan of (project_id, created_at); minutes without events are absent.
   */
  async perMinute(
    manager: EntityManager,
    projectId: string,
    minutes: number,
  ): Promise<{ start: Date; counts: { minute: Date; count: number }[] }> {
    const [bounds] = await queryRows<{ start: Date }>(
      manager,
      `SELECT date_trunc('minute', now()) - make_interval(mins => $1 - 1) AS start`,
      [minutes],
    );
    const counts = await queryRows<{ minute: Date; count: number }>(
      manager,
      `SELECT date_trunc('minute', created_at) AS minute, count(*)::int AS count
         FROM events
        WHERE project_id = $1 AND created_at >= $2
        GROUP BY 1 ORDER BY 1`,
      [projectId, bounds.start],
    );
    return { start: bounds.start, counts };
  }

  /** GET /events/names: running totals over every month kept, most recently seen first, then by name. */
  async names(
    manager: EntityManager,
    projectId: string,
    after: { micros: string; name: string } | null,
    limit: number,
  ): Promise<{ rows: EventNameRow[]; total: number }> {
    const grouped = `SELECT name, sum(count) AS count, max(last_seen_at) AS last_seen_at
      FROM event_name_stats WHERE project_id = $1 GROUP BY name HAVING sum(count) > 0`;
    const [{ total }] = await queryRows<{ total: number }>(
      manager,
      `SELECT count(*)::int AS total FROM (${grouped}) g`,
      [projectId],
    );
    const params: unknown[] = [projectId];
    let keyset = '';
    if (after) {
      params.push(after.micros, after.name);
      const t = FROM_MICROS('$2');
      keyset = `WHERE g.last_seen_at < ${t} OR (g.last_seen_at = ${t} AND g.name > $3)`;
    }
    params.push(limit + 1);
    const rows = await queryRows<EventNameRow>(
      manager,
      `SELECT g.name, g.count::text AS count, g.last_seen_at AS "lastSeenAt", ${MICROS('g.last_seen_at')} AS micros
       FROM (${grouped}) g ${keyset}
       ORDER BY g.last_seen_at DESC, g.name ASC LIMIT $${params.length}`,
      params,
    );
    return { rows, total };
  }
}
