/**
 * Maps to numbers that stay small at a million entries. A `Map` costs about
 * 80 bytes an entry with a number key above 2^31 (a boxed number), more with
 * a string key; the indexes of a bulk job (numbers met, cached checks, the
 * store's index of a cache namespace) hold an entry per phone number, so
 * these keep such keys in typed arrays instead: open addressing with linear
 * probing, 16 bytes a slot, at most three quarters full.
 *
 * - {@link NumberMap}: positive safe-integer keys (a phone number, an id).
 * - {@link TextKeyMap}: string keys; one made of a text and a number, with
 *   perhaps a short text after it (`n:79001112233`, `#12`,
 *   `r:79001112233@c.us`: a campaign's record and sticky sender per chat), is
 *   kept as that number in a {@link NumberMap} per text, any other in a `Map`.
 */

/** Slots to start with (a power of two). */
const INITIAL = 1024;

/**
 * Positive safe integer → number.
 * @example const m = new NumberMap(); m.set(79001112233, 1); m.get(79001112233); // 1
 */
export class NumberMap {
  /** Keys of the slots; 0 marks a free slot (a key is always > 0). */
  private keys = new Float64Array(INITIAL);
  private vals = new Float64Array(INITIAL);
  private used = 0;

  /** Whether `key` can be a key here: a positive integer below 2^53. */
  static fits(key: unknown): key is number {
    return typeof key === 'number' && key > 0 && Number.isSafeInteger(key);
  }

  get size(): number {
    return this.used;
  }

  get(key: number): number | undefined {
    const s = this.slot(key);
    return this.keys[s] === key ? this.vals[s] : undefined;
  }

  has(key: number): boolean {
    return this.keys[this.slot(key)] === key;
  }

  /** @throws RangeError when `key` does not {@link NumberMap.fits fit}. */
  set(key: number, value: number): void {
    if (!NumberMap.fits(key)) throw new RangeError(`NumberMap key must be a positive safe integer, got ${key}`);
    let s = this.slot(key);
    if (this.keys[s] !== key) {
      if ((this.used + 1) * 4 > this.keys.length * 3) {
        this.grow();
        s = this.slot(key);
      }
      this.keys[s] = key;
      this.used++;
    }
    this.vals[s] = value;
  }

  /** Removes `key`; false when it was not there. Later keys of its probe run move back (no tombstones). */
  delete(key: number): boolean {
    let hole = this.slot(key);
    if (this.keys[hole] !== key) return false;
    const mask = this.keys.length - 1;
    this.keys[hole] = 0;
    this.used--;
    for (let j = (hole + 1) & mask; this.keys[j] !== 0; j = (j + 1) & mask) {
      const home = this.home(this.keys[j]!);
      // The key at j stays unless its home lies cyclically after the hole and up to j.
      const stays = hole < j ? home > hole && home <= j : home > hole || home <= j;
      if (stays) continue;
      this.keys[hole] = this.keys[j]!;
      this.vals[hole] = this.vals[j]!;
      this.keys[j] = 0;
      hole = j;
    }
    return true;
  }

  /** Every entry, in no particular order. */
  *entries(): IterableIterator<[number, number]> {
    const keys = this.keys;
    const vals = this.vals;
    for (let i = 0; i < keys.length; i++) if (keys[i] !== 0) yield [keys[i]!, vals[i]!];
  }

  /** The slot a key hashes to. */
  private home(k: number): number {
    // The low and high 32 bits mixed (murmur3's finaliser constants): phone numbers share long prefixes.
    let h = Math.imul((k >>> 0) ^ Math.imul(Math.floor(k / 4294967296), 0x85ebca6b), 0x9e3779b1);
    h ^= h >>> 15;
    return h & (this.keys.length - 1);
  }

  /** The slot holding `k`, or the free slot where it goes. */
  private slot(k: number): number {
    const mask = this.keys.length - 1;
    let s = this.home(k);
    while (this.keys[s] !== 0 && this.keys[s] !== k) s = (s + 1) & mask;
    return s;
  }

  private grow(): void {
    const keys = this.keys;
    const vals = this.vals;
    this.keys = new Float64Array(keys.length * 2);
    this.vals = new Float64Array(keys.length * 2);
    for (let i = 0; i < keys.length; i++) {
      if (keys[i] === 0) continue;
      const s = this.slot(keys[i]!);
      this.keys[s] = keys[i]!;
      this.vals[s] = vals[i]!;
    }
  }
}

/** The longest text after a key's number that still makes it a numbered key (`@c.us`, `@g.us`). */
const MAX_SUFFIX = 8;

/**
 * A key's texts and number when it is a text, a number written as
 * JavaScript writes it (no leading zero, at most 15 digits) and a short text
 * without digits (a chat id's `@c.us`), else undefined. The texts are given
 * as one (`prefix`, NUL, `suffix`; a key with a NUL is never numbered), the
 * number map they share.
 */
function numbered(key: string): [string, number] | undefined {
  if (key.includes('\u0000')) return undefined;
  let end = key.length;
  while (end > 0 && key.length - end <= MAX_SUFFIX && !isDigit(key.charCodeAt(end - 1))) end--;
  if (key.length - end > MAX_SUFFIX) return undefined;
  let i = end;
  while (i > 0 && isDigit(key.charCodeAt(i - 1))) i--;
  const digits = end - i;
  if (digits === 0 || digits > 15 || (key.charCodeAt(i) === 0x30 && digits > 1)) return undefined;
  const n = Number(key.slice(i, end));
  if (!(n > 0)) return undefined;
  return [end === key.length ? key.slice(0, i) : `${key.slice(0, i)}\u0000${key.slice(end)}`, n];
}

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

/** The key of a number under its texts (the inverse of {@link numbered}). */
function numberedKey(texts: string, n: number): string {
  const cut = texts.indexOf('\u0000');
  return cut < 0 ? `${texts}${n}` : `${texts.slice(0, cut)}${n}${texts.slice(cut + 1)}`;
}

/**
 * String → number, compact for keys of a text and a number, with perhaps a
 * short text after it (see the file comment): at most {@link TextKeyMap.MAX_TEXTS} texts are kept so;
 * keys of further texts go to the `Map` with the rest.
 * @example const m = new TextKeyMap(); m.set('r:79001112233@c.us', 7); m.get('r:79001112233@c.us'); // 7
 */
export class TextKeyMap {
  static readonly MAX_TEXTS = 16;
  private readonly byText = new Map<string, NumberMap>();
  private readonly other = new Map<string, number>();
  private numbered = 0;

  get size(): number {
    return this.numbered + this.other.size;
  }

  get(key: string): number | undefined {
    const p = numbered(key);
    if (p) {
      const m = this.byText.get(p[0]);
      if (m) return m.get(p[1]);
    }
    return this.other.get(key);
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  set(key: string, value: number): void {
    const m = this.mapOf(key, true);
    if (!m) {
      this.other.set(key, value);
      return;
    }
    const before = m.map.size;
    m.map.set(m.n, value);
    this.numbered += m.map.size - before;
  }

  delete(key: string): boolean {
    const m = this.mapOf(key, false);
    if (m && m.map.delete(m.n)) {
      this.numbered--;
      return true;
    }
    return this.other.delete(key);
  }

  /** Every entry, in no particular order. */
  *entries(): IterableIterator<[string, number]> {
    for (const [text, m] of this.byText) for (const [n, v] of m.entries()) yield [numberedKey(text, n), v];
    yield* this.other.entries();
  }

  /** Every value, in no particular order. */
  *values(): IterableIterator<number> {
    for (const [, v] of this.entries()) yield v;
  }

  /** The number map a numbered key goes to (made when `make` and there is room for its text). */
  private mapOf(key: string, make: boolean): { map: NumberMap; n: number } | undefined {
    const p = numbered(key);
    if (!p) return undefined;
    let map = this.byText.get(p[0]);
    if (!map && make && this.byText.size < TextKeyMap.MAX_TEXTS && !this.other.has(key)) {
      map = new NumberMap();
      this.byText.set(p[0], map);
    }
    return map ? { map, n: p[1] } : undefined;
  }
}
