/**
 * The records a job works through (numbers, contacts, recipients) come from a
 * data file (CSV with a header line, JSON, YAML) or inline in `with:`; both
 * may be given and are concatenated, file first.
 */
import { readDataFile } from '../util/data-file.js';
import { FlowError } from '../api/errors.js';
import type { ActionContext } from '../engine/action.js';

export interface RowSource {
  /** Data file, relative to the project (config file's directory). */
  file?: string;
  /** Inline records. */
  items?: readonly unknown[];
}

/** A record and where it came from, for messages such as `data/leads.csv row 4`. */
export interface SourcedRow {
  value: unknown;
  /** `data/leads.csv row 4` (1-based, header not counted) or `items[2]`. */
  where: string;
}

export async function loadRows(ctx: ActionContext, action: string, source: RowSource): Promise<SourcedRow[]> {
  const out: SourcedRow[] = [];
  if (source.file !== undefined) {
    const abs = ctx.resolvePath(source.file);
    let data: unknown;
    try {
      data = await readDataFile(abs);
    } catch (e) {
      throw new FlowError(
        'ACTION_INPUT_INVALID',
        { action, field: 'file', reason: `cannot read ${source.file}: ${(e as Error).message}` },
        { cause: e },
      );
    }
    if (!Array.isArray(data)) {
      throw new FlowError('ACTION_INPUT_INVALID', {
        action,
        field: 'file',
        reason: `${source.file} must hold a list of records (CSV rows, a JSON array or a YAML sequence)`,
      });
    }
    data.forEach((value, i) => out.push({ value, where: `${source.file} row ${i + 1}` }));
  }
  source.items?.forEach((value, i) => out.push({ value, where: `items[${i}]` }));
  return out;
}

/** Reads a field by any of its usual spellings (`phone`, `Phone`, `phoneNumber`...). */
export function pickField(row: unknown, names: readonly string[]): unknown {
  if (row === null || typeof row !== 'object' || Array.isArray(row)) return undefined;
  const rec = row as Record<string, unknown>;
  for (const n of names) if (rec[n] !== undefined && rec[n] !== '') return rec[n];
  const lower = new Map(Object.keys(rec).map((k) => [k.toLowerCase().replace(/[\s_-]/g, ''), k]));
  for (const n of names) {
    const k = lower.get(n.toLowerCase());
    if (k !== undefined && rec[k] !== undefined && rec[k] !== '') return rec[k];
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
