/**
 * Evaluates a parsed expression against a scope. Pure tree walking: the only
 * values reachable are the scope's plain data and what the documented
 * functions return.
 */
import { ExpressionError } from './errors.js';
import { FunctionArgError, getFunction, looseEquals } from './functions.js';
import { kindOf, readMember, truthy } from './data.js';
import type { Node } from './parser.js';

/** What a step looks like from expressions: `steps.<id>.output`, `.done`... */
export interface StepView {
  status: 'pending' | 'running' | 'succeeded' | 'failed' | 'skipped' | 'waiting';
  /** A single step: the action's return value. A forEach step: the results array. */
  output: unknown;
  /** forEach items that succeeded (a single step: 1 when it succeeded). */
  done: number;
  failed: number;
  total: number;
  /** forEach: one entry per item, in item order. */
  results?: unknown[];
}

/** Everything an expression can read. */
export interface ExprScope {
  inputs: Record<string, unknown>;
  /** Only the variables the flow lists in `env:`. */
  env: Record<string, string | undefined>;
  steps: Record<string, StepView>;
  /** The current forEach item. */
  item?: unknown;
  /** 0-based index of the current forEach item. */
  index?: number;
  run: { id: string; flow: string; startedAt: number };
}

export function evaluate(node: Node, scope: ExprScope, src: string): unknown {
  switch (node.type) {
    case 'literal':
      return node.value;
    case 'root':
      // The scope object is ours, but read it through the same gate: a root
      // that is missing (no `item` outside forEach) reads as undefined.
      return Object.hasOwn(scope, node.name) ? (scope as unknown as Record<string, unknown>)[node.name] : undefined;
    case 'member': {
      const obj = evaluate(node.object, scope, src);
      const key = evaluate(node.property, scope, src);
      const r = readMember(obj, key);
      if (!r.ok) throw new ExpressionError(src, node.property.pos, r.reason);
      return r.value;
    }
    case 'array':
      return node.items.map((n) => evaluate(n, scope, src));
    case 'call': {
      const def = getFunction(node.name)!;
      const args = node.args.map((n) => evaluate(n, scope, src));
      try {
        return def.fn(args);
      } catch (e) {
        if (e instanceof FunctionArgError) throw new ExpressionError(src, node.pos, e.message);
        throw e;
      }
    }
    case 'unary': {
      const v = evaluate(node.arg, scope, src);
      if (node.op === '!') return !truthy(v);
      return -toNumber(v, src, node.pos, "unary '-'");
    }
    case 'conditional':
      return truthy(evaluate(node.test, scope, src)) ? evaluate(node.then, scope, src) : evaluate(node.otherwise, scope, src);
    case 'binary':
      return binary(node, scope, src);
  }
}

function binary(node: Extract<Node, { type: 'binary' }>, scope: ExprScope, src: string): unknown {
  const { op } = node;
  // Short-circuit operators return an operand, as in JS: `inputs.x || 'default'`.
  if (op === '&&') {
    const l = evaluate(node.left, scope, src);
    return truthy(l) ? evaluate(node.right, scope, src) : l;
  }
  if (op === '||') {
    const l = evaluate(node.left, scope, src);
    return truthy(l) ? l : evaluate(node.right, scope, src);
  }
  if (op === '??') {
    const l = evaluate(node.left, scope, src);
    return l === undefined || l === null ? evaluate(node.right, scope, src) : l;
  }
  const l = evaluate(node.left, scope, src);
  const r = evaluate(node.right, scope, src);
  switch (op) {
    case '==':
      return looseEquals(l, r);
    case '!=':
      return !looseEquals(l, r);
    case '<':
    case '<=':
    case '>':
    case '>=':
      return compare(op, l, r, src, node.pos);
    case '+':
      if (typeof l === 'string' || typeof r === 'string') {
        if (isScalar(l) && isScalar(r)) return String(l ?? '') + String(r ?? '');
        throw new ExpressionError(src, node.pos, `cannot add a ${kindOf(l)} and a ${kindOf(r)}`);
      }
      return toNumber(l, src, node.pos, "'+'") + toNumber(r, src, node.pos, "'+'");
    case '-':
      return toNumber(l, src, node.pos, "'-'") - toNumber(r, src, node.pos, "'-'");
    case '*':
      return toNumber(l, src, node.pos, "'*'") * toNumber(r, src, node.pos, "'*'");
    case '/':
    case '%': {
      const a = toNumber(l, src, node.pos, `'${op}'`);
      const b = toNumber(r, src, node.pos, `'${op}'`);
      if (b === 0) throw new ExpressionError(src, node.pos, 'division by zero');
      return op === '/' ? a / b : a % b;
    }
  }
  throw new ExpressionError(src, node.pos, `unknown operator '${op}'`);
}

function isScalar(v: unknown): boolean {
  return v === null || v === undefined || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

/** Numbers, numeric strings (CSV values) and booleans are numbers; anything else is an error rather than NaN. */
function toNumber(v: unknown, src: string, pos: number, what: string): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v))) return Number(v);
  throw new ExpressionError(src, pos, `${what} needs numbers, got ${kindOf(v)}${typeof v === 'string' ? ` '${v.slice(0, 40)}'` : ''}`);
}

function compare(op: string, l: unknown, r: unknown, src: string, pos: number): boolean {
  let a: number | string;
  let b: number | string;
  if (typeof l === 'string' && typeof r === 'string') {
    const nl = Number(l);
    const nr = Number(r);
    // Two numeric strings (both from a CSV file) compare as numbers.
    if (l.trim() !== '' && r.trim() !== '' && !Number.isNaN(nl) && !Number.isNaN(nr)) [a, b] = [nl, nr];
    else [a, b] = [l, r];
  } else {
    a = toNumber(l, src, pos, `'${op}'`);
    b = toNumber(r, src, pos, `'${op}'`);
  }
  switch (op) {
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    default:
      return a >= b;
  }
}
