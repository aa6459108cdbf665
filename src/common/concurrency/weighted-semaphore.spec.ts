import { WeightedSemaphore } from './weighted-semaphore';

describe('WeightedSemaphore', () => {
  it('holds at most its capacity, hands freed units to waiters in order, and lets an oversized call through alone', async () => {
    const sema = new WeightedSemaphore(10);
    const order: string[] = [];
    const gates = new Map<string, () => void>();
    const call = (name: string, weight: number) =>
      sema.run(weight, async () => {
        order.push(`start ${name}`);
        await new Promise<void>((resolve) => gates.set(name, resolve));
        order.push(`end ${name}`);
      });
    const a = call('a', 6);
    const b = call('b', 6); // does not fit beside a
    const c = call('c', 1); // fits, but waits behind b (first come first served)
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['start a']);
    expect(sema.load).toEqual({ held: 6, waiting: 2 });
    gates.get('a')?.();
    await a;
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['start a', 'end a', 'start b', 'start c']);
    expect(sema.load).toEqual({ held: 7, waiting: 0 });
    const big = call('big', 50);
    await new Promise((r) => setImmediate(r));
    expect(sema.load).toEqual({ held: 7, waiting: 1 });
    gates.get('b')?.();
    gates.get('c')?.();
    await Promise.all([b, c]);
    await new Promise((r) => setImmediate(r));
    expect(sema.load).toEqual({ held: 10, waiting: 0 });
    gates.get('big')?.();
    await big;
    expect(sema.load).toEqual({ held: 0, waiting: 0 });
  });
});
