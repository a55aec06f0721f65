/**
 * The rows a job met, by record key: which row met a key first (a later
 * duplicate names it). At a million phone numbers a `Map` costs ~80 bytes an
 * entry; numbers (the common key: a phone as a positive integer) are kept
 * here in typed arrays instead (src/util/number-map.ts): 21-43 bytes an
 * entry. Any other key (a username, a chatId, a row position) goes to a `Map`.
 */
import { NumberMap } from '../../util/number-map.js';

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

/** Numbers by key: numeric keys in typed arrays (a NumberMap), others in a Map. */
class RowCodes<K extends number | string> {
  private readonly numbers = new NumberMap();
  private readonly other = new Map<K, number>();

  /** The row that met `key`, or undefined. */
  get(key: K): number | undefined {
    return NumberMap.fits(key) ? this.numbers.get(key) : this.other.get(key);
  }

  /** Records that row `row` met `key`. */
  set(key: K, row: number): void {
    if (NumberMap.fits(key)) this.numbers.set(key, row);
    else this.other.set(key, row);
  }

  /** Keys met. */
  get size(): number {
    return this.numbers.size + this.other.size;
  }
}
