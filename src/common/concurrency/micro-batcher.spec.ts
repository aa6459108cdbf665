import { MicroBatcher } from './micro-batcher';

/** A batch function whose batches are recorded and finished by the test. */
function controlled<T>() {
  const batches: { items: T[]; finish: (answers?: unknown[] | Error) => void }[] = [];
  const run = (items: T[]) =>
    new Promise<unknown[]>((resolve, reject) => {
      batches.push({
        items,
        finish: (answers) =>
          answers instanceof Error
            ? reject(answers)
            : resolve(answers ?? items.map((item) => `done ${String(item)}`)),
      });
    });
  return { batches, run };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('MicroBatcher', () => {
  it("'now' starts a batch at once while a slot is free, and later items share the next one", async () => {
    const { batches, run } = controlled<number>();
    const batcher = new MicroBatcher<number, unknown>(
      { maxBatch: 10, maxInFlight: 1, start: 'now' },
      run,
    );
    const first = batcher.submit(1);
    expect(batches.map((b) => b.items)).toEqual([[1]]);
    const rest = [2, 3, 4].map((n) => batcher.submit(n));
    expect(batches).toHaveLength(1);
    batches[0].finish();
    await expect(first).resolves.toBe('done 1');
    expect(batches.map((b) => b.items)).toEqual([[1], [2, 3, 4]]);
    batches[1].finish();
    await expect(Promise.all(rest)).resolves.toEqual(['done 2', 'done 3', 'done 4']);
  });

  it("'tick' gathers the items of one turn of the event loop, up to maxBatch, in several batches at once", async () => {
    const { batches, run } = controlled<number>();
    const batcher = new MicroBatcher<number, unknown>(
      { maxBatch: 3, maxInFlight: 2, start: 'tick' },
      run,
    );
    const answers = [1, 2, 3, 4, 5, 6, 7].map((n) => batcher.submit(n));
    expect(batches).toHaveLength(0);
    await turn();
    expect(batches.map((b) => b.items)).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    batches[0].finish();
    batches[1].finish();
    await Promise.all(answers.slice(0, 6));
    await turn();
    expect(batches[2].items).toEqual([7]);
    batches[2].finish();
    await expect(answers[6]).resolves.toBe('done 7');
  });

  it('a window in milliseconds gathers the items that arrive within it', async () => {
    const { batches, run } = controlled<number>();
    const batcher = new MicroBatcher<number, unknown>(
      { maxBatch: 100, maxInFlight: 1, start: 20 },
      run,
    );
    const a = batcher.submit(1);
    await turn();
    const b = batcher.submit(2);
    expect(batches).toHaveLength(0);
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(batches.map((x) => x.items)).toEqual([[1, 2]]);
    batches[0].finish();
    await expect(Promise.all([a, b])).resolves.toEqual(['done 1', 'done 2']);
  });

  it('never puts two items of one key in a batch, and keeps their order', async () => {
    const { batches, run } = controlled<string>();
    const batcher = new MicroBatcher<string, unknown>(
      { maxBatch: 10, maxInFlight: 2, start: 'tick', keyOf: (s) => s[0] },
      run,
    );
    const answers = ['a1', 'b1', 'a2', 'c1', 'a3'].map((s) => batcher.submit(s));
    await turn();
    expect(batches.map((b) => b.items)).toEqual([['a1', 'b1', 'c1'], ['a2']]);
    batches[0].finish();
    batches[1].finish();
    await Promise.all(answers.slice(0, 4));
    await turn();
    expect(batches[2].items).toEqual(['a3']);
    batches[2].finish();
    await answers[4];
  });

  it('holdKeys: an item waits until the earlier item of its key is answered, even after its batch ended', async () => {
    let release: (value: string) => void = () => undefined;
    const later = new Promise<string>((resolve) => (release = resolve));
    const seen: string[][] = [];
    const batcher = new MicroBatcher<string, string>(
      { maxBatch: 10, maxInFlight: 2, start: 'now', keyOf: (s) => s[0], holdKeys: true },
      async (items) => {
        seen.push(items);
        // a1 is answered later (retried on its own, say); the others at once.
        return items.map((item) => (item === 'a1' ? later : `done ${item}`));
      },
    );
    const a1 = batcher.submit('a1');
    await turn();
    const a2 = batcher.submit('a2');
    const b1 = batcher.submit('b1');
    await expect(b1).resolves.toBe('done b1');
    expect(seen).toEqual([['a1'], ['b1']]);
    release('done a1 alone');
    await expect(a1).resolves.toBe('done a1 alone');
    await expect(a2).resolves.toBe('done a2');
    expect(seen).toEqual([['a1'], ['b1'], ['a2']]);
  });

  it("answers each item its own outcome: a value, a promise's value or error; a batch that throws fails all of its items", async () => {
    let fail = false;
    const batcher = new MicroBatcher<number, number>(
      { maxBatch: 10, maxInFlight: 1, start: 'tick' },
      async (items) => {
        if (fail) throw new Error('the statement failed');
        return items.map((n) =>
          n === 2
            ? Promise.reject(new Error('two failed'))
            : n === 3
              ? Promise.resolve(30)
              : n * 10,
        );
      },
    );
    const answers = [1, 2, 3].map((n) => batcher.submit(n));
    await expect(answers[0]).resolves.toBe(10);
    await expect(answers[1]).rejects.toThrow('two failed');
    await expect(answers[2]).resolves.toBe(30);
    fail = true;
    const failed = [4, 5].map((n) => batcher.submit(n));
    await expect(failed[0]).rejects.toThrow('the statement failed');
    await expect(failed[1]).rejects.toThrow('the statement failed');
  });

  it('first: an item put ahead of the waiting ones', async () => {
    const { batches, run } = controlled<number>();
    const batcher = new MicroBatcher<number, unknown>(
      { maxBatch: 2, maxInFlight: 1, start: 'tick' },
      run,
    );
    void batcher.submit(1);
    void batcher.submit(2);
    void batcher.submit(3, { first: true });
    await turn();
    expect(batches[0].items).toEqual([3, 1]);
    batches[0].finish();
    await turn();
    await turn();
    expect(batches[1].items).toEqual([2]);
    batches[1].finish();
  });

  it('drain starts a waiting window at once and resolves when every item is answered', async () => {
    const answered: number[] = [];
    const batcher = new MicroBatcher<number, void>(
      { maxBatch: 10, maxInFlight: 1, start: 60_000 },
      async (items) => {
        answered.push(...items);
        return items.map(() => undefined);
      },
    );
    void batcher.submit(1);
    void batcher.submit(2);
    await batcher.drain();
    expect(answered).toEqual([1, 2]);
    expect(batcher.load).toEqual({ waiting: 0, inFlight: 0, unanswered: 0 });
  });
});
