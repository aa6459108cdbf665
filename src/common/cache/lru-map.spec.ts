import { LruMap } from './lru-map';

describe('LruMap', () => {
  it('holds at most its capacity, forgetting the least recently used entry', () => {
    const map = new LruMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    expect(map.get('a')).toBe(1); // a is now newer than b
    map.set('c', 3);
    expect(map.size).toBe(2);
    expect(map.get('b')).toBeUndefined();
    expect(map.get('a')).toBe(1);
    expect(map.get('c')).toBe(3);
  });

  it('setting an existing key replaces it without evicting another', () => {
    const map = new LruMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    map.set('a', 10);
    expect(map.size).toBe(2);
    expect(map.get('b')).toBe(2);
    expect(map.get('a')).toBe(10);
    expect(map.delete('a')).toBe(true);
    expect(map.get('a')).toBeUndefined();
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new LruMap(0)).toThrow(RangeError);
  });
});
