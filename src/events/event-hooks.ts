import { Injectable, Logger } from '@nestjs/common';
import type { EventRow } from './event.row';

/** What a listener receives: a committed event and the contact it belongs to. */
export interface RecordedEvent extends EventRow {
  /** The contact's email at the time of recording; null for project events (`campaign.*`). */
  email: string | null;
}

/**
 * Implemented by features that react to events (workflows: "a tracked event
 * that matches an enabled workflow's trigger starts an execution"). The
 * publisher (an API request) waits for it: return once the events are filed,
 * and do the work after (AfterCommitDispatcher does).
 */
export interface EventRecordedListener {
  onEventsRecorded(events: RecordedEvent[]): Promise<void> | void;
}

/**
 * In-process hook for events, called only after the transaction that recorded
 * them has committed (EventsService.publish). Listeners register once at boot
 * (`onModuleInit() { hooks.register(this) }`). A failing listener is logged and
 * does not affect the caller or the other listeners; listeners that need
 * durability should enqueue a job rather than do the work inline.
 */
@Injectable()
export class EventHooks {
  private readonly logger = new Logger(EventHooks.name);
  private readonly listeners: EventRecordedListener[] = [];

  register(listener: EventRecordedListener): () => void {
    this.listeners.push(listener);
    return () => {
      const index = this.listeners.indexOf(listener);
      if (index >= 0) this.listeners.splice(index, 1);
    };
  }

  async emit(events: RecordedEvent[]): Promise<void> {
    if (events.length === 0 || this.listeners.length === 0) return;
    await Promise.all(
      this.listeners.map(async (listener) => {
        try {
          await listener.onEventsRecorded(events);
        } catch (error) {
          this.logger.error(
            { err: error, eventIds: events.map((e) => e.id) },
            'An event listener failed; the events themselves are recorded',
          );
        }
      }),
    );
  }
}
