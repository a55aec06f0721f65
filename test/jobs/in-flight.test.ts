/**
 * The window of records in flight (src/actions/kit/in-flight.ts): works
 * overlap, commits go in record order, and a failure stops the window only
 * once every started work has settled.
 */
import { describe, expect, it } from 'vitest';
import { InFlight } from '../../src/actions/kit/in-flight.js';

/** A work the test answers by hand. */
function manual<T>() {
  let answer!: (v: T) => void;
  let fail!: (e: unknown) => void;
  const promise = new Promise<T>((resolve, reject) => ((answer = resolve), (fail = reject)));
  return { promise, answer, fail };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('InFlight', () => {
  it('starts up to its limit of works at once once a record succeeded, and commits them in record order whatever order they answer in', async () => {
    const window = new InFlight(3);
    const works = Array.from({ length: 4 }, () => manual<number>());
    const committed: number[] = [];
    let started = 0;
    const commit = async (v: number) => {
      committed.push(v);
      window.succeeded();
    };
    // One at a time until a success: the first push waits for its record's commit.
    const first = window.push(() => (started++, works[0]!.promise), commit);
    await turn();
    expect(started).toBe(1);
    works[0]!.answer(0);
    await first;
    // Open now: three records may be uncommitted at once.
    await window.push(() => (started++, works[1]!.promise), commit);
    await window.push(() => (started++, works[2]!.promise), commit);
    const third = window.push(() => (started++, works[3]!.promise), commit);
    await turn();
    expect(started).toBe(4);
    works[3]!.answer(3);
    works[2]!.answer(2);
    await turn();
    expect(committed).toEqual([0]);
    works[1]!.answer(1);
    await third;
    await window.drain();
    expect(committed).toEqual([0, 1, 2, 3]);
  });

  it('after a failed work commits no later record, waits for every started work, then throws the failure from push and drain', async () => {
    const window = new InFlight(4);
    window.succeeded();
    const works = Array.from({ length: 3 }, () => manual<number>());
    const committed: number[] = [];
    const commit = async (v: number) => void committed.push(v);
    for (const w of works) await window.push(() => w.promise, commit);
    works[2]!.answer(2);
    works[0]!.fail(new Error('the service refused record 0'));
    let drained: unknown;
    const draining = window.drain().catch((e: unknown) => (drained = e));
    await turn();
    // Record 1 is still calling: the failure waits for it.
    expect(drained).toBeUndefined();
    works[1]!.answer(1);
    await draining;
    expect((drained as Error).message).toBe('the service refused record 0');
    expect(committed).toEqual([]);
    await expect(window.push(async () => 9, commit)).rejects.toThrow('the service refused record 0');
  });

  it('a commit that throws stops the window the same way', async () => {
    const window = new InFlight(2);
    window.succeeded();
    const committed: number[] = [];
    await window.push(
      async () => 0,
      async () => {
        throw new Error('the journal could not be written');
      },
    );
    await expect(
      (async () => {
        await window.push(
          async () => 1,
          async (v) => void committed.push(v),
        );
        await window.drain();
      })(),
    ).rejects.toThrow('the journal could not be written');
    expect(committed).toEqual([]);
  });
});
