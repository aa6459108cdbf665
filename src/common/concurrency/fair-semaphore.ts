/**
 * A semaphore shared by tenants: at most `limit` calls run at once, and one
 * key (a project) holds at most `perKey` of them, so a tenant whose calls are
 * slow cannot take every place. Waiting keys are served in turn (round
 * robin), each key's own calls first come first served. A finishing call
 * hands its place straight to the next eligible waiter.
 */
export class FairSemaphore {
  private active = 0;
  private readonly activeByKey = new Map<string, number>();
  /** Waiting calls by key, in the order keys began to wait (a Map keeps insertion order). */
  private readonly waiting = new Map<string, (() => void)[]>();

  constructor(
    private readonly limit: number,
    private readonly perKey: number = limit,
  ) {
    for (const [name, value] of Object.entries({ limit, perKey })) {
      if (!Number.isInteger(value) || value < 1)
        throw new RangeError(`${name} must be a positive integer, got ${value}`);
    }
  }

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    if (this.active < this.limit && this.held(key) < this.perKey && !this.waiting.has(key)) {
      this.take(key);
    } else {
      await new Promise<void>((resolve) => {
        const queue = this.waiting.get(key);
        if (queue) queue.push(resolve);
        else this.waiting.set(key, [resolve]);
      });
    }
    try {
      return await task();
    } finally {
      this.release(key);
    }
  }

  /** Calls in progress and calls waiting (for tests and metrics). */
  get load(): { active: number; waiting: number } {
    let waiting = 0;
    for (const queue of this.waiting.values()) waiting += queue.length;
    return { active: this.active, waiting };
  }

  private held(key: string): number {
    return this.activeByKey.get(key) ?? 0;
  }

  private take(key: string): void {
    this.active += 1;
    this.activeByKey.set(key, this.held(key) + 1);
  }

  private release(key: string): void {
    this.active -= 1;
    const left = this.held(key) - 1;
    if (left === 0) this.activeByKey.delete(key);
    else this.activeByKey.set(key, left);
    // The first waiting key (in turn order) that may take a place; it then goes to the back of the turn.
    for (const [waiter, queue] of this.waiting) {
      if (this.active >= this.limit) return;
      if (this.held(waiter) >= this.perKey) continue;
      const next = queue.shift() as () => void;
      this.waiting.delete(waiter);
      if (queue.length > 0) this.waiting.set(waiter, queue);
      this.take(waiter);
      next();
      return;
    }
  }
}
