/**
 * Evaluates a parsed expression of the flow expression language (`${{ ... }}`:
 * paths into inputs, env, steps, item, index and run; comparisons, boolean
 * logic, arithmetic and the documented functions of functions.ts) against a
 * scope. Pure tree walking over the output of its own tokenizer and parser:
 * no eval, Function or vm, and the only values reachable are the scope's
 * plain data and what the documented functions return.
 */
import { withFields } from '../../util/with-fields.js';
import { ExpressionError, ExpressionLimitError } from './errors.js';
import { FunctionArgError, FunctionLimitError, getFunction, looseEquals, type FnContext } from './functions.js';
import { kindOf, readMember, truthy } from './data.js';
import type { Node } from './parser.js';

/** What a step looks like from expressions: `steps.<id>.output`, `.done`... */
export interface StepScope {
  status: 'running' | 'succeeded' | 'failed' | 'skipped' | 'waiting' | 'cancelled';
  /** A single step: the action's return value. A forEach step: the results array. */
  output: unknown;
  /** forEach items that succeeded (a single step: 1 when it succeeded). */
  done: number;
  failed: number;
  total: number;
  /** forEach: one entry per item, in item order. */
  results?: unknown[];
  /** Why the step failed (a step-level failure): what its `on-failure:` steps read. */
  error?: { message: string; code?: string };
}

/** Everything an expression can read. */
export interface ExprScope {
  inputs: Record<string, unknown>;
  /** Only the variables the flow lists in `env:`. */
  env: Record<string, string | undefined>;
  steps: Record<string, StepScope>;
  /** The current forEach item. */
  item?: unknown;
  /** 0-based index of the current forEach item. */
  index?: number;
  /**
   * The recipient's row of a job that evaluates a `with:` field once per
   * record (messages.broadcast's message: `${{ row.firstName }}`); set by the
   * job through ctx.render, never by the runner.
   */
  row?: unknown;
  /** `slot`: the schedule slot (ms) a backfill run stands for. */
  run: { id: string; flow: string; startedAt: number; slot?: number };
  /**
   * msgflow's local service, when config.yaml has `local:`: `local.url` is its
   * base URL (e.g. `http://127.0.0.1:7070`), so flows never write the port.
   */
  local?: { url: string };
  /** The notification that started the run (flows with `on.notification`); undefined otherwise. */
  event?: unknown;
  /** A conversation's templates (engine/conversation): the chat's session (state, vars, chatId, startedAt). */
  session?: unknown;
  /** A conversation's templates: the message being handled (id, text, kind, choices, senderName). */
  message?: unknown;
  /** A conversation transition's templates: the value its `expect:` parsed. */
  value?: unknown;
  /** `${{ secrets.NAME }}`: the secrets the flow names, resolved when its run starts (never stored with it). */
  secrets?: Record<string, string | undefined>;
  /**
   * The engine's clock, for `now()` (not readable by expressions: it is not a
   * scope root). @default the system clock
   */
  clock?: { now(): number };
  /** Budgets of one evaluation. @default DEFAULT_EXPR_LIMITS */
  limits?: Partial<ExprLimits>;
}

/** What one evaluation may cost: a poison-pill expression stops with EXPRESSION_LIMIT instead of exhausting memory. */
export interface ExprLimits {
  /** Longest string an expression may build. @default 1000000 */
  maxStringLength: number;
  /** Longest array an expression may build. @default 200000 (twice the default data-input row limit) */
  maxArrayLength: number;
  /** Nodes evaluated plus items visited by functions, per evaluation. @default 5000000 */
  maxSteps: number;
}

export const DEFAULT_EXPR_LIMITS: Readonly<ExprLimits> = Object.freeze({
  maxStringLength: 1_000_000,
  maxArrayLength: 200_000,
  maxSteps: 5_000_000,
});

/** One evaluation: the scope, lambda parameters in force, and the work spent. */
interface Ctx {
  scope: ExprScope;
  src: string;
  params: Map<string, unknown>;
  limits: ExprLimits;
  steps: number;
}

/** Evaluates a parsed expression. Throws ExpressionError (EXPRESSION_ERROR or EXPRESSION_LIMIT) with the offset. */
export function evaluate(node: Node, scope: ExprScope, src: string): unknown {
  // The defaults themselves unless the scope sets limits: a spread per evaluation left old-space garbage (util/with-fields.ts).
  const limits = scope.limits ? withFields(DEFAULT_EXPR_LIMITS, scope.limits) : DEFAULT_EXPR_LIMITS;
  const ctx: Ctx = { scope, src, params: new Map(), limits, steps: 0 };
  return ev(node, ctx);
}

function charge(ctx: Ctx, n: number, pos: number): void {
  ctx.steps += n;
  if (ctx.steps > ctx.limits.maxSteps) throw new ExpressionLimitError(ctx.src, pos, `more than ${ctx.limits.maxSteps} evaluation steps`);
}

/** Every value an expression builds passes here: too long a string or array stops the evaluation. */
function bounded<T>(v: T, ctx: Ctx, pos: number): T {
  if (typeof v === 'string' && v.length > ctx.limits.maxStringLength) {
    throw new ExpressionLimitError(
      ctx.src,
      pos,
      `a string of ${v.length} characters is longer than the ${ctx.limits.maxStringLength} allowed`,
    );
  }
  if (Array.isArray(v) && v.length > ctx.limits.maxArrayLength) {
    throw new ExpressionLimitError(ctx.src, pos, `an array of ${v.length} items is longer than the ${ctx.limits.maxArrayLength} allowed`);
  }
  return v;
}

function ev(node: Node, ctx: Ctx): unknown {
  charge(ctx, 1, node.pos);
  const { scope, src } = ctx;
  switch (node.type) {
    case 'literal':
      return node.value;
    case 'param':
      return ctx.params.get(node.name);
    case 'lambda':
      throw new ExpressionError(src, node.pos, 'a lambda is not a value');
    case 'root':
      if (node.name === 'local' && scope.local === undefined) {
        throw new ExpressionError(src, node.pos, "'local' is not set: this run has no local service (config.yaml has no local: section)");
      }
      // The scope object is ours, but read it through the same gate: a root
      // that is missing (no `item` outside forEach) reads as undefined.
      return Object.hasOwn(scope, node.name) ? (scope as unknown as Record<string, unknown>)[node.name] : undefined;
    case 'member': {
      const obj = ev(node.object, ctx);
      const key = ev(node.property, ctx);
      const r = readMember(obj, key);
      if (!r.ok) throw new ExpressionError(src, node.property.pos, r.reason);
      return r.value;
    }
    case 'array':
      return bounded(
        node.items.map((n) => ev(n, ctx)),
        ctx,
        node.pos,
      );
    case 'call': {
      const def = getFunction(node.name)!;
      const args = node.args.map((n) => (n.type === 'lambda' ? n : ev(n, ctx)));
      const fctx: FnContext = {
        apply: (i, value) => {
          const lambda = node.args[i] as Extract<Node, { type: 'lambda' }>;
          charge(ctx, 1, lambda.pos);
          const had = ctx.params.has(lambda.param);
          const before = ctx.params.get(lambda.param);
          ctx.params.set(lambda.param, value);
          try {
            return ev(lambda.body, ctx);
          } finally {
            if (had) ctx.params.set(lambda.param, before);
            else ctx.params.delete(lambda.param);
          }
        },
        now: () => (scope.clock ? scope.clock.now() : Date.now()),
        charge: (n) => charge(ctx, n, node.pos),
        maxStringLength: ctx.limits.maxStringLength,
      };
      try {
        return bounded(def.fn(args, fctx), ctx, node.pos);
      } catch (e) {
        if (e instanceof FunctionArgError) throw new ExpressionError(src, node.pos, e.message);
        if (e instanceof FunctionLimitError) throw new ExpressionLimitError(src, node.pos, e.message);
        throw e;
      }
    }
    case 'unary': {
      const v = ev(node.arg, ctx);
      if (node.op === '!') return !truthy(v);
      return -toNumber(v, src, node.pos, "unary '-'");
    }
    case 'conditional':
      return truthy(ev(node.test, ctx)) ? ev(node.then, ctx) : ev(node.otherwise, ctx);
    case 'binary':
      return binary(node, ctx);
  }
}

function binary(node: Extract<Node, { type: 'binary' }>, ctx: Ctx): unknown {
  const { op } = node;
  const { src } = ctx;
  // Short-circuit operators return an operand, as in JS: `inputs.x || 'default'`.
  if (op === '&&') {
    const l = ev(node.left, ctx);
    return truthy(l) ? ev(node.right, ctx) : l;
  }
  if (op === '||') {
    const l = ev(node.left, ctx);
    return truthy(l) ? l : ev(node.right, ctx);
  }
  if (op === '??') {
    const l = ev(node.left, ctx);
    return l === undefined || l === null ? ev(node.right, ctx) : l;
  }
  const l = ev(node.left, ctx);
  const r = ev(node.right, ctx);
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
        if (isScalar(l) && isScalar(r)) {
          const a = String(l ?? '');
          const b = String(r ?? '');
          // Checked before concatenating: doubling a string in a loop of `+` must stop at the limit.
          if (a.length + b.length > ctx.limits.maxStringLength) {
            throw new ExpressionLimitError(
              src,
              node.pos,
              `'+' would build a string of ${a.length + b.length} characters (limit ${ctx.limits.maxStringLength})`,
            );
          }
          return a + b;
        }
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
