/**
 * Errors of the expression language. A parse or evaluation error carries the
 * offset inside the expression, so the flow loader can turn it into a
 * `file:line:col` position.
 */
import { FlowError } from '../../api/errors.js';
import { formatError } from '../../api/error-codes.js';

export class ExpressionError extends FlowError {
  /** The expression text (without the `${{ }}` delimiters). */
  readonly expression: string;
  /** 0-based offset of the problem inside `expression`. */
  readonly offset: number;
  /** What is wrong, without position. */
  readonly reason: string;
  /**
   * Set by parseTemplate: offset of the problem in the whole template string
   * (`"Hi ${{ item. }}"`), so a loader can point at the exact column.
   */
  templateOffset?: number;

  constructor(expression: string, offset: number, reason: string, location?: string) {
    super('EXPRESSION_ERROR', {
      location: location ?? `col ${offset + 1}`,
      expression: `\${{ ${expression.trim()} }}`,
      reason,
    });
    this.name = 'ExpressionError';
    this.expression = expression;
    this.offset = offset;
    this.reason = reason;
  }
}

/**
 * An evaluation went over a budget (string length, array length, steps):
 * EXPRESSION_LIMIT, so that a poison-pill expression fails fast and clearly
 * instead of exhausting the process's memory.
 */
export class ExpressionLimitError extends ExpressionError {
  constructor(expression: string, offset: number, reason: string, location?: string) {
    super(expression, offset, reason, location);
    this.name = 'ExpressionLimitError';
    (this as { code: string }).code = 'EXPRESSION_LIMIT';
    this.message = formatError('EXPRESSION_LIMIT', this.params as Record<string, unknown>);
  }
}
