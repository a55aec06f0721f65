/**
 * The rows a job met, by record key: which row met a key first (a later
 * duplicate names it). At a million phone numbers a `Map` costs ~80 bytes an
 * entry; numbers (the common key: a phone as a positive integer) are kept
 * here in typed arrays instead, open addressing with linear probing, 16
 * bytes a slot at most half full: ~32-64 bytes an entry. Any other key (a
 * username, a chatId, a row position) goes to a `Map`.
 */

/** Slots to start with (a power of two). */
const INITIAL = 1024;

/** @example const seen = new RowIndex<number | string>(); seen.set(79001112233, 0); seen.get(79001112233); // 0 */
export class RowIndex<K extends number | string> {
  /** Keys of the numeric slots; 0 marks a free slot (a numeric key here is always > 0). */
  private keys = new Float64Array(INITIAL);
  private rows = new Float64Array(INITIAL);
  private used = 0;
  private readonly other = new Map<K, number>();

  /** The row that met `key`, or undefined. */
  get(key: K): number | undefined {
    if (!RowIndex.packable(key)) return this.other.get(key);
    const s = this.slot(key as number);
    return this.keys[s] === key ? this.rows[s] : undefined;
  }

  /** Records that row `row` met `key`. */
  set(key: K, row: number): void {
    if (!RowIndex.packable(key)) {
      this.other.set(key, row);
      return;
    }
    const k = key as number;
    let s = this.slot(k);
    if (this.keys[s] !== k) {
      if ((this.used + 1) * 2 > this.keys.length) {
        this.grow();
        s = this.slot(k);
      }
      this.keys[s] = k;
      this.used++;
    }
    this.rows[s] = row;
  }

  /** Keys met. */
  get size(): number {
    return this.used + this.other.size;
  }

  /** A positive integer below 2^53: stored in the typed arrays. */
  private static packable(key: unknown): boolean {
    return typeof key === 'number' && key > 0 && Number.isSafeInteger(key);
  }

  /** The slot holding `k`, or the free slot where it goes. */
  private slot(k: number): number {
    const mask = this.keys.length - 1;
    // The low and high 32 bits mixed (murmur3's finaliser constants): phone numbers share long prefixes.
    let h = Math.imul((k >>> 0) ^ Math.imul(Math.floor(k / 4294967296), 0x85ebca6b), 0x9e3779b1);
    h ^= h >>> 15;
    let s = h & mask;
    while (this.keys[s] !== 0 && this.keys[s] !== k) s = (s + 1) & mask;
    return s;
  }

  private grow(): void {
    const keys = this.keys;
    const rows = this.rows;
    this.keys = new Float64Array(keys.length * 2);
    this.rows = new Float64Array(keys.length * 2);
    for (let i = 0; i < keys.length; i++) {
      if (keys[i] === 0) continue;
      const s = this.slot(keys[i]!);
      this.keys[s] = keys[i]!;
      this.rows[s] = rows[i]!;
    }
  }
}
