/**
 * At most `capacity` units (bytes, characters) are held at once; a caller
 * asking for more than is left waits, first come first served (a big request
 * is not overtaken by small ones for ever). A request larger than the whole
 * capacity is let through alone, once nothing else is held.
 */
export class WeightedSemaphore {
  private held = 0;
  private readonly waiters: { weight: number; resolve: () => void }[] = [];

  constructor(private readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`capacity must be a positive integer, got ${capacity}`);
  }

  async run<T>(weight: number, task: () => Promise<T>): Promise<T> {
    const units = Math.min(Math.max(0, Math.ceil(weight)), this.capacity);
    if (this.waiters.length === 0 && this.held + units <= this.capacity) this.held += units;
    else await new Promise<void>((resolve) => this.waiters.push({ weight: units, resolve }));
    try {
      return await task();
    } finally {
      this.held -= units;
      // Hands the freed units to the waiters at the head, in order, as far as they fit.
      while (this.waiters.length > 0 && this.held + this.waiters[0].weight <= this.capacity) {
        const next = this.waiters.shift() as { weight: number; resolve: () => void };
        this.held += next.weight;
        next.resolve();
      }
    }
  }

  /** Units held and calls waiting (for tests and metrics). */
  get load(): { held: number; waiting: number } {
    return { held: this.held, waiting: this.waiters.length };
  }
}
