import { describe, expect, it } from 'vitest';
import { NumberMap, TextKeyMap } from '../../src/util/number-map.js';

/** A small deterministic PRNG (mulberry32): the same sequence on every run. */
function prng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('NumberMap', () => {
  it('agrees with a Map over random sets, overwrites and deletes of phone numbers, across growth and probe runs', () => {
    const rand = prng(7);
    const m = new NumberMap();
    const ref = new Map<number, number>();
    // Few distinct keys, many operations: long probe runs, deletes in their middle.
    for (let i = 0; i < 60_000; i++) {
      const key = 79_200_000_000 + Math.floor(rand() * 5_000) * 1_024; // shared low bits: collisions on a plain hash
      const op = rand();
      if (op < 0.6) {
        m.set(key, i);
        ref.set(key, i);
      } else if (op < 0.9) expect(m.delete(key)).toBe(ref.delete(key));
      else expect(m.get(key)).toBe(ref.get(key));
    }
    expect(m.size).toBe(ref.size);
    for (const [k, v] of ref) expect(m.get(k)).toBe(v);
    expect(new Map(m.entries())).toEqual(ref);
    expect(m.has(1)).toBe(false);
  });

  it('takes only positive safe integers as keys', () => {
    for (const bad of [0, -1, 1.5, 2 ** 53, Number.NaN]) {
      expect(NumberMap.fits(bad)).toBe(false);
      expect(() => new NumberMap().set(bad, 1)).toThrow(RangeError);
    }
    expect(NumberMap.fits(2 ** 53 - 1)).toBe(true);
    expect(NumberMap.fits('1')).toBe(false);
  });
});

describe('TextKeyMap', () => {
  it('agrees with a Map for keys of a text and a number, and for any other key', () => {
    const rand = prng(11);
    const m = new TextKeyMap();
    const ref = new Map<string, number>();
    const shapes = (n: number) => [
      `n:${n}`,
      `u:${n}`,
      `${n}`,
      `#${n}`,
      `n:0${n}`,
      `x${n}y`,
      `n:${n}0000000000000000`,
      'n:0',
      '',
      'plain',
      `${n}@c.us`,
      `job/-/r:${n}@c.us`,
      `r:0${n}@c.us`,
      `${n}@g.us7`,
      `n:${n}@too-long-a-tail`,
      `a\u0000${n}`,
      `a${n}\u0000b`,
      '@c.us',
    ];
    for (let i = 0; i < 30_000; i++) {
      const options = shapes(79_000_000_000 + Math.floor(rand() * 2_000));
      const key = options[Math.floor(rand() * options.length)]!;
      if (rand() < 0.7) {
        m.set(key, i);
        ref.set(key, i);
      } else expect(m.delete(key)).toBe(ref.delete(key));
    }
    expect(m.size).toBe(ref.size);
    for (const [k, v] of ref) expect(m.get(k)).toBe(v);
    expect(new Map(m.entries())).toEqual(ref);
    expect([...m.values()].sort()).toEqual([...ref.values()].sort());
    expect(m.has('n:1')).toBe(false);
  });

  it('keeps keys of texts beyond the first sixteen as well', () => {
    const m = new TextKeyMap();
    for (let t = 0; t < 40; t++) for (let n = 1; n <= 50; n++) m.set(`t${t}-${n}`, t * 100 + n);
    expect(m.size).toBe(2_000);
    for (let t = 0; t < 40; t++) for (let n = 1; n <= 50; n++) expect(m.get(`t${t}-${n}`)).toBe(t * 100 + n);
    expect(m.delete('t39-50')).toBe(true);
    expect(m.get('t39-50')).toBeUndefined();
    expect(m.size).toBe(1_999);
  });
});
