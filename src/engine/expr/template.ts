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
  /**
   * Where the template is written (`flows/x.yaml:12:14`), when it was
   * compiled from a loaded flow ({@link locatedTemplate}): an error while
   * evaluating it names this position.
   */
  location?: string;
}

/**
 * A step's templates by their text as written, each compiled once when the
 * flow was loaded and carrying its own flow position: two flows (or steps)
 * with the same text keep their own locations.
 */
export type TemplateTable = ReadonlyMap<string, CompiledTemplate>;

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
// cache: keyed by the template text, and what it holds (the parse, no location) follows from the text alone: the same for every flow and runtime
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
 * `text` compiled with the flow position it is written at: what the flow
 * loader keeps in each step's {@link TemplateTable}. `bare`: an `if:`
 * written without `${{ }}` (evaluated as one expression).
 * @throws ExpressionError when the text does not parse (the loader reports it first)
 */
export function locatedTemplate(text: string, location: string, bare = false): CompiledTemplate {
  return { ...compileTemplate(bare && !hasTemplate(text) ? `\${{${text}}}` : text), location };
}

/** The same error, located at the template's flow position (and the expression's column inside the value). */
function located(e: unknown, t: CompiledTemplate, offset: number): unknown {
  if (!(e instanceof ExpressionError) || !t.location) return e;
  const where = `${t.location} (col ${offset + e.offset + 1} of the value)`;
  const Cls = e instanceof ExpressionLimitError ? ExpressionLimitError : ExpressionError;
  return new Cls(e.expression, e.offset, e.reason, where);
}

function evalPart(t: CompiledTemplate, p: Extract<TemplatePart, { kind: 'expr' }>, scope: ExprScope): unknown {
  try {
    return evaluate(p.node, scope, p.source);
  } catch (e) {
    throw located(e, t, p.offset);
  }
}

function renderString(text: string, scope: ExprScope, templates: TemplateTable | undefined): unknown {
  if (!hasTemplate(text)) return text;
  const t = templates?.get(text) ?? compileTemplate(text);
  if (t.single) {
    const p = t.parts.find((x) => x.kind === 'expr') as Extract<TemplatePart, { kind: 'expr' }>;
    return evalPart(t, p, scope);
  }
  let out = '';
  const max = scope.limits?.maxStringLength ?? DEFAULT_EXPR_LIMITS.maxStringLength;
  for (const p of t.parts) {
    out += p.kind === 'text' ? p.text : toText(evalPart(t, p, scope));
    if (out.length > max)
      throw located(
        new ExpressionLimitError(p.kind === 'expr' ? p.source : text, 0, `the text is longer than the ${max} characters allowed`),
        t,
        0,
      );
  }
  return out;
}

/**
 * Evaluates every template inside `value`. Strings that are one template
 * yield the raw value; mixed strings interpolate; arrays and plain objects
 * are walked (and copied); other values are returned as they are. With the
 * step's `templates` (FlowStep.templates), an error names the flow position
 * of the template that failed.
 *
 * @example evaluateTemplate({ phoneNumber: '${{ item.phone }}' }, scope) // { phoneNumber: '79001112233' }
 */
export function evaluateTemplate(value: unknown, scope: ExprScope, templates?: TemplateTable): unknown {
  if (typeof value === 'string') return renderString(value, scope, templates);
  if (Array.isArray(value)) return value.map((v) => evaluateTemplate(v, scope, templates));
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value)) out[k] = evaluateTemplate(value[k], scope, templates);
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
export function evaluateCondition(expr: string | boolean, scope: ExprScope, templates?: TemplateTable): boolean {
  if (typeof expr === 'boolean') return expr;
  if (hasTemplate(expr)) return truthy(renderString(expr, scope, templates));
  const t = templates?.get(expr) ?? compileTemplate(`\${{${expr}}}`);
  const p = t.parts[0] as Extract<TemplatePart, { kind: 'expr' }>;
  try {
    return truthy(evaluate(p.node, scope, p.source));
  } catch (e) {
    throw located(e, t, 0);
  }
}
