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

/**
 * Where a row stands (`data/leads.csv:4`, `items[2]`) as one number: the
 * row's number times 64 plus the index of its text around the number in a
 * small table (a job reads one file and its inline items: a few shapes).
 * A string per row would cost a `Map`'s worth again.
 */
export class Places {
  private readonly shapes: Array<[string, string]> = [];

  encode(where: string): number {
    const m = /^(.*?)(\d+)(\D*)$/.exec(where);
    const [head, n, tail] = m ? [m[1]!, Number(m[2]), m[3]!] : [where, 0, ''];
    let i = this.shapes.findIndex(([h, t]) => h === head && t === tail);
    if (i < 0) i = this.shapes.push([head, tail]) - 1;
    // More shapes than that would mean a where of another form: kept whole is not possible here.
    if (i >= 64 || !Number.isSafeInteger(n * 64)) throw new RangeError(`row place not encodable: ${where}`);
    return n * 64 + i;
  }

  decode(code: number): string {
    const [head, tail] = this.shapes[code % 64]!;
    const n = Math.floor(code / 64);
    return head === '' && tail === '' && n === 0 ? '' : `${head}${n}${tail}`;
  }
}

/**
 * The place of the row that met each key first (`seen.get(k)` → `data/leads.csv:4`).
 * @example const seen = new RowIndex<number | string>(); seen.set(79001112233, 'data/leads.csv:2'); seen.get(79001112233); // 'data/leads.csv:2'
 */
export class RowIndex<K extends number | string> {
  private readonly codes = new RowCodes<K>();
  private readonly places = new Places();

  get(key: K): string | undefined {
    const c = this.codes.get(key);
    return c === undefined ? undefined : this.places.decode(c);
  }

  set(key: K, where: string): void {
    this.codes.set(key, this.places.encode(where));
  }

  get size(): number {
    return this.codes.size;
  }
}

/** Numbers by key: numeric keys in typed arrays, others in a Map. */
class RowCodes<K extends number | string> {
  /** Keys of the numeric slots; 0 marks a free slot (a numeric key here is always > 0). */
  private keys = new Float64Array(INITIAL);
  private rows = new Float64Array(INITIAL);
  private used = 0;
  private readonly other = new Map<K, number>();

  /** The row that met `key`, or undefined. */
  get(key: K): number | undefined {
    if (!RowCodes.packable(key)) return this.other.get(key);
    const s = this.slot(key as number);
    return this.keys[s] === key ? this.rows[s] : undefined;
  }

  /** Records that row `row` met `key`. */
  set(key: K, row: number): void {
    if (!RowCodes.packable(key)) {
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
