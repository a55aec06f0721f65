/**
 * Runs async work one at a time per key: a check ("already exists?") and
 * the write it leads to are never interleaved with another change of the
 * same key, although memory changes only once the write is on disk.
 */
export class KeyedMutex<K> {
  private readonly tails = new Map<K, Promise<unknown>>();

  async run<T>(key: K, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key);
    const p = (prev ? prev.then(fn, fn) : fn()) as Promise<T>;
    const tail = p.catch(() => undefined);
    this.tails.set(key, tail);
    try {
      return await p;
    } finally {
      // The last one out removes the key, so the map holds only keys in use.
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
