/**
 * `${{ expr }}` templates inside flow values. A string that is exactly one
 * template yields the expression's raw value (a number stays a number, an
 * array stays an array); text mixed with templates yields a string. Parsed
 * templates are cached: a forEach over 100,000 items parses each `with`
 * string once.
 */
import { ExpressionError, ExpressionLimitError } from './errors.js';
import { DEFAULT_EXPR_LIMITS, evaluate, type ExprScope } from './interpreter.js';
import { isPlainObject, toText, truthy } from './data.js';
import { parseExpression, type Node } from './parser.js';

export type TemplatePart =
  | { kind: 'text'; text: string }
  /** `offset`: where the expression text starts in the template string. */
  | { kind: 'expr'; source: string; node: Node; offset: number };

export interface CompiledTemplate {
  parts: TemplatePart[];
  /** The whole string is one `${{ }}` (surrounding whitespace ignored). */
  single: boolean;
}

const OPEN = '${{';

/** True when a string contains a template anywhere. */
export function hasTemplate(s: string): boolean {
  return s.includes(OPEN);
}

/** True when a value (or anything inside it) contains a template. */
export function containsTemplate(value: unknown): boolean {
  if (typeof value === 'string') return hasTemplate(value);
  if (Array.isArray(value)) return value.some(containsTemplate);
  if (isPlainObject(value)) return Object.values(value).some(containsTemplate);
  return false;
}

/**
 * Splits a string into text and expressions. Throws ExpressionError whose
 * `offset` is relative to the template string (not the expression).
 */
export function parseTemplate(text: string): CompiledTemplate {
  const parts: TemplatePart[] = [];
  let i = 0;
  while (i < text.length) {
    const open = text.indexOf(OPEN, i);
    if (open < 0) {
      parts.push({ kind: 'text', text: text.slice(i) });
      break;
    }
    if (open > i) parts.push({ kind: 'text', text: text.slice(i, open) });
    const start = open + OPEN.length;
    const close = findClose(text, start);
    if (close < 0) {
      const err = new ExpressionError(text.slice(start), 0, "'${{' is never closed with '}}'", `col ${open + 1}`);
      err.templateOffset = open;
      throw err;
    }
    const source = text.slice(start, close);
    let node: Node;
    try {
      node = parseExpression(source);
    } catch (e) {
      if (e instanceof ExpressionError) {
        const err = new ExpressionError(source, e.offset, e.reason, `col ${start + e.offset + 1}`);
        err.templateOffset = start + e.offset;
        throw err;
      }
      throw e;
    }
    parts.push({ kind: 'expr', source, node, offset: start });
    i = close + 2;
  }
  const exprs = parts.filter((p) => p.kind === 'expr');
  const single = exprs.length === 1 && parts.every((p) => p.kind === 'expr' || p.text.trim() === '');
  return { parts, single };
}

/** Index of the `}}` closing an expression that starts at `from`, skipping string literals. */
function findClose(text: string, from: number): number {
  let quote: string | undefined;
  for (let i = from; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '}' && text[i + 1] === '}') return i;
  }
  return -1;
}

const CACHE_LIMIT = 10_000;
const cache = new Map<string, CompiledTemplate>();

/** parseTemplate with a bounded cache (cleared when full: templates of a flow are few). */
export function compileTemplate(text: string): CompiledTemplate {
  let c = cache.get(text);
  if (!c) {
    c = parseTemplate(text);
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(text, c);
  }
  return c;
}

/**
 * Where each template text of the loaded flows is (`flows/x.yaml:12:14`), so
 * that an error while evaluating it names the flow position. Keyed by the
 * text: the runner hands us only the text. Bounded like the parse cache.
 */
const locations = new Map<string, string>();

/** Notes where a template (or a bare `if:` expression) is written; called by the flow loader. */
export function noteTemplateLocation(text: string, location: string): void {
  if (locations.size >= CACHE_LIMIT) locations.clear();
  locations.set(text, location);
}

/** The flow position of a template text, when a loaded flow holds it. */
export function templateLocation(text: string): string | undefined {
  return locations.get(text);
}

/** The same error, located at the flow position of `text` (and the expression's column inside the value). */
function located(e: unknown, text: string, offset: number): unknown {
  if (!(e instanceof ExpressionError)) return e;
  const at = locations.get(text);
  if (!at) return e;
  const where = `${at} (col ${offset + e.offset + 1} of the value)`;
  const Cls = e instanceof ExpressionLimitError ? ExpressionLimitError : ExpressionError;
  return new Cls(e.expression, e.offset, e.reason, where);
}

function evalPart(text: string, p: Extract<TemplatePart, { kind: 'expr' }>, scope: ExprScope): unknown {
  try {
    return evaluate(p.node, scope, p.source);
  } catch (e) {
    throw located(e, text, p.offset);
  }
}

function renderString(text: string, scope: ExprScope): unknown {
  if (!hasTemplate(text)) return text;
  const t = compileTemplate(text);
  if (t.single) {
    const p = t.parts.find((x) => x.kind === 'expr') as Extract<TemplatePart, { kind: 'expr' }>;
    return evalPart(text, p, scope);
  }
  let out = '';
  const max = scope.limits?.maxStringLength ?? DEFAULT_EXPR_LIMITS.maxStringLength;
  for (const p of t.parts) {
    out += p.kind === 'text' ? p.text : toText(evalPart(text, p, scope));
    if (out.length > max)
      throw located(
        new ExpressionLimitError(p.kind === 'expr' ? p.source : text, 0, `the text is longer than the ${max} characters allowed`),
        text,
        0,
      );
  }
  return out;
}

/**
 * Evaluates every template inside `value`. Strings that are one template
 * yield the raw value; mixed strings interpolate; arrays and plain objects
 * are walked (and copied); other values are returned as they are.
 *
 * @example evaluateTemplate({ phoneNumber: '${{ item.phone }}' }, scope) // { phoneNumber: '79001112233' }
 */
export function evaluateTemplate(value: unknown, scope: ExprScope): unknown {
  if (typeof value === 'string') return renderString(value, scope);
  if (Array.isArray(value)) return value.map((v) => evaluateTemplate(v, scope));
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value)) out[k] = evaluateTemplate(value[k], scope);
    return out;
  }
  return value;
}

/**
 * Evaluates an `if:`. Accepts `${{ expr }}` or a bare expression (as CI
 * workflows do); the result is tested for truthiness.
 *
 * @example evaluateCondition('steps.check.failed > 0', scope)
 */
export function evaluateCondition(expr: string | boolean, scope: ExprScope): boolean {
  if (typeof expr === 'boolean') return expr;
  if (hasTemplate(expr)) return truthy(renderString(expr, scope));
  const t = compileTemplate(`\${{${expr}}}`);
  const p = t.parts[0] as Extract<TemplatePart, { kind: 'expr' }>;
  try {
    return truthy(evaluate(p.node, scope, p.source));
  } catch (e) {
    throw located(e, expr, 0);
  }
}
