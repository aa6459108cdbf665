import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { EventHooks, RecordedEvent } from './event-hooks';
import type { EventRow } from './event.view';
import { EventsRepository, NewEvent } from './events.repository';

/**
 * Records events. `record` and `recordMany` run inside the caller's
 * transaction (pass its EntityManager); after that transaction commits, the
 * caller hands the rows to `publish` so listeners (workflows) see only
 * committed events.
 */
@Injectable()
export class EventsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
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

  /** Call after commit. Never throws: listener failures are logged by EventHooks. */
  async publish(events: RecordedEvent[]): Promise<void> {
    await this.hooks.emit(events);
  }

  /** For callers without a transaction of their own. */
  get manager(): EntityManager {
    return this.dataSource.manager;
  }
}
