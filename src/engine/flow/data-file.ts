/**
 * Reads data files: CSV (a header row, one object per line), JSON, JSON Lines
 * or YAML, chosen by extension. There is one reader: {@link streamRecords}
 * hands a file's records over one by one, each with where it stands in the
 * file (`data/leads.csv:4`, the line as an editor numbers it), so that jobs
 * read a million rows without holding them and a report or an error names
 * the row the user can find; {@link readDataFile} is the same reader
 * gathered into one value (a flow input held by the run). CSV values stay
 * strings (phone numbers must not lose leading digits or precision); the API
 * schemas accept digit strings where numbers are expected.
 *
 * A job reads its input through {@link readRows} (a file's records, then
 * inline items, each with its place): the row is parsed here once and
 * handed to the job by the same module, with no layer in between.
 */
import { createReadStream } from 'node:fs';
import { open, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { Parser as CsvParser } from 'csv-parse';
import { FlowError, isMsgflowError, MsgflowError } from '../../api/errors.js';
import type { ActionContext } from '../action.js';
import { parseYamlSource } from '../../util/yaml-source.js';

export interface DataFileOptions {
  /** Refuse bigger files. @default 268435456 (256 MiB) */
  maxBytes?: number;
}

export const DATA_FILE_EXTENSIONS = ['.csv', '.json', '.jsonl', '.ndjson', '.yaml', '.yml'] as const;

function fail(file: string, reason: string, cause?: unknown): MsgflowError {
  return new MsgflowError('DATA_FILE_INVALID', { file, reason }, cause === undefined ? {} : { cause });
}

/** A record of a data file and where it stands. */
export interface FileRecord {
  value: unknown;
  /**
   * `data/leads.csv:4` (the line the row starts on, header and blank lines
   * counted, as an editor shows it) for CSV and JSON Lines; `data/leads.json[3]`
   * (0-based) for a JSON array or YAML list, whose elements have no line of their own.
   */
  where: string;
}

/** `file`'s extension, checked against the readable ones. */
function extensionOf(file: string, shown: string): string {
  const ext = path.extname(file).toLowerCase();
  if (!(DATA_FILE_EXTENSIONS as readonly string[]).includes(ext)) {
    throw fail(shown, `unsupported data file type '${ext || '(none)'}': use ${DATA_FILE_EXTENSIONS.join(', ')}`);
  }
  return ext;
}

async function sizeOf(file: string, shown: string): Promise<number> {
  try {
    return (await stat(file)).size;
  } catch (e) {
    throw fail(shown, 'data file not found', e);
  }
}

/**
 * Streams the records of a data file, each with its place (see {@link FileRecord}):
 * CSV, JSON Lines and a JSON array as they are read, YAML whole (it cannot be streamed).
 *
 * @param file the file's path to open
 * @param shown how messages and `where` name it (the path the user wrote). @default file
 * @throws MsgflowError DATA_FILE_INVALID naming the file, and the line where there is one
 * @example for await (const { value, where } of streamRecords('/p/data/leads.csv', 'data/leads.csv')) ...
 */
export async function* streamRecords(file: string, shown = file, options: DataFileOptions = {}): AsyncGenerator<FileRecord> {
  const ext = extensionOf(file, shown);
  const size = await sizeOf(file, shown);
  if (ext === '.csv') return yield* csvRecords(file, shown);
  if (ext === '.jsonl' || ext === '.ndjson') return yield* jsonLines(file, shown);
  if (ext === '.json' && (await firstChar(file)) === '[') return yield* jsonArray(file, shown);
  const maxBytes = options.maxBytes ?? MAX_BYTES;
  if (size > maxBytes) throw fail(shown, `${size} bytes is more than the ${maxBytes} bytes a data file may have`);
  const data = await wholeDocument(file, shown, ext, maxBytes);
  if (!Array.isArray(data)) throw fail(shown, 'must hold a list of records (CSV rows, a JSON array, JSON Lines or a YAML sequence)');
  for (const [i, value] of data.entries()) yield { value, where: `${shown}[${i}]` };
}

const MAX_BYTES = 256 * 1024 * 1024;

/**
 * A data file as one value: the records of CSV and JSON Lines (read by
 * {@link streamRecords}), the document of JSON and YAML (which may be an
 * object, not a list).
 */
export async function readDataFile(file: string, options: DataFileOptions = {}): Promise<unknown> {
  const ext = extensionOf(file, file);
  const maxBytes = options.maxBytes ?? MAX_BYTES;
  const size = await sizeOf(file, file);
  if (size > maxBytes) throw fail(file, `${size} bytes is more than the ${maxBytes} bytes a data file may have`);
  if (ext === '.json' || ext === '.yaml' || ext === '.yml') return wholeDocument(file, file, ext, maxBytes);
  const rows: unknown[] = [];
  for await (const r of streamRecords(file, file, options)) rows.push(r.value);
  return rows;
}

async function wholeDocument(file: string, shown: string, ext: string, maxBytes: number): Promise<unknown> {
  let text = await readFile(file, 'utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (ext !== '.json') return parseYamlSource(text, file, { maxBytes }).value; // same protections as flow files (alias bombs)
  try {
    return JSON.parse(text);
  } catch (e) {
    throw fail(shown, `bad JSON: ${(e as Error).message}`, e);
  }
}

/** Resolves once `stream` has something to read, ended or failed (the caller then reads `errored`). */
function readableOrEnd(stream: Readable): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off('readable', done);
      stream.off('end', done);
      stream.off('error', done);
      stream.off('close', done);
      resolve();
    };
    stream.on('readable', done);
    stream.on('end', done);
    stream.on('error', done);
    stream.on('close', done);
  });
}

/** A CSV record and the parser's line counts as it ended: what csv-parse's `info` option gives of it. */
interface LinedRecord {
  record: unknown;
  lines: number;
  emptyLines: number;
}

/**
 * csv-parse's parser, each record pushed with the line counts it ended on.
 * Its `info: true` gives them too, in a copy of every counter and option
 * the parser keeps, made twice per record: 4 % of a bulk job's CPU; and the
 * parser buffers a chunk's records (thousands) while the job works on them,
 * so each info object outlived the young generation: a campaign's passes
 * promoted hundreds of MB of them to the old one. The parser pushes a record
 * as soon as it ends it, so its `info` then holds the same counts.
 */
class LinedCsvParser extends CsvParser {
  override push(chunk: unknown, encoding?: BufferEncoding): boolean {
    if (chunk === null) return super.push(chunk, encoding);
    const row: LinedRecord = { record: chunk, lines: this.info.lines, emptyLines: this.info.empty_lines };
    return super.push(row, encoding);
  }
}

/**
 * How much of a CSV file is read, and parsed, at once. The parser turns a
 * whole chunk into rows before the first is consumed, and a job that works
 * on a row for a while (a campaign's send) keeps the rest of the chunk
 * waiting across young-generation GCs, which move them to the old
 * generation: with the stream's 64 KB, every row of a campaign's send pass
 * (3,000-odd rows a chunk) reached it, garbage for the next full GC. 4 KB
 * (~200 short rows) keeps a chunk's rows young.
 */
const CSV_CHUNK_BYTES = 4096;

/**
 * CSV rows with the line each starts on: csv-parse reports the line a record
 * ends on, so a record starts after the previous one's end and the blank
 * lines skipped since (a quoted cell may span lines).
 */
async function* csvRecords(file: string, shown: string): AsyncGenerator<FileRecord> {
  const input = createReadStream(file, { highWaterMark: CSV_CHUNK_BYTES });
  const parser = input.pipe(
    new LinedCsvParser({ columns: true, bom: true, skip_empty_lines: true, trim: true, relax_column_count: false }),
  );
  // The parser goes on reading while the consumer works on a row: an error it meets then (a bad
  // last record found when the file ends) is read from `parser.errored` at the next read, and
  // must not be an unhandled 'error' event that ends the process. Likewise after an early return.
  const keep = (): void => {};
  parser.on('error', keep);
  input.on('error', (e) => parser.destroy(e));
  let lastLine = 1; // the header's
  let blank = 0;
  try {
    // The parser's buffer read here directly, not through its async iterator: one generator per row, not two.
    for (;;) {
      const row = parser.read() as LinedRecord | null;
      if (row === null) {
        // The rows parsed before a bad one are read first; then its error, naming its line.
        if (parser.errored) throw parser.errored;
        if (parser.readableEnded) return;
        if (parser.destroyed) throw new Error('the reader closed before the end of the file');
        await readableOrEnd(parser);
        continue;
      }
      const line = lastLine + 1 + (row.emptyLines - blank);
      lastLine = row.lines;
      blank = row.emptyLines;
      yield { value: row.record, where: `${shown}:${line}` };
    }
  } catch (e) {
    if (e instanceof MsgflowError) throw e;
    const line = (e as { lines?: unknown }).lines;
    throw fail(typeof line === 'number' ? `${shown}:${line}` : shown, `bad CSV: ${(e as Error).message}`, e);
  } finally {
    input.destroy();
    parser.destroy();
  }
}

async function* jsonLines(file: string, shown: string): AsyncGenerator<FileRecord> {
  const input = createReadStream(file, 'utf8');
  let n = 0;
  try {
    for await (const raw of createInterface({ input, crlfDelay: Infinity })) {
      n++;
      const line = n === 1 ? raw.replace(/^\uFEFF/, '').trim() : raw.trim();
      if (line === '') continue;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (e) {
        throw fail(`${shown}:${n}`, `bad JSON line: ${(e as Error).message}`, e);
      }
      yield { value, where: `${shown}:${n}` };
    }
  } finally {
    input.destroy();
  }
}

async function* jsonArray(file: string, shown: string): AsyncGenerator<FileRecord> {
  // The streaming parser when a JSON array is read, not whenever flows are loaded.
  const { JSONParser } = await import('@streamparser/json-node');
  const input = createReadStream(file);
  const stream = input.pipe(new JSONParser({ paths: ['$.*'], keepStack: false }));
  let i = 0;
  try {
    for await (const chunk of stream as AsyncIterable<{ value: unknown }>) yield { value: chunk.value, where: `${shown}[${i++}]` };
  } catch (e) {
    throw fail(shown, `bad JSON: ${(e as Error).message}`, e);
  } finally {
    input.destroy();
  }
}

/** The first non-blank character of a file (a BOM skipped). */
async function firstChar(file: string): Promise<string | undefined> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(256);
    const { bytesRead } = await fh.read(buf, 0, 256, 0);
    return buf
      .subarray(0, bytesRead)
      .toString('utf8')
      .replace(/^\uFEFF/, '')
      .trimStart()[0];
  } finally {
    await fh.close();
  }
}

// ---- a job's rows: the file's records, then inline items -------------------

export interface RowSource {
  /** Data file, relative to the project (config file's directory). */
  file?: string;
  /** Inline records, read after the file's. */
  items?: readonly unknown[];
}

/** A record and where it came from, for reports and messages. */
export interface SourcedRow {
  value: unknown;
  /** `data/leads.csv:4` (the file's line), `data/leads.json[3]` (an element of a JSON array or YAML list), or `items[2]`. */
  where: string;
  /** 0-based position over file and items together. */
  index: number;
}

/**
 * Streams the records of a source, file first, then items.
 *
 * @throws FlowError ACTION_INPUT_INVALID naming the file (and line) that cannot be read.
 * @example for await (const row of readRows(ctx, 'my.job', { file: input.file, items: input.items })) ...
 */
export async function* readRows(ctx: Pick<ActionContext, 'resolvePath'>, action: string, source: RowSource): AsyncGenerator<SourcedRow> {
  let index = 0;
  if (source.file !== undefined) {
    try {
      for await (const r of streamRecords(ctx.resolvePath(source.file), source.file))
        yield { value: r.value, where: r.where, index: index++ };
    } catch (e) {
      // DATA_FILE_INVALID says `<file>[:line]: <what is wrong>`.
      const reason = isMsgflowError(e) ? e.message : `cannot read ${source.file}: ${(e as Error).message}`;
      throw new FlowError('ACTION_INPUT_INVALID', { action, field: 'file', reason }, { cause: e });
    }
  }
  const base = index;
  for (const [i, value] of (source.items ?? []).entries()) yield { value, where: `items[${i}]`, index: base + i };
}

/**
 * How many records a source holds (for progress totals): a CSV file by a
 * scan of its bytes ({@link countCsvRecords}), anything else, or a CSV file
 * the scan is not sure of, by a streaming pass of the reader.
 */
export async function countRows(ctx: Pick<ActionContext, 'resolvePath'>, action: string, source: RowSource): Promise<number> {
  const items = source.items?.length ?? 0;
  if (source.file !== undefined && path.extname(source.file).toLowerCase() === '.csv') {
    const n = await countCsvRecords(ctx.resolvePath(source.file)).catch(() => undefined);
    if (n !== undefined) return n + items;
  }
  let n = 0;
  for await (const _ of readRows(ctx, action, { file: source.file })) n++;
  return n + items;
}

/**
 * The records of a CSV file as {@link csvRecords} reads them, counted from
 * its bytes without parsing cells: a record per line holding anything, the
 * header not counted, a quoted cell's line breaks inside its record. Counting
 * through csv-parse cost as much as reading the rows a second time. Returns
 * undefined (the caller counts with the reader, which also reports what is
 * wrong) for anything only csv-parse decides: a line of blanks, a lone CR,
 * mixed line ends, a quote inside an unquoted cell or text after a closing
 * one, a record whose cells do not match the header's.
 *
 * @param chunkBytes bytes read at a time. @default 262144
 */
export async function countCsvRecords(file: string, chunkBytes = 1 << 18): Promise<number | undefined> {
  const scan = new CsvCount();
  for await (const chunk of createReadStream(file, { highWaterMark: chunkBytes }) as AsyncIterable<Buffer>) {
    if (!scan.feed(chunk)) return undefined;
  }
  return scan.end();
}

const BOM = [0xef, 0xbb, 0xbf];

/** The byte scan of {@link countCsvRecords}. */
class CsvCount {
  private records = 0;
  /** Cells of the header (the first record); of the current record so far. */
  private width = 0;
  private cells = 1;
  private content = false;
  private blank = false;
  private quoted = false;
  /** The last byte closed a quoted cell. */
  private closed = false;
  private fieldStart = true;
  private cr = false;
  private lineEnd: 'lf' | 'crlf' | undefined;
  /** Bytes of the file's start matched against the BOM (3: past it). */
  private bom = 0;

  feed(buf: Buffer): boolean {
    for (let i = 0; i < buf.length; i++) {
      if (this.bom < 3 && buf[i] === BOM[this.bom]) {
        this.bom++;
        continue;
      }
      this.bom = 3;
      if (!this.byte(buf[i]!)) return false;
    }
    return true;
  }

  end(): number | undefined {
    if (this.quoted || this.cr || (this.blank && !this.content)) return undefined;
    if (this.content && !this.endRecord()) return undefined;
    return Math.max(0, this.records - 1);
  }

  private byte(c: number): boolean {
    if (this.cr && c !== 0x0a) return false;
    if (this.quoted) {
      if (c === 0x22) {
        this.quoted = false;
        this.closed = true;
      }
      return true;
    }
    if (this.closed) {
      this.closed = false;
      // "" inside a quoted cell: it goes on; after it only a separator or a line end.
      if (c === 0x22) return (this.quoted = true);
      if (c !== 0x2c && c !== 0x0d && c !== 0x0a) return false;
    }
    if (c === 0x22) {
      if (!this.fieldStart) return false;
      this.quoted = this.content = true;
      this.fieldStart = false;
      return true;
    }
    if (c === 0x0d) return (this.cr = true);
    if (c === 0x0a) return this.endLine();
    if (c === 0x2c) {
      this.cells++;
      this.content = this.fieldStart = true;
      return true;
    }
    if (c === 0x20 || c === 0x09) this.blank = true;
    else this.content = true;
    this.fieldStart = false;
    return true;
  }

  private endLine(): boolean {
    const kind = this.cr ? 'crlf' : 'lf';
    if (this.lineEnd !== undefined && this.lineEnd !== kind) return false;
    this.lineEnd = kind;
    this.cr = false;
    if (!this.content) return !this.blank;
    return this.endRecord();
  }

  private endRecord(): boolean {
    if (this.records === 0) this.width = this.cells;
    else if (this.cells !== this.width) return false;
    this.records++;
    this.cells = 1;
    this.content = this.blank = false;
    this.fieldStart = true;
    return true;
  }
}

/** Reads a field by any of its usual spellings (`phone`, `Phone`, `phoneNumber`...). */
export function pickField(row: unknown, names: readonly string[]): unknown {
  if (row === null || typeof row !== 'object' || Array.isArray(row)) return undefined;
  const rec = row as Record<string, unknown>;
  for (const n of names) if (Object.hasOwn(rec, n) && rec[n] !== undefined && rec[n] !== '') return rec[n];
  for (const k of Object.keys(rec)) {
    const norm = k.toLowerCase().replace(/[\s_-]/g, '');
    for (const n of names) if (norm === n.toLowerCase() && rec[k] !== undefined && rec[k] !== '') return rec[k];
  }
  return undefined;
}

/** CSV cells are text: `true`, `yes`, `1` and `false`, `no`, `0` become booleans. */
export function parseBool(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  if (typeof v !== 'string') return undefined;
  const t = v.trim().toLowerCase();
  if (['true', 'yes', 'y', '1'].includes(t)) return true;
  if (['false', 'no', 'n', '0'].includes(t)) return false;
  return undefined;
}
