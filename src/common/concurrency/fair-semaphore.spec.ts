import { FairSemaphore } from './fair-semaphore';

/** A promise that settles when the test opens it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('FairSemaphore', () => {
  it('keeps a place for other keys while one key has more calls than its share', async () => {
    const semaphore = new FairSemaphore(2, 1);
    const started: string[] = [];
    const gates = new Map<string, ReturnType<typeof gate>>();
    const call = (key: string, name: string) => {
      const g = gate();
      gates.set(name, g);
      return semaphore.run(key, async () => {
        started.push(name);
        await g.opened;
        return name;
      });
    };
    const calls = [call('a', 'a1'), call('a', 'a2'), call('a', 'a3')];
    await tick();
    // One key alone takes its share only: the second place stays free for others.
    expect(started).toEqual(['a1']);
    expect(semaphore.load).toEqual({ active: 1, waiting: 2 });
    calls.push(call('b', 'b1'));
    await tick();
    expect(started).toEqual(['a1', 'b1']);
    gates.get('a1')!.open();
    await tick();
    expect(started).toEqual(['a1', 'b1', 'a2']);
    for (const name of ['a2', 'b1', 'a3']) {
      gates.get(name)!.open();
      await tick();
    }
    await expect(Promise.all(calls)).resolves.toEqual(['a1', 'a2', 'a3', 'b1']);
    expect(semaphore.load).toEqual({ active: 0, waiting: 0 });
  });

  it('serves waiting keys in turn, each key first come first served', async () => {
    const semaphore = new FairSemaphore(1, 1);
    const started: string[] = [];
    const first = gate();
    const holder = semaphore.run('x', () => first.opened);
    const calls = ['a1', 'a2', 'a3', 'b1', 'b2', 'c1'].map((name) =>
      semaphore.run(name[0], async () => {
        started.push(name);
      }),
    );
    first.open();
    await Promise.all([holder, ...calls]);
    // Round robin over a, b, c instead of a's three calls first.
    expect(started).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
  });

  it('frees the place of a call that throws', async () => {
    const semaphore = new FairSemaphore(1);
    await expect(
      semaphore.run('a', async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await expect(semaphore.run('a', async () => 'ok')).resolves.toBe('ok');
    expect(semaphore.load).toEqual({ active: 0, waiting: 0 });
  });

  it('refuses limits that are not positive integers', () => {
    expect(() => new FairSemaphore(0)).toThrow(RangeError);
    expect(() => new FairSemaphore(2, 1.5)).toThrow(RangeError);
  });
});
