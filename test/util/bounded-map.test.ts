import { describe, expect, it } from 'vitest';
import { BoundedMap } from '../../src/util/bounded-map.js';

describe('BoundedMap', () => {
  it('keeps at most its size, dropping the oldest-added key for a new one', () => {
    const m = new BoundedMap<string, number>(2);
    m.set('a', 1).set('b', 2).set('c', 3);
    expect([...m]).toEqual([
      ['b', 2],
      ['c', 3],
    ]);
  });

  it('replaces the value of a key it holds without dropping another', () => {
    const m = new BoundedMap<string, number>(2);
    m.set('a', 1).set('b', 2).set('a', 10);
    expect(m.get('a')).toBe(10);
    expect(m.get('b')).toBe(2);
    expect(m.size).toBe(2);
  });
});
