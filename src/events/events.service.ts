import { EventsPerMinuteResponse } from './dto/events-per-minute';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { keysetPage, type Page, type PaginationQueryDto } from '../common/pagination/pagination';
import { EventNameResponse, toEventNameResponse } from './dto/event-name.response';
import { EventResponse, toEventResponse } from './dto/event.response';
import type { ListEventsQueryDto } from './dto/list-events.query';
import {
  decodeEventCursor,
  decodeNameCursor,
  encodeEventCursor,
  encodeNameCursor,
} from './event-cursors';
import { EventHooks, RecordedEvent } from './event-hooks';
import type { EventRow } from './event.row';
import { EventsRepository, NewEvent } from './events.repository';
import { ReadDatabase } from '../database/read-database';

/**
 * Records and lists events. `record` and `recordMany` run inside the caller's
 * transaction (pass its EntityManager); after that transaction commits, the
 * caller hands the rows to `publish` so listeners (workflows) see only
 * committed events.
 */
@Injectable()
export class EventsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    /** Reads that tolerate lag: list pages (docs/scaling.md). */
    private readonly read: ReadDatabase,
    private readonly events: EventsRepository,
    private readonly hooks: EventHooks,
  ) {}

  /** One event (system events: email.queued, email.sent, contact.unsubscribed, ...). */
  async record(manager: EntityManager, event: NewEvent): Promise<EventRow> {
    const [row] = await this.events.insert(manager, [event]);
    return row;
  }

  /** Several events in one statement, in the given order. */
  async recordMany(manager: EntityManager, events: NewEvent[]): Promise<EventRow[]> {
    return this.events.insert(manager, events);
  }

  /** The name of one event (a workflow execution's trigger), or null when it is gone. */
  async nameOf(manager: EntityManager, id: string): Promise<string | null> {
    return (await this.namesOf(manager, [id])).get(id) ?? null;
  }

  /** The names of these events, by id (those gone are missing). */
  namesOf(manager: EntityManager, ids: string[]): Promise<Map<string, string>> {
    return ids.length > 0 ? this.events.namesOf(manager, ids) : Promise.resolve(new Map());
  }

  /** Call after commit. Never throws: listener failures are logged by EventHooks. */
  async publish(events: RecordedEvent[]): Promise<void> {
    await this.hooks.emit(events);
  }

  async list(projectId: string, query: ListEventsQueryDto): Promise<Page<EventResponse>> {
    const limit = query.limit ?? 20;
    const after = query.cursor ? decodeEventCursor(query.cursor) : null;
    const { rows, total } = await this.events.list(
      this.read.manager,
      projectId,
      { name: query.name, contactId: query.contactId, since: query.since, until: query.until },
      after,
      limit,
    );
    return keysetPage(rows, limit, total, toEventResponse, (last) =>
      encodeEventCursor({ micros: last.micros, id: last.id }),
    );
  }

  /** GET /events/per-minute: the dashboard's live figure, one point a minute, zeros filled in. */
  async perMinute(projectId: string, minutes = 60): Promise<EventsPerMinuteResponse> {
    const { start, counts } = await this.events.perMinute(
      this.dataSource.manager,
      projectId,
      minutes,
    );
    const byMinute = new Map(counts.map((c) => [c.minute.getTime(), c.count]));
    const points = Array.from({ length: minutes }, (_, i) => {
      const at = start.getTime() + i * 60_000;
      return { minute: new Date(at).toISOString(), count: byMinute.get(at) ?? 0 };
    });
    return { minutes, points };
  }

  async names(projectId: string, query: PaginationQueryDto): Promise<Page<EventNameResponse>> {
    const limit = query.limit ?? 20;
    const after = query.cursor ? decodeNameCursor(query.cursor) : null;
    const { rows, total } = await this.events.names(this.read.manager, projectId, after, limit);
    return keysetPage(rows, limit, total, toEventNameResponse, (last) =>
      encodeNameCursor({ micros: last.micros, name: last.name }),
    );
  }
}
