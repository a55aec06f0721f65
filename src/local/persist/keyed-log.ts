/**
 * A keyed collection kept as an append-only JSON Lines file plus an index in
 * memory (contacts, phonebook, account checks): a write appends one line, so
 * its cost does not depend on how much is stored, and a restart replays the
 * file into the index.
 *
 * Every line has exactly two members, the key first and one short field
 * naming what the line says about it:
 *
 *     {"k":79001112233,"cp":{"f":"Alice","u":1767225600000}}
 *     {"k":"user:alice","v":{"e":1,"p":79001112233,"t":1767225600000}}
 *
 * Keys are numbers (phone numbers: no string per record in memory) or
 * strings. The loader reads this shape without a general JSON parser (a
 * million lines in well under a second) and keeps a value's JSON text as
 * it is; a line of any other shape is parsed as JSON and refused, naming the
 * file and line, if it is not `{k, <field>}`.
 *
 * When the file holds many more lines than the index has live records, it is
 * compacted: rewritten from the index into a temp file that replaces it by
 * rename (see AppendLog.rewrite in src/util/append-log.ts), so a crash
 * leaves the old or the new file.
 */
import { MsgflowError } from '../../api/errors.js';
import type { AppendLog } from '../../util/append-log.js';
import { localLog, readLocal } from './append-log.js';

export type Key = number | string;

/** One line: key, field, and the value as JSON text. */
export type KeyedEntry = [key: Key, field: string, raw: string];

/** What a collection tells the log. */
export interface KeyedState {
  /**
   * Replays one line (at load) or applies one just written. `raw` is the
   * value's JSON text, or, at load, the number itself when the value is a
   * plain integer (no string is made for it).
   */
  apply(key: Key, field: string, raw: string | number, where: string): void;
  /** The lines that rebuild the current index (each ending in `\n`). */
  snapshot(): Iterable<string>;
  /** How many lines the snapshot has (live records). */
  readonly liveLines: number;
}

/** One line of a keyed log. */
export function keyedLine(key: Key, field: string, raw: string): string {
  return `{"k":${typeof key === 'number' ? String(key) : JSON.stringify(key)},"${field}":${raw}}\n`;
}

/** Compaction starts when the file has this many more lines than the index needs, and more than twice as many. */
const MIN_GARBAGE = 10_000;

export class KeyedLog {
  private readonly log: AppendLog;
  private lines = 0;
  private compacting = false;

  constructor(
    file: string,
    readonly shown: string,
    private readonly state: KeyedState,
  ) {
    this.log = localLog(file, shown);
  }

  /**
   * Replays the file into the state; false when there is no file.
   * @throws MsgflowError LOCAL_DATA_INVALID naming the file and line
   */
  async load(): Promise<boolean> {
    let lines = 0;
    // Reused for every line, so a million lines do not make a million result objects.
    const scratch: KeyedLine = { key: 0, field: '', raw: '' };
    const exists = await readLocal(this.log, (buf, start, end, _offset, line) => {
      lines++;
      const where = `${this.shown}:${line}`;
      const fast = parseKeyedLine(buf, start, end, scratch);
      if (fast) {
        this.state.apply(fast.key, fast.field, fast.raw, where);
        return;
      }
      let v: unknown;
      try {
        v = JSON.parse(buf.toString('utf8', start, end));
      } catch (e) {
        return `not a JSON record (${(e as Error).message})`;
      }
      const o = v as Record<string, unknown>;
      const fields = v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.keys(o) : [];
      const k = o?.k;
      if (fields.length !== 2 || fields[0] !== 'k' || (typeof k !== 'number' && typeof k !== 'string')) {
        return 'expected a record {"k": key, "<field>": value}';
      }
      this.state.apply(k, fields[1]!, JSON.stringify(o[fields[1]!]), where);
    });
    this.lines = lines;
    // Best effort: a data dir that cannot be written (read-only) still starts;
    // the write that follows then fails and says so.
    if (this.needsCompaction()) await this.compact().catch(() => undefined);
    return exists;
  }

  /**
   * Appends one line per entry `[key, field, value JSON]` and then, once they
   * are in the file, applies them to the state: memory changes only after
   * the disk did.
   * @throws MsgflowError LOCAL_WRITE_FAILED (nothing changed in memory)
   */
  async write(entries: KeyedEntry[]): Promise<void> {
    const data = entries.map(([k, f, raw]) => keyedLine(k, f, raw)).join('');
    try {
      await this.log.append(data, () => {
        this.lines += entries.length;
        for (const [k, f, raw] of entries) this.state.apply(k, f, raw, this.shown);
      });
    } catch (e) {
      throw new MsgflowError('LOCAL_WRITE_FAILED', { file: this.shown, reason: (e as Error).message }, { cause: e });
    }
    if (this.needsCompaction()) void this.compact().catch(() => undefined);
  }

  /** Rewrites the file from the index (temp file + rename). */
  async compact(): Promise<void> {
    if (this.compacting) return;
    this.compacting = true;
    let written = 0;
    const state = this.state;
    try {
      await this.log.rewrite(
        function* () {
          for (const l of state.snapshot()) {
            written++;
            yield l;
          }
        },
        () => (this.lines = written),
      );
    } finally {
      this.compacting = false;
    }
  }

  private needsCompaction(): boolean {
    const live = this.state.liveLines;
    return this.lines - live > MIN_GARBAGE && this.lines > 2 * live;
  }
}

/**
 * `{"k":<digits or JSON string>,"<field>":<value>}` read straight from the
 * bytes; undefined when the line has another shape (the caller then parses
 * it as JSON). The value's text is taken as it is; only its first and last
 * characters are checked.
 */
/** One line's record, read by parseKeyedLine into an object its caller owns and reuses. */
interface KeyedLine {
  key: Key;
  field: string;
  raw: string | number;
}

function parseKeyedLine(buf: Buffer, start: number, end: number, into: KeyedLine): KeyedLine | undefined {
  // {"k":
  if (
    end - start < 10 ||
    buf[start] !== 123 ||
    buf[start + 1] !== 34 ||
    buf[start + 2] !== 107 ||
    buf[start + 3] !== 34 ||
    buf[start + 4] !== 58
  ) {
    return undefined;
  }
  let p = start + 5;
  let key: Key;
  if (buf[p]! >= 48 && buf[p]! <= 57) {
    let n = 0;
    const first = p;
    while (p < end && buf[p]! >= 48 && buf[p]! <= 57) n = n * 10 + (buf[p++]! - 48);
    if (p - first > 15 || (p - first > 1 && buf[first] === 48)) return undefined;
    key = n;
  } else if (buf[p] === 34) {
    const q = p;
    p++;
    while (p < end && buf[p] !== 34) {
      if (buf[p] === 92) return undefined; // an escape: leave it to JSON.parse
      p++;
    }
    if (p >= end) return undefined;
    key = buf.toString('utf8', q + 1, p);
    p++;
  } else {
    return undefined;
  }
  // ,"field":
  if (buf[p] !== 44 || buf[p + 1] !== 34) return undefined;
  const f0 = p + 2;
  p = f0;
  while (p < end && ((buf[p]! >= 97 && buf[p]! <= 122) || (buf[p]! >= 65 && buf[p]! <= 90))) p++;
  if (p === f0 || buf[p] !== 34 || buf[p + 1] !== 58) return undefined;
  const field = fieldName(buf, f0, p);
  const v0 = p + 2;
  if (buf[end - 1] !== 125 || end - 1 <= v0) return undefined;
  const c = buf[v0]!;
  const last = buf[end - 2]!;
  // The value must look whole: an object, a string, a number, or a literal.
  const ok =
    (c === 123 && last === 125) ||
    (c === 34 && last === 34) ||
    ((c === 45 || (c >= 48 && c <= 57)) && last >= 48 && last <= 57) ||
    ((c === 116 || c === 102 || c === 110) && (last === 101 || last === 108));
  if (!ok) return undefined;
  if (c >= 48 && c <= 57 && end - 1 - v0 <= 15) {
    let n = 0;
    let q = v0;
    while (q < end - 1 && buf[q]! >= 48 && buf[q]! <= 57) n = n * 10 + (buf[q++]! - 48);
    if (q === end - 1) return fill(into, key, field, n);
  }
  return fill(into, key, field, buf.toString('utf8', v0, end - 1));
}

function fill(into: KeyedLine, key: Key, field: string, raw: string | number): KeyedLine {
  into.key = key;
  into.field = field;
  into.raw = raw;
  return into;
}

/** Field names are one or two letters: their strings are made once, not once per line. */
// cache: keyed by the name's own one or two bytes, and the value is those bytes as text: the same for every log
const FIELD_NAMES = new Map<number, string>();

function fieldName(buf: Buffer, from: number, to: number): string {
  if (to - from > 2) return buf.toString('latin1', from, to);
  const code = buf[from]! | ((to - from === 2 ? buf[from + 1]! : 0) << 8);
  let name = FIELD_NAMES.get(code);
  if (name === undefined) {
    name = buf.toString('latin1', from, to);
    FIELD_NAMES.set(code, name);
  }
  return name;
}
