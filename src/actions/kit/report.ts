/**
 * Job reports, written row by row as records finish: CSV (one row per record,
 * for spreadsheets) or JSON (rows then summary, for programs), chosen by the
 * file's extension. The columns are fixed per job, so a report has the same
 * shape from run to run. A run killed half-way leaves a report holding the
 * rows written so far; on resume the job rebuilds it from its journal (the
 * record of what finished) and carries on, so no row is lost or doubled.
 *
 * CSV cells are escaped against spreadsheet formula injection (OWASP): a
 * cell starting with `=`, `+`, `-`, `@`, TAB or CR gets a leading `'`.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { dirname, extname } from 'node:path';
import { FlowError } from '../../api/errors.js';
import type { ActionContext } from '../../engine/action.js';

export type ReportFormat = 'csv' | 'json';

/** The report files a job writes: the extension picks the format. */
export const REPORT_EXTENSIONS: readonly string[] = ['.csv', '.json'];

/** Checks the extension up front, so a typo fails before the job does any work. */
export function reportFormat(action: string, path: string): ReportFormat {
  const ext = extname(path).toLowerCase();
  if (ext === '.csv') return 'csv';
  if (ext === '.json') return 'json';
  throw new FlowError('ACTION_INPUT_INVALID', {
    action,
    field: 'report',
    reason: `'${path}' must end in .csv or .json (the extension picks the format)`,
  });
}

/** `reports/<flow>-<step>-<runId>.<ext>`: one report per run, never overwritten by another run. */
export function defaultReport(ctx: ActionContext, ext: ReportFormat = 'csv'): string {
  const safe = (s: string) => s.replace(/[^A-Za-z0-9_.-]/g, '_');
  return `reports/${safe(ctx.run.flow)}-${safe(ctx.run.step)}-${safe(ctx.run.id)}.${ext}`;
}

/** A report row: the job's columns, in its fixed order. */
export type ReportRow = Record<string, unknown>;

/** One cell's text: objects as JSON, nothing as empty, booleans and numbers as written. */
function cellText(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/** A cell needs quotes: it holds the delimiter, a quote or a line break (RFC 4180). */
const NEEDS_QUOTES = /[",\r\n]/;

/**
 * Cells a spreadsheet would run as a formula (OWASP CSV injection), the
 * full-width forms included: escaped with a leading `'`. A negative number
 * is no formula.
 */
const FORMULA_START = new Set(['=', '+', '-', '@', '\t', '\r', '\uFF1D', '\uFF0B', '\uFF0D', '\uFF20']);

/** One cell as it goes into a line. */
function csvCell(v: unknown): string {
  let text = cellText(v);
  if (text === '') return text;
  const quote = NEEDS_QUOTES.test(text);
  if (FORMULA_START.has(text[0]!) && typeof v !== 'number' && typeof v !== 'bigint') text = `'${text}`;
  return quote ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * One CSV line (with CRLF) of `cells`, escaped as in the report files: the
 * output of csv-stringify with escape_formulas, CRLF records and any line
 * break quoted, written here because csv-stringify took 20-45 µs a row,
 * more than the rest of a record's report work (test/jobs/reports.test.ts
 * holds the two to the same bytes).
 * @example csvLine(['=1+2', '+7 900']) // "'=1+2,'+7 900\r\n"
 */
export function csvLine(cells: readonly unknown[]): string {
  let line = '';
  for (let i = 0; i < cells.length; i++) line += i === 0 ? csvCell(cells[i]) : `,${csvCell(cells[i])}`;
  return `${line}\r\n`;
}

/** A streaming report writer. */
export interface ReportWriter {
  /** Appends one record's row (waits when the disk is slower than the job). */
  write(row: ReportRow): Promise<void>;
  /**
   * A row as this report writes it, for a job's journal to keep: a CSV
   * report's line, a JSON report's cells in column order. {@link writeKept}
   * writes it again, as is, when a resumed attempt replays the journal.
   */
  keep(row: ReportRow): string | unknown[];
  /**
   * Appends a row {@link keep} gave (this attempt's or an earlier one's);
   * cells in column order too, as journals kept them before lines.
   */
  writeKept(kept: unknown): Promise<void>;
  /** Ends the report; a JSON report gets its summary. */
  close(summary: Record<string, unknown>): Promise<void>;
  /** Ends the file where it is (the job stopped early): what was written stays. */
  abort(): Promise<void>;
}

export interface OpenReportOptions {
  action: string;
  runId: string;
  /** Absolute path. */
  path: string;
  /** The job's fixed columns. */
  columns: readonly string[];
}

/**
 * Opens (truncates) a report and writes its header. A job calls it once per
 * attempt, replays its journal into it, then writes rows as records finish.
 */
export async function openReport(o: OpenReportOptions): Promise<ReportWriter> {
  const format = reportFormat(o.action, o.path);
  await mkdir(dirname(o.path), { recursive: true });
  const sink = new ReportSink(o.path);
  return format === 'csv' ? csvWriter(sink, o.columns) : jsonWriter(sink, o);
}

/** At most this long between a row's write and its bytes reaching the file. */
const FLUSH_MS = 10;
/** Buffered bytes that make a flush happen at once. */
const FLUSH_BYTES = 64 * 1024;

/**
 * The report file: rows gather in memory and go out in one synchronous
 * write(2) at most FLUSH_MS after the first of them (or once FLUSH_BYTES
 * gathered). One stream write per row cost more than the rest of a record's
 * report work; a report is rebuilt from the journal on resume, so the few
 * milliseconds of rows a kill -9 can cut off are never lost.
 */
export class ReportSink {
  private fd: number;
  private parts: string[] = [];
  private bytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private failure: unknown;

  constructor(readonly path: string) {
    this.fd = openSync(path, 'w');
  }

  /** Queues text; throws the error of an earlier failed flush. */
  write(text: string): void {
    if (this.failure !== undefined) throw this.failure;
    this.parts.push(text);
    this.bytes += text.length;
    if (this.bytes >= FLUSH_BYTES) this.flush();
    else this.timer ??= setTimeout(() => this.flushQuietly(), FLUSH_MS);
  }

  private flushQuietly(): void {
    try {
      this.flush();
    } catch (e) {
      this.failure ??= e; // reported by the next write or by close
    }
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.parts.length === 0) return;
    const buf = Buffer.from(this.parts.join(''), 'utf8');
    this.parts = [];
    this.bytes = 0;
    let off = 0;
    while (off < buf.length) off += writeSync(this.fd, buf, off, buf.length - off);
  }

  /** Writes what is queued and closes the file. */
  close(): void {
    if (this.fd < 0) return;
    try {
      if (this.failure !== undefined) throw this.failure;
      this.flush();
    } finally {
      closeSync(this.fd);
      this.fd = -1;
    }
  }
}

function csvWriter(sink: ReportSink, columns: readonly string[]): ReportWriter {
  sink.write(csvLine(columns));
  const keep = (row: ReportRow) => csvLine(columns.map((c) => row[c]));
  return {
    async write(row) {
      sink.write(keep(row));
    },
    keep,
    async writeKept(kept) {
      sink.write(typeof kept === 'string' ? kept : csvLine(kept as unknown[]));
    },
    async close() {
      sink.close();
    },
    async abort() {
      sink.close();
    },
  };
}

function jsonWriter(sink: ReportSink, o: OpenReportOptions): ReportWriter {
  let first = true;
  sink.write(`{"action":${JSON.stringify(o.action)},"runId":${JSON.stringify(o.runId)},"columns":${JSON.stringify(o.columns)},"rows":[`);
  const keep = (row: ReportRow) => o.columns.map((c) => row[c]);
  const writeCells = (cells: readonly unknown[]) => {
    const fixed = Object.fromEntries(o.columns.map((c, i) => [c, cells[i] ?? null]));
    sink.write(`${first ? '\n' : ',\n'}${JSON.stringify(fixed)}`);
    first = false;
  };
  return {
    async write(row) {
      writeCells(keep(row));
    },
    keep,
    async writeKept(kept) {
      // A CSV line: the report's path (and so its format) is an input of the step, fixed for every attempt.
      if (!Array.isArray(kept)) throw new Error(`${o.action}: the journal holds CSV lines, but the report ${sink.path} is JSON`);
      writeCells(kept);
    },
    async close(summary) {
      sink.write(`\n],"summary":${JSON.stringify(summary)}}\n`);
      sink.close();
    },
    async abort() {
      sink.close();
    },
  };
}

export interface ReportContent {
  action: string;
  runId: string;
  generatedAt: number;
  summary: Record<string, unknown>;
  /** Fixed columns; rows may leave some out. */
  columns: readonly string[];
  rows: readonly ReportRow[];
}

/** A small report written at once (e.g. an audit): to a temporary file, then renamed. */
export async function writeReport(absPath: string, content: ReportContent): Promise<void> {
  const format = reportFormat(content.action, absPath);
  const text =
    format === 'json'
      ? JSON.stringify({ ...content, generatedAt: new Date(content.generatedAt).toISOString() }, null, 2) + '\n'
      : toCsv(content.rows, content.columns);
  await mkdir(dirname(absPath), { recursive: true });
  const tmp = `${absPath}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(tmp, text, 'utf8');
  await rename(tmp, absPath);
}

/** RFC 4180 CSV with CRLF, fixed columns, cells escaped against formula injection. */
export function toCsv(rows: readonly ReportRow[], columns: readonly string[]): string {
  return csvLine(columns) + rows.map((r) => csvLine(columns.map((c) => r[c]))).join('');
}

/**
 * The report's error text of a duplicate row: the place of the row that wins,
 * as the report's `where` column names it.
 * @example duplicateOf('data/leads.csv:2') // 'duplicate of data/leads.csv:2'
 */
export function duplicateOf(firstWhere: string): string {
  return `duplicate of ${firstWhere}`;
}
