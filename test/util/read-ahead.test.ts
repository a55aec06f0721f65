import { describe, expect, it } from 'vitest';
import { readAhead } from '../../src/util/read-ahead.js';

async function* numbers(n: number): AsyncGenerator<number> {
  for (let i = 0; i < n; i++) yield i;
}

describe('readAhead', () => {
  it('yields every item in order, each with its work, starting the work of up to `ahead` items before their turn', async () => {
    const started: number[] = [];
    const seen: Array<[number, number, number[]]> = [];
    for await (const [i, work] of readAhead(numbers(10), 4, async (n) => (started.push(n), n * 10)))
      seen.push([i, await work, [...started]]);
    expect(seen.map(([i, w]) => [i, w])).toEqual(Array.from({ length: 10 }, (_, i) => [i, i * 10]));
    // When item 0 is handled, the work of items 0-3 has begun; at item 6, of 0-9.
    expect(seen[0]![2]).toEqual([0, 1, 2, 3]);
    expect(seen[6]![2]).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('a work the consumer skips may fail without an unhandled rejection; one it awaits rejects as usual', async () => {
    const out: string[] = [];
    for await (const [i, work] of readAhead(numbers(4), 3, async (n) => {
      if (n % 2 === 1) throw new Error(`read ${n} failed`);
      return n;
    })) {
      if (i === 1) continue; // skipped: its failure is nobody's
      out.push(await work.then(String, (e: Error) => e.message));
    }
    expect(out).toEqual(['0', '2', 'read 3 failed']);
  });
});
