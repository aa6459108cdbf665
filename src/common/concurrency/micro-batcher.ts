/**
 * When a batch may start once a slot is free: at once (`'now'`, group commit:
 * nothing waits while the service is idle), after the current turn of the
 * event loop (`'tick'`: the items that arrived together share a batch), or
 * this many milliseconds after the first waiting item.
 */
export type BatchStart = 'now' | 'tick' | number;

export interface MicroBatcherOptions<T> {
  /** Most items one batch carries. */
  maxBatch: number;
  /** Most batches running at once (each usually holds a connection). */
  maxInFlight: number;
  start: BatchStart;
  /** Items with the same key never share a batch (a statement must not update a row twice). */
  keyOf?: (item: T) => string;
  /**
   * A key stays taken until its item is answered, not only while its batch
   * runs: a later item of the key waits, so the items of one key apply one
   * after another in arrival order.
   */
  holdKeys?: boolean;
}

/** A batch's answer for one item: its value, or a promise of it (work the item still does on its own). */
export type ItemAnswer<R> = R | Promise<R>;

interface Entry<T, R> {
  item: T;
  key: string | undefined;
  resolve: (value: R) => void;
  reject: (error: unknown) => void;
}

/**
 * Collects items and runs them in batches: `submit` answers each item's
 * promise with what the batch function answered for it. A batch function
 * that throws answers that error to every item of its batch. Items are taken
 * oldest first; an item whose key is in the batch being built (or, with
 * `holdKeys`, still unanswered) keeps its place, and so does every later item
 * of that key.
 */
export class MicroBatcher<T, R> {
  private waiting: Entry<T, R>[] = [];
  private inFlight = 0;
  private unanswered = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private readonly held = new Set<string>();
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly options: MicroBatcherOptions<T>,
    private readonly runBatch: (items: T[]) => Promise<ItemAnswer<R>[]>,
  ) {
    if (!Number.isInteger(options.maxBatch) || options.maxBatch < 1)
      throw new RangeError(`maxBatch must be a positive integer, got ${options.maxBatch}`);
    if (!Number.isInteger(options.maxInFlight) || options.maxInFlight < 1)
      throw new RangeError(`maxInFlight must be a positive integer, got ${options.maxInFlight}`);
  }

  /** `first`: ahead of the items waiting (one a batch put off, which has waited longest). */
  submit(item: T, placement: { first?: boolean } = {}): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const entry: Entry<T, R> = { item, key: this.options.keyOf?.(item), resolve, reject };
      if (placement.first) this.waiting.unshift(entry);
      else this.waiting.push(entry);
      this.unanswered += 1;
      this.schedule();
    });
  }

  /** Items waiting for a batch and batches running (for tests and metrics). */
  get load(): { waiting: number; inFlight: number; unanswered: number } {
    return { waiting: this.waiting.length, inFlight: this.inFlight, unanswered: this.unanswered };
  }

  /** Starts what waits without waiting for its window, and resolves once every item is answered. */
  async drain(): Promise<void> {
    this.cancelSchedule();
    this.pump();
    if (this.unanswered === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private schedule(): void {
    const start = this.options.start;
    if (start === 'now') return this.pump();
    if (this.timer || this.immediate) return;
    const fire = (): void => {
      this.timer = undefined;
      this.immediate = undefined;
      this.pump();
    };
    if (start === 'tick') this.immediate = setImmediate(fire);
    else this.timer = setTimeout(fire, start);
  }

  private cancelSchedule(): void {
    clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }

  private pump(): void {
    while (this.inFlight < this.options.maxInFlight && this.waiting.length > 0) {
      const batch = this.take();
      // Every waiting key is held: an answer frees one and schedules again.
      if (batch.length === 0) return;
      this.inFlight += 1;
      void this.run(batch);
    }
  }

  private take(): Entry<T, R>[] {
    const batch: Entry<T, R>[] = [];
    const skipped: Entry<T, R>[] = [];
    const seen = new Set<string>();
    let index = 0;
    for (; index < this.waiting.length && batch.length < this.options.maxBatch; index++) {
      const entry = this.waiting[index];
      if (entry.key === undefined) {
        batch.push(entry);
        continue;
      }
      if (seen.has(entry.key) || this.held.has(entry.key)) skipped.push(entry);
      else batch.push(entry);
      // A later item of a skipped key must not overtake it.
      seen.add(entry.key);
    }
    this.waiting =
      index === this.waiting.length ? skipped : skipped.concat(this.waiting.slice(index));
    if (this.options.holdKeys)
      for (const entry of batch) if (entry.key !== undefined) this.held.add(entry.key);
    return batch;
  }

  private async run(batch: Entry<T, R>[]): Promise<void> {
    let answers: ItemAnswer<R>[] | undefined;
    let failure: unknown;
    try {
      answers = await this.runBatch(batch.map((entry) => entry.item));
      if (answers.length !== batch.length)
        throw new Error(`a batch of ${batch.length} items answered ${answers.length}`);
    } catch (error) {
      answers = undefined;
      failure = error;
    }
    this.inFlight -= 1;
    batch.forEach((entry, i) => {
      if (!answers) return this.answer(entry, () => entry.reject(failure));
      const answer = answers[i];
      if (!isThenable(answer)) return this.answer(entry, () => entry.resolve(answer));
      answer.then(
        (value) => this.answer(entry, () => entry.resolve(value), true),
        (error: unknown) => this.answer(entry, () => entry.reject(error), true),
      );
    });
    if (this.waiting.length > 0) this.schedule();
  }

  /** `later`: answered after its batch ended, so a key it frees may let a waiting item go. */
  private answer(entry: Entry<T, R>, settle: () => void, later = false): void {
    const freed =
      this.options.holdKeys === true && entry.key !== undefined && this.held.delete(entry.key);
    settle();
    this.unanswered -= 1;
    if (this.unanswered === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
    if (later && freed && this.waiting.length > 0) this.schedule();
  }
}

function isThenable<R>(value: ItemAnswer<R>): value is Promise<R> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
