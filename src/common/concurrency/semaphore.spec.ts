import { Semaphore } from './semaphore';

/** A promise that settles when the test opens it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('Semaphore', () => {
  it('runs at most `limit` tasks at once and the rest in arrival order', async () => {
    const semaphore = new Semaphore(2);
    const started: number[] = [];
    let running = 0;
    let peak = 0;
    const gates = Array.from({ length: 5 }, gate);
    const results = gates.map((g, i) =>
      semaphore.run(async () => {
        started.push(i);
        running += 1;
        peak = Math.max(peak, running);
        await g.opened;
        running -= 1;
        return i * 10;
      }),
    );
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1]);
    expect(semaphore.load).toEqual({ active: 2, waiting: 3 });
    gates[1].open();
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1, 2]);
    gates.forEach((g) => g.open());
    await expect(Promise.all(results)).resolves.toEqual([0, 10, 20, 30, 40]);
    expect(started).toEqual([0, 1, 2, 3, 4]);
    expect(peak).toBe(2);
    expect(semaphore.load).toEqual({ active: 0, waiting: 0 });
  });

  it('frees the place of a task that throws', async () => {
    const semaphore = new Semaphore(1);
    await expect(semaphore.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(semaphore.run(async () => 'next')).resolves.toBe('next');
    expect(semaphore.load).toEqual({ active: 0, waiting: 0 });
  });

  it('refuses a limit below one', () => {
    expect(() => new Semaphore(0)).toThrow(RangeError);
  });
});
