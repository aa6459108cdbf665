import { Logger } from '@nestjs/common';
import { AfterCommitDispatcher, INTERESTS_CACHED } from './after-commit-dispatcher';
import { EventHooks, RecordedEvent } from './event-hooks';

/** A dispatcher whose projects are interested in the names `names` holds; every load and dispatch is recorded. */
class NamesDispatcher extends AfterCommitDispatcher<Set<string>> {
  protected readonly logger = new Logger('test');
  protected readonly failureMessage = 'dispatch failed';
  protected readonly noInterest = new Set<string>();
  readonly names = new Map<string, string[]>();
  readonly loads: string[][] = [];
  readonly dispatched: string[][] = [];
  /** Held loads wait for this before answering. */
  hold: Promise<void> | null = null;

  constructor() {
    super(new EventHooks());
  }

  protected candidate(event: RecordedEvent): boolean {
    return event.contactId !== null;
  }

  protected async loadInterests(projectIds: string[]): Promise<Map<string, Set<string>>> {
    this.loads.push(projectIds);
    const answer = new Map(projectIds.map((id) => [id, new Set(this.names.get(id) ?? [])]));
    if (this.hold) await this.hold;
    return answer;
  }

  protected ttlMs(): number {
    return 60_000;
  }

  protected matches(event: RecordedEvent, names: Set<string>): boolean {
    return names.has(event.name);
  }

  protected async dispatch(events: RecordedEvent[]): Promise<void> {
    this.dispatched.push(events.map((e) => e.id));
  }
}

let seq = 0;
function event(projectId: string, name: string): RecordedEvent {
  seq += 1;
  return {
    id: `e${seq}`,
    projectId,
    contactId: 'c',
    emailId: null,
    name,
    data: {},
    createdAt: new Date(),
    email: 'a@example.com',
  };
}

describe('AfterCommitDispatcher', () => {
  it('files the events and returns at once; the window dispatches the matching ones with one lookup', async () => {
    const dispatcher = new NamesDispatcher();
    dispatcher.names.set('p1', ['signup']);
    const events = [
      event('p1', 'signup'),
      event('p1', 'login'),
      event('p2', 'signup'),
      { ...event('p1', 'signup'), contactId: null },
    ];
    expect(dispatcher.onEventsRecorded(events)).toBeUndefined();
    expect(dispatcher.loads).toEqual([]);
    await dispatcher.beforeApplicationShutdown();
    expect(dispatcher.loads).toEqual([['p1', 'p2']]);
    expect(dispatcher.dispatched).toEqual([[events[0].id]]);
    // Cached now: an event no project is interested in is dropped without a lookup or a window.
    dispatcher.onEventsRecorded([event('p1', 'login')]);
    await dispatcher.beforeApplicationShutdown();
    expect(dispatcher.loads).toHaveLength(1);
  });

  it('does not keep an interest read before an invalidation made meanwhile', async () => {
    const dispatcher = new NamesDispatcher();
    let release: () => void = () => undefined;
    dispatcher.hold = new Promise<void>((resolve) => (release = resolve));
    dispatcher.onEventsRecorded([event('p1', 'signup')]);
    const flushed = dispatcher.beforeApplicationShutdown();
    await new Promise((resolve) => setImmediate(resolve));
    expect(dispatcher.loads).toEqual([['p1']]);
    // A workflow on `signup` is created while the read (which saw none) is under way.
    dispatcher.names.set('p1', ['signup']);
    dispatcher.invalidate('p1');
    dispatcher.hold = null;
    release();
    await flushed;
    expect(dispatcher.dispatched).toEqual([]);
    const next = event('p1', 'signup');
    dispatcher.onEventsRecorded([next]);
    await dispatcher.beforeApplicationShutdown();
    expect(dispatcher.loads).toEqual([['p1'], ['p1']]);
    expect(dispatcher.dispatched).toEqual([[next.id]]);
  });

  it('keeps at most INTERESTS_CACHED projects, forgetting the least recently used', async () => {
    const dispatcher = new NamesDispatcher();
    const projects = Array.from({ length: INTERESTS_CACHED + 1 }, (_, i) => `p${i}`);
    dispatcher.onEventsRecorded(projects.map((p) => event(p, 'signup')));
    await dispatcher.beforeApplicationShutdown();
    const loaded = dispatcher.loads.flat().length;
    expect(loaded).toBe(INTERESTS_CACHED + 1);
    // p0 was forgotten (the oldest): its next event is looked up again; the newest is not.
    dispatcher.onEventsRecorded([
      event('p0', 'signup'),
      event(projects[INTERESTS_CACHED], 'signup'),
    ]);
    await dispatcher.beforeApplicationShutdown();
    expect(dispatcher.loads.flat().slice(loaded)).toEqual(['p0']);
  });
});
