/**
 * A Map of at most `max` entries: adding a new key to a full map drops the
 * oldest-added one (a Map iterates in insertion order). For caches of what
 * clients send over and over (tokens, request paths, request-targets): a
 * client sending endless new keys churns such a cache instead of growing it.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  /** @param max how many entries it keeps, at least 1 */
  constructor(private readonly max: number) {
    super();
  }

  override set(key: K, value: V): this {
    if (this.size >= this.max && !this.has(key)) this.delete(this.keys().next().value!);
    return super.set(key, value);
  }
}
