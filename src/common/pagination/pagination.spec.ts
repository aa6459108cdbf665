import { newId } from '../../database/id';
import { ApiException } from '../errors/api-exception';
import { decodeCursor, encodeCursor, pageOf } from './pagination';

describe('cursor pagination helpers', () => {
  it('round-trips a cursor and refuses anything else', () => {
    const id = newId();
    expect(decodeCursor(encodeCursor(id))).toBe(id);
    for (const bad of [
      '',
      'abc',
      'djE6bm90LWEtdXVpZA',
      Buffer.from(`v2:${id}`).toString('base64url'),
      '%%%',
    ]) {
      expect(() => decodeCursor(bad)).toThrow(ApiException);
    }
  });

  it('shapes limit + 1 rows into a page with a next cursor', () => {
    const rows = [newId(), newId(), newId()].map((id) => ({ id }));
    const page = pageOf(
      rows,
      2,
      10,
      (r) => r.id,
      (r) => r.id,
    );
    expect(page.items).toEqual([rows[0].id, rows[1].id]);
    expect(page.hasMore).toBe(true);
    expect(decodeCursor(page.nextCursor as string)).toBe(rows[1].id);
    const last = pageOf(
      rows.slice(0, 2),
      2,
      2,
      (r) => r.id,
      (r) => r.id,
    );
    expect(last).toEqual({
      items: [rows[0].id, rows[1].id],
      nextCursor: null,
      hasMore: false,
      total: 2,
      totalEstimated: false,
    });
  });
});
