import { findJsonTextProblem, MAX_JSON_DEPTH } from './json-text';

describe('findJsonTextProblem', () => {
  it('accepts ordinary JSON, emoji and paired surrogates included', () => {
    expect(
      findJsonTextProblem({ name: 'Zoë 🚀', list: [1, 'a', { toString: 'x' }], n: null }),
    ).toBeNull();
  });

  it('names NUL characters and unpaired surrogates in values and keys by their path', () => {
    expect(findJsonTextProblem({ data: { list: ['ok', 'a\u0000'] } })).toMatchObject({
      field: 'data.list[1]',
      code: 'invalid_string',
    });
    expect(findJsonTextProblem({ a: '\ud800x' })).toMatchObject({
      field: 'a',
      code: 'invalid_string',
    });
    expect(findJsonTextProblem({ a: 'x\udc00' })).toMatchObject({
      field: 'a',
      code: 'invalid_string',
    });
    expect(findJsonTextProblem({ ['k\u0000']: 1 }, 'contacts')).toMatchObject({
      field: 'contacts.k\u0000',
    });
  });

  it('refuses the keys the framework would strip silently', () => {
    expect(findJsonTextProblem({ data: { constructor: 1 } })).toMatchObject({
      field: 'data.constructor',
    });
    expect(findJsonTextProblem({ data: [{ prototype: 1 }] })).toMatchObject({
      field: 'data[0].prototype',
    });
  });

  it('reports nesting over the limit on the top-level field, at any depth without recursion', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(findJsonTextProblem({ ok: 1, data: deep })).toEqual(
      expect.objectContaining({ field: 'data', code: 'too_big' }),
    );
    let fits: unknown = 1;
    for (let i = 0; i < MAX_JSON_DEPTH - 1; i++) fits = { a: fits };
    expect(findJsonTextProblem(fits)).toBeNull();
  });
});
