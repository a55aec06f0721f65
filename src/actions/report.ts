/**
 * Job report files: CSV (one row per record, for spreadsheets) or JSON
 * (summary + rows, for programs), chosen by the file's extension. Written
 * to a temporary file and renamed, so a reader never sees half a report and
 * a crash leaves the previous report intact.
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, extname } from 'node:path';
import { randomBytes } from 'node:crypto';
import { FlowError } from '../api/errors.js';
import type { ActionContext } from '../engine/action.js';

export interface ReportContent {
  action: string;
  runId: string;
  generatedAt: number;
  summary: Record<string, unknown>;
  rows: readonly Record<string, unknown>[];
}

export const REPORT_FORMATS = ['.csv', '.json'] as const;

/** Checks the extension up front, so a typo fails before the job does any work. */
export function reportFormat(action: string, path: string): 'csv' | 'json' {
  const ext = extname(path).toLowerCase();
  if (ext === '.csv') return 'csv';
  if (ext === '.json') return 'json';
  throw new FlowError('ACTION_INPUT_INVALID', {
    action,
    field: 'report',
    reason: `'${path}' must end in .csv or .json (the extension picks the format)`,
  });
}

export async function writeReport(absPath: string, content: ReportContent): Promise<void> {
  const format = reportFormat(content.action, absPath);
  const text =
    format === 'json'
      ? JSON.stringify({ ...content, generatedAt: new Date(content.generatedAt).toISOString() }, null, 2) + '\n'
      : toCsv(content.rows);
  await mkdir(dirname(absPath), { recursive: true });
  const tmp = `${absPath}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(tmp, text, 'utf8');
  await rename(tmp, absPath);
}

/** RFC 4180 CSV; columns in first-seen order across all rows. */
export function toCsv(rows: readonly Record<string, unknown>[]): string {
  const cols: string[] = [];
  const seen = new Set<string>();
  for (const r of rows) {
    for (const k of Object.keys(r)) {
      if (seen.has(k)) continue;
      seen.add(k);
      cols.push(k);
    }
  }
  const lines = [cols.map(cell).join(',')];
  for (const r of rows) lines.push(cols.map((c) => cell(r[c])).join(','));
  return lines.join('\r\n') + '\r\n';
}

function cell(v: unknown): string {
  if (v === undefined || v === null) return '';
  let s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  // A cell starting with `=` (or `+ - @` followed by a function call) is run as
  // a formula by spreadsheets; names come from outside, so neutralise it.
  // Phone numbers such as `+7 (900) 111-22-33` are left alone.
  if (/^=/.test(s) || /^[+\-@]\s*[A-Za-z_][\w.]*\s*\(/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** `reports/<flow>-<step>-<runId>.<ext>`: one report per run, never overwritten by another run. */
export function defaultReport(ctx: ActionContext, ext: 'csv' | 'json'): string {
  const safe = (s: string) => s.replace(/[^A-Za-z0-9_.-]/g, '_');
  return `reports/${safe(ctx.run.flow)}-${safe(ctx.run.step)}-${safe(ctx.run.id)}.${ext}`;
}
