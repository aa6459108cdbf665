import { BeforeApplicationShutdown, Logger, OnModuleInit } from '@nestjs/common';
import { LruMap } from '../common/cache/lru-map';
import { MicroBatcher } from '../common/concurrency/micro-batcher';
import { EventHooks, EventRecordedListener, RecordedEvent } from './event-hooks';

/** Events published within this window share one dispatch (one lookup, one addBulk). */
export const DISPATCH_WINDOW_MS = 5;
/** Most events one dispatch carries. */
const DISPATCH_BATCH = 1000;
/** Dispatches running at once. */
const DISPATCHES_IN_FLIGHT = 2;
/** Longest wait at shutdown for the dispatches under way. */
const SHUTDOWN_DRAIN_MS = 2_000;
/** Projects whose interest a process keeps (the least recently used is forgotten). */
export const INTERESTS_CACHED = 10_000;

/**
 * The fast path that adds the jobs of the work committed events made. The
 * durable part is done by a trigger in the events' own transaction (an
 * outbox row: an execution moved, a delivery written), so whatever this
 * misses (the process dying after commit, a stale cache) the feature's
 * overdue recovery finds. A subclass says what its projects are interested
 * in and what to enqueue; this class keeps the interests cached, drops the
 * events nobody is interested in with a map lookup, and hands the others to
 * `dispatch` in windows of DISPATCH_WINDOW_MS.
 *
 * The publisher never waits for the window or the dispatch: an API request
 * answers once its transaction has committed.
 */
export abstract class AfterCommitDispatcher<Interest>
  implements EventRecordedListener, OnModuleInit, BeforeApplicationShutdown
{
  protected abstract readonly logger: Logger;
  /** What the log says when a dispatch fails (and who makes up for it). */
  protected abstract readonly failureMessage: string;
  private readonly interests = new LruMap<string, { interest: Interest; at: number }>(
    INTERESTS_CACHED,
  );
  /** Bumped by every invalidate(): a read that began before a change is used for its events, not cached. */
  private epoch = 0;
  private readonly batcher = new MicroBatcher<RecordedEvent, void>(
    { maxBatch: DISPATCH_BATCH, maxInFlight: DISPATCHES_IN_FLIGHT, start: DISPATCH_WINDOW_MS },
    (events) => this.flush(events),
  );

  constructor(private readonly hooks: EventHooks) {}

  /** An event this feature could react to at all, before any lookup (a name it can deliver, an event with a contact). */
  protected abstract candidate(event: RecordedEvent): boolean;
  /** The interests of these projects, read in one statement; a project missing has none. */
  protected abstract loadInterests(projectIds: string[]): Promise<Map<string, Interest>>;
  /** A project without any interest (no workflow, no endpoint). */
  protected abstract readonly noInterest: Interest;
  /** How long a project's interest read here is trusted (changes made in this process apply at once). */
  protected abstract ttlMs(interest: Interest): number;
  protected abstract matches(event: RecordedEvent, interest: Interest): boolean;
  /** Adds the jobs for these events (each matches its project's interest, given by project). */
  protected abstract dispatch(
    events: RecordedEvent[],
    interests: Map<string, Interest>,
  ): Promise<void>;

  onModuleInit(): void {
    this.hooks.register(this);
  }

  /**
   * Hands over the events still in a window before the queues close; bounded,
   * since with Redis unreachable an enqueue may never end (the recovery makes
   * up for what is left).
   */
  async beforeApplicationShutdown(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.batcher.drain(),
      new Promise((resolve) => (timer = setTimeout(resolve, SHUTDOWN_DRAIN_MS))),
    ]);
    clearTimeout(timer);
  }

  /** A project's interest changed in this process. */
  invalidate(projectId: string): void {
    this.interests.delete(projectId);
    this.epoch += 1;
  }

  onEventsRecorded(events: RecordedEvent[]): void {
    const now = Date.now();
    for (const event of events) {
      if (!this.candidate(event)) continue;
      const interest = this.fresh(event.projectId, now);
      // Not cached: looked up with the window's other events.
      if (interest !== undefined && !this.matches(event, interest)) continue;
      void this.batcher.submit(event);
    }
  }

  private fresh(projectId: string, now: number): Interest | undefined {
    const cached = this.interests.get(projectId);
    return cached && now - cached.at < this.ttlMs(cached.interest) ? cached.interest : undefined;
  }

  private async flush(events: RecordedEvent[]): Promise<void[]> {
    try {
      const interests = await this.interestsOf([...new Set(events.map((e) => e.projectId))]);
      const matching = events.filter((e) =>
        this.matches(e, interests.get(e.projectId) ?? this.noInterest),
      );
      if (matching.length > 0) await this.dispatch(matching, interests);
    } catch (error) {
      this.logger.warn({ err: error, events: events.length }, this.failureMessage);
    }
    return events.map(() => undefined);
  }

  private async interestsOf(projectIds: string[]): Promise<Map<string, Interest>> {
    const now = Date.now();
    const out = new Map<string, Interest>();
    const missing: string[] = [];
    for (const id of projectIds) {
      const interest = this.fresh(id, now);
      if (interest !== undefined) out.set(id, interest);
      else missing.push(id);
    }
    if (missing.length === 0) return out;
    const began = this.epoch;
    const found = await this.loadInterests(missing);
    for (const id of missing) {
      const interest = found.get(id) ?? this.noInterest;
      if (this.epoch === began) this.interests.set(id, { interest, at: now });
      out.set(id, interest);
    }
    return out;
  }
}
