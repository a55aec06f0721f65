/**
 * The records a job works through, read as a stream: a data file (CSV with a
 * header line, a JSON array, JSON Lines; YAML is read whole) followed by
 * inline items. A 1,000,000-row file is never held in memory: rows are parsed
 * and handed over one by one.
 */
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { extname } from 'node:path';
import { createInterface } from 'node:readline';
import { parse as parseCsv } from 'csv-parse';
import { JSONParser } from '@streamparser/json-node';
import { FlowError } from '../../api/errors.js';
import type { ActionContext } from '../../engine/action.js';
import { DATA_FILE_EXTENSIONS, readDataFile } from '../../engine/flow/data-file.js';

export interface RowSource {
  /** Data file, relative to the project (config file's directory). */
  file?: string;
  /** Inline records, read after the file's. */
  items?: readonly unknown[];
}

/** A record and where it came from, for messages such as `data/leads.csv row 4`. */
export interface SourcedRow {
  value: unknown;
  /** `data/leads.csv row 4` (1-based, header not counted) or `items[2]`. */
  where: string;
  /** 0-based position over file and items together. */
  index: number;
}

function inputError(action: string, field: string, reason: string, cause?: unknown): FlowError {
  return new FlowError('ACTION_INPUT_INVALID', { action, field, reason }, cause === undefined ? {} : { cause });
}

/**
 * Streams the records of a source, file first, then items.
 *
 * @throws FlowError ACTION_INPUT_INVALID naming the file (and line) that cannot be read.
 * @example for await (const row of readRows(ctx, 'my.job', { file: input.file, items: input.items })) ...
 */
export async function* readRows(ctx: ActionContext, action: string, source: RowSource): AsyncGenerator<SourcedRow> {
  let index = 0;
  if (source.file !== undefined) {
    for await (const value of fileRecords(ctx.resolvePath(source.file), source.file, action)) {
      yield { value, where: `${source.file} row ${index + 1}`, index };
      index++;
    }
  }
  const base = index;
  for (const [i, value] of (source.items ?? []).entries()) yield { value, where: `items[${i}]`, index: base + i };
}

/** How many records a source holds (a streaming pass: for progress totals). */
export async function countRows(ctx: ActionContext, action: string, source: RowSource): Promise<number> {
  let n = 0;
  if (source.file !== undefined) for await (const _ of fileRecords(ctx.resolvePath(source.file), source.file, action)) n++;
  return n + (source.items?.length ?? 0);
}

async function* fileRecords(abs: string, shown: string, action: string): AsyncGenerator<unknown> {
  const ext = extname(abs).toLowerCase();
  if (!(DATA_FILE_EXTENSIONS as readonly string[]).includes(ext)) {
    throw inputError(action, 'file', `${shown}: unsupported data file type '${ext || '(none)'}': use ${DATA_FILE_EXTENSIONS.join(', ')}`);
  }
  try {
    await stat(abs);
  } catch (e) {
    throw inputError(action, 'file', `cannot read ${shown}: data file not found`, e);
  }
  try {
    if (ext === '.csv') yield* csvRecords(abs);
    else if (ext === '.jsonl' || ext === '.ndjson') yield* jsonLines(abs, shown);
    else if (ext === '.json') yield* jsonArray(abs, shown);
    else yield* yamlRecords(abs, shown);
  } catch (e) {
    if (e instanceof FlowError) throw e;
    throw inputError(action, 'file', `cannot read ${shown}: ${(e as Error).message}`, e);
  }

  async function* yamlRecords(file: string, name: string): AsyncGenerator<unknown> {
    const data = await readDataFile(file);
    if (!Array.isArray(data)) throw notAList(name);
    yield* data;
  }

  function notAList(name: string): FlowError {
    return inputError(action, 'file', `${name} must hold a list of records (CSV rows, a JSON array, JSON Lines or a YAML sequence)`);
  }

  async function* jsonArray(file: string, name: string): AsyncGenerator<unknown> {
    if ((await firstChar(file)) !== '[') throw notAList(name);
    const parser = new JSONParser({ paths: ['$.*'], keepStack: false });
    const stream = createReadStream(file).pipe(parser);
    for await (const chunk of stream as AsyncIterable<{ value: unknown }>) yield chunk.value;
  }
}

async function* csvRecords(file: string): AsyncGenerator<unknown> {
  const parser = createReadStream(file).pipe(parseCsv({ columns: true, bom: true, skip_empty_lines: true, trim: true }));
  for await (const record of parser) yield record;
}

async function* jsonLines(file: string, shown: string): AsyncGenerator<unknown> {
  const lines = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
  let n = 0;
  for await (const raw of lines) {
    n++;
    const line = n === 1 ? raw.replace(/^\uFEFF/, '').trim() : raw.trim();
    if (line === '') continue;
    try {
      yield JSON.parse(line);
    } catch (e) {
      throw new Error(`${shown}:${n}: bad JSON line: ${(e as Error).message}`, { cause: e });
    }
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

/**
 * The report's error text of a duplicate row: the row that wins, counted from
 * 1 over the job's input (a file's rows, then inline items), so a file's row
 * numbers are its own.
 * @example duplicateOf(0) // 'duplicate of row 1'
 */
export function duplicateOf(firstIndex: number): string {
  return `duplicate of row ${firstIndex + 1}`;
}
