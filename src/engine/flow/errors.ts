/**
 * Errors of flow files. Each problem is a {@link FlowIssue} whose message is
 * `file:line:col key.path: reason`; a file with problems throws one
 * {@link FlowFileError} listing them all (one per line) in `.errors`.
 */
import { FlowError } from '../../api/errors.js';
import type { ErrorCode } from '../../api/error-codes.js';

export interface IssuePosition {
  /** The file as shown to the user (relative to the working directory when inside it). */
  file: string;
  line: number;
  col: number;
  /** `steps[0].with.chatId`, or `(root)`. */
  keyPath: string;
}

/** One problem of a flow file, with its position. */
export class FlowIssue extends FlowError implements IssuePosition {
  readonly file: string;
  readonly line: number;
  readonly col: number;
  readonly keyPath: string;
  /** The message without position and key path. */
  readonly reason: string;

  constructor(pos: IssuePosition, reason: string, opts: { code?: ErrorCode; params?: Record<string, unknown>; cause?: unknown } = {}) {
    const location = `${pos.file}:${pos.line}:${pos.col}`;
    const code = opts.code ?? 'FLOW_INVALID';
    const params = opts.params ?? { reason };
    // EXPRESSION_ERROR's template has no key path slot: carry it in `location`.
    const full =
      code === 'EXPRESSION_ERROR' ? { ...params, location: `${location} ${pos.keyPath}` } : { ...params, location, path: pos.keyPath };
    super(code, full, opts.cause === undefined ? {} : { cause: opts.cause });
    this.name = 'FlowIssue';
    this.file = pos.file;
    this.line = pos.line;
    this.col = pos.col;
    this.keyPath = pos.keyPath;
    this.reason = this.message.slice(this.message.indexOf(`${location} ${pos.keyPath}: `) + `${location} ${pos.keyPath}: `.length);
  }
}

/** Every problem of one flow file. `message` lists them, one per line. */
export class FlowFileError extends FlowError {
  readonly file: string;
  readonly errors: readonly FlowIssue[];
  /** The file's `name:` when it could be read, so `findFlow` can match a broken flow by name. */
  readonly flowName?: string;

  constructor(file: string, errors: FlowIssue[], flowName?: string) {
    const first = errors[0]!;
    super(first.code, first.params as Record<string, unknown>);
    this.name = 'FlowFileError';
    this.file = file;
    this.errors = errors;
    this.flowName = flowName;
    this.message = errors.map((e) => e.message).join('\n');
  }
}
