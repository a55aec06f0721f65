/**
 * The records a job works through, read as a stream: a data file (through the
 * one data-file reader, engine/flow/data-file.ts: CSV with a header line, a
 * JSON array, JSON Lines; YAML is read whole) followed by inline items. A
 * 1,000,000-row file is never held in memory: rows are parsed and handed over
 * one by one, each with its place in the file for the report and errors.
 */
import { FlowError, isMsgflowError } from '../../api/errors.js';
import type { ActionContext } from '../../engine/action.js';
import { streamRecords } from '../../engine/flow/data-file.js';

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
export async function* readRows(ctx: ActionContext, action: string, source: RowSource): AsyncGenerator<SourcedRow> {
  let index = 0;
  if (source.file !== undefined) {
    try {
      for await (const r of streamRecords(ctx.resolvePath(source.file), source.file)) yield { ...r, index: index++ };
    } catch (e) {
      // DATA_FILE_INVALID says `<file>[:line]: <what is wrong>`.
      const reason = isMsgflowError(e) ? e.message : `cannot read ${source.file}: ${(e as Error).message}`;
      throw new FlowError('ACTION_INPUT_INVALID', { action, field: 'file', reason }, { cause: e });
    }
  }
  const base = index;
  for (const [i, value] of (source.items ?? []).entries()) yield { value, where: `items[${i}]`, index: base + i };
}

/** How many records a source holds (a streaming pass: for progress totals). */
export async function countRows(ctx: ActionContext, action: string, source: RowSource): Promise<number> {
  let n = 0;
  for await (const _ of readRows(ctx, action, { file: source.file })) n++;
  return n + (source.items?.length ?? 0);
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
 * The report's error text of a duplicate row: the place of the row that wins,
 * as the report's `where` column names it.
 * @example duplicateOf('data/leads.csv:2') // 'duplicate of data/leads.csv:2'
 */
export function duplicateOf(firstWhere: string): string {
  return `duplicate of ${firstWhere}`;
}
