/**
 * Pairs each item of `source` with the work `start(item)` began for it, up
 * to `ahead` items before the consumer reaches it. For a pass that reads
 * per item from a remote store (one round trip each): the reads of the next
 * items are on the wire while the current one is handled, instead of one
 * round trip after another (ioredis sends concurrent commands together).
 * The items still come in their order; only the reads are early, so use it
 * where an early read means the same as a late one (a pass that only reads,
 * or plans).
 *
 * A work the consumer never awaits (an item it skips) is not an unhandled
 * rejection; one it awaits rejects as usual.
 *
 * @example for await (const [row, rec] of readAhead(rows, 64, (r) => store.get(r.key))) use(row, await rec);
 */
export async function* readAhead<T, U>(
  source: AsyncIterable<T>,
  ahead: number,
  start: (item: T) => Promise<U>,
): AsyncGenerator<[T, Promise<U>]> {
  const queue: Array<[T, Promise<U>]> = [];
  for await (const item of source) {
    const work = start(item);
    work.catch(() => undefined);
    queue.push([item, work]);
    if (queue.length >= ahead) yield queue.shift()!;
  }
  while (queue.length > 0) yield queue.shift()!;
}
