/**
 * Collects the problems of one flow file, each positioned at the YAML node
 * it is about (or, for an expression inside a string, at the exact column).
 */
import type { ErrorCode } from '../../api/error-codes.js';
import { formatKeyPath, type KeyPath, type YamlSource } from '../../util/yaml-source.js';
import { FlowIssue } from './errors.js';

export interface ReportOptions {
  /** Point at the key rather than its value (unknown keys). */
  key?: boolean;
  /** Offset inside the string value at `path` (expression errors). */
  offset?: number;
  code?: ErrorCode;
  params?: Record<string, unknown>;
  cause?: unknown;
}

export class Reporter {
  readonly issues: FlowIssue[] = [];
  private readonly lines: string[];

  constructor(
    readonly src: YamlSource,
    text: string,
    readonly raw: unknown,
  ) {
    this.lines = text.split('\n');
  }

  add(path: KeyPath, reason: string, opts: ReportOptions = {}): void {
    const { line, col } = this.position(path, opts);
    this.issues.push(
      new FlowIssue({ file: this.src.file, line, col, keyPath: formatKeyPath(path) }, reason, {
        code: opts.code,
        params: opts.params,
        cause: opts.cause,
      }),
    );
  }

  private position(path: KeyPath, opts: ReportOptions): { line: number; col: number } {
    const pos = this.src.position(path, { key: opts.key });
    if (opts.offset === undefined) return pos;
    const value = valueAt(this.raw, path);
    // Only a one-line scalar maps string offsets to columns (escapes aside).
    if (typeof value !== 'string' || value.includes('\n')) return pos;
    const ch = this.lines[pos.line - 1]?.[pos.col - 1];
    if (ch === '|' || ch === '>') return pos;
    const quote = ch === '"' || ch === "'" ? 1 : 0;
    return { line: pos.line, col: pos.col + quote + opts.offset };
  }
}

export function valueAt(root: unknown, path: KeyPath): unknown {
  let cur = root;
  for (const seg of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string | number, unknown>)[seg];
  }
  return cur;
}
