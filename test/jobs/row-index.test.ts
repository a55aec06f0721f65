/**
 * The index of rows met by key that bulk jobs de-duplicate with
 * (src/actions/kit/row-index.ts): numbers in typed arrays, other keys in a Map,
 * answering as a Map of keys to row places (`data/leads.csv:4`) would.
 */
import { describe, expect, it } from 'vitest';
import { RowIndex } from '../../src/actions/kit/row-index.js';

describe('RowIndex', () => {
  it('answers as a Map for phone numbers, usernames and odd keys, through many growths', () => {
    const index = new RowIndex<number | string>();
    const oracle = new Map<number | string, string>();
    let seed = 7;
    const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296;
    for (let row = 0; row < 50_000; row++) {
      // Phone numbers sharing long prefixes (the hard case for a weak hash), repeats, and keys that are not positive integers.
      const r = random();
      const key =
        r < 0.8
          ? 79000000000 + Math.floor(random() * 30_000)
          : r < 0.9
            ? `u:user${Math.floor(random() * 3000)}`
            : [0, -5, 1.5, 2 ** 60, Number.MAX_SAFE_INTEGER, 1][Math.floor(random() * 6)]!;
      expect(index.get(key)).toBe(oracle.get(key));
      if (!oracle.has(key)) {
        // The places a job names: a CSV line, a JSON array element, an inline item.
        const where = row % 3 === 0 ? `data/leads.csv:${row + 2}` : row % 3 === 1 ? `data/leads.json[${row}]` : `items[${row}]`;
        oracle.set(key, where);
        index.set(key, where);
      }
    }
    expect(index.size).toBe(oracle.size);
    for (const [k, row] of oracle) expect(index.get(k)).toBe(row);
    expect(index.get(79000099999)).toBeUndefined();
    expect(index.get('u:nobody')).toBeUndefined();
  });

  it('keeps the last place set for a key, and lines far beyond a million', () => {
    const index = new RowIndex<number>();
    index.set(79001112233, 'data/leads.csv:4');
    index.set(79001112233, 'data/leads.csv:9');
    index.set(79001112234, `data/big.csv:${2 ** 40}`);
    index.set(79001112235, 'data/odd name 2.csv:17');
    expect(index.get(79001112233)).toBe('data/leads.csv:9');
    expect(index.get(79001112234)).toBe(`data/big.csv:${2 ** 40}`);
    expect(index.get(79001112235)).toBe('data/odd name 2.csv:17');
    expect(index.size).toBe(3);
  });
});
