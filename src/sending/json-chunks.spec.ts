import { jsonChunks } from './emails.repository';

describe('jsonChunks (insertEmails statements)', () => {
  const records = Array.from({ length: 7 }, (_, i) => ({ n: i, text: 'é'.repeat(40) }));

  it('keeps every record, in order, each chunk a JSON array', () => {
    const chunks = jsonChunks(records, 3, 1 << 20);
    expect(chunks).toHaveLength(3);
    expect(chunks.flatMap((c) => JSON.parse(c) as unknown[])).toEqual(records);
  });

  it('splits by UTF-8 bytes as well as by rows', () => {
    const one = Buffer.byteLength(JSON.stringify(records[0]));
    // Room for two records (and their commas and brackets) but not three: 'é' is two bytes, so counting
    // characters instead of bytes would put more in a chunk.
    const chunks = jsonChunks(records, 100, 2 + 2 * (one + 1));
    expect(chunks.map((c) => (JSON.parse(c) as unknown[]).length)).toEqual([2, 2, 2, 1]);
    for (const c of chunks) expect(Buffer.byteLength(c)).toBeLessThanOrEqual(2 + 2 * (one + 1));
  });

  it('puts a record larger than the limit in a chunk of its own, and answers nothing for no records', () => {
    const big = { text: 'x'.repeat(1000) };
    expect(jsonChunks([{ a: 1 }, big, { b: 2 }], 100, 100).map((c) => JSON.parse(c))).toEqual([
      [{ a: 1 }],
      [big],
      [{ b: 2 }],
    ]);
    expect(jsonChunks([], 10, 10)).toEqual([]);
  });
});
