/**
 * At most `limit` calls of `run` are in progress at once; the others wait,
 * first come first served. A finishing call hands its place straight to the
 * next waiter (no gap a newcomer could take).
 */
export class Semaphore {
  private active = 0;
  private readonly waiters: (() => void)[] = [];

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`limit must be a positive integer, got ${limit}`);
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active < this.limit) this.active += 1;
    else await new Promise<void>((resolve) => this.waiters.push(resolve));
    try {
      return await task();
    } finally {
      const next = this.waiters.shift();
      if (next) next();
      else this.active -= 1;
    }
  }

  /** Calls in progress and calls waiting (for tests and metrics). */
  get load(): { active: number; waiting: number } {
    return { active: this.active, waiting: this.waiters.length };
  }
}
