import { parse } from 'csv-parse/sync';
import { mergeDuplicates, rowsFromCsv, rowsFromJson, validateImportRow } from './import-rows';

describe('rowsFromCsv', () => {
  const plain =
    '\ufeffEmail,name,subscribed\r\nada@example.com,Ada,yes\r\n\r\nbob@example.com,,no\nbad,Bad\r\n';

  it('reports each record with its data row number and file line, skipping blank lines', () => {
    expect(rowsFromCsv(plain)).toEqual([
      { r: 1, l: 2, v: { email: 'ada@example.com', data: { name: 'Ada' }, subscribed: true } },
      { r: 2, l: 4, v: { email: 'bob@example.com', data: {}, subscribed: false } },
      { r: 3, l: 5, v: { email: 'bad', data: { name: 'Bad' } } },
    ]);
  });

  it('gives the same records for a quote-free file as csv-parse does', () => {
    const lines = ['email,a,b', 'x@example.com,1,2', '', 'y@example.com,3', 'z@example.com,4,5,6'];
    for (const eol of ['\n', '\r\n', '\r']) {
      const text = lines.join(eol);
      const expected = (
        parse(text, { relax_column_count: true, skip_empty_lines: true }) as string[][]
      ).slice(1);
      expect(rowsFromCsv(text).map((row) => (row.v as { email: string }).email)).toEqual(
        expected.map((r) => r[0]),
      );
    }
  });

  it('handles quoted fields with commas, quotes and newlines through csv-parse', () => {
    const rows = rowsFromCsv(
      'email,note\n"a@example.com","one, ""two""\nthree"\nb@example.com,x\n',
    );
    expect(rows[0].v).toEqual({ email: 'a@example.com', data: { note: 'one, "two"\nthree' } });
    expect(rows[1]).toMatchObject({ r: 2, l: 4 });
  });

  it('refuses a file without an email column or rows', () => {
    const errorsOf = (text: string) => {
      try {
        rowsFromCsv(text);
      } catch (error) {
        return (error as { errors: unknown[] }).errors;
      }
      return null;
    };
    expect(errorsOf('name\nada')).toEqual([
      expect.objectContaining({ field: 'email', code: 'required' }),
    ]);
    expect(errorsOf('email\n')).toEqual([
      expect.objectContaining({ field: 'contacts', code: 'too_small' }),
    ]);
  });
});

describe('validateImportRow', () => {
  it('normalises the email and splits data into set and remove', () => {
    expect(
      validateImportRow({ r: 1, v: { email: ' A@B.example ', data: { x: 1, y: null } } }),
    ).toEqual({
      ok: true,
      input: { email: 'a@b.example', subscribed: null, set: { x: 1 }, remove: ['y'] },
    });
  });

  it.each([
    [{ email: 'nope' }, 'email', 'invalid_string'],
    [{}, 'email', 'required'],
    [{ email: 42 }, 'email', 'invalid_type'],
    [{ email: 'a@b.example', subscribed: 'yes' }, 'subscribed', 'invalid_type'],
    [{ email: 'a@b.example', data: [] }, 'data', 'invalid_type'],
    [{ email: 'a@b.example', other: 1 }, 'other', 'unrecognized_keys'],
  ])('reports %j as %s/%s', (v, field, code) => {
    const result = validateImportRow({ r: 7, l: 8, v });
    expect(result).toMatchObject({ ok: false, error: { row: 7, line: 8, field, code } });
  });
});

describe('rowsFromJson / mergeDuplicates', () => {
  it('numbers rows from 1 and refuses a bad envelope', () => {
    expect(rowsFromJson({ contacts: [{ email: 'a@b.example' }] })).toEqual([
      { r: 1, v: { email: 'a@b.example' } },
    ]);
    expect(() => rowsFromJson({ contacts: [] })).toThrow();
    expect(() => rowsFromJson([])).toThrow();
  });

  it('folds rows of one email: later values win key by key, a later null removes', () => {
    const merged = mergeDuplicates([
      { email: 'a@b.example', subscribed: null, set: { x: 1, y: 1 }, remove: [] },
      { email: 'c@d.example', subscribed: true, set: {}, remove: [] },
      { email: 'a@b.example', subscribed: false, set: { y: 2 }, remove: ['x'] },
    ]);
    expect(merged).toEqual([
      { email: 'a@b.example', subscribed: false, set: { y: 2 }, remove: ['x'] },
      { email: 'c@d.example', subscribed: true, set: {}, remove: [] },
    ]);
  });
});
