/**
 * The documented functions of the expression language. This table is the
 * complete list: an expression can call nothing else (no methods, no
 * globals). Each function takes and returns plain data.
 *
 * | Function | Result |
 * |---|---|
 * | `length(x)` | characters of a string, items of an array, keys of an object |
 * | `contains(x, v)` | string `x` contains `v` / array `x` has an item equal to `v` |
 * | `startsWith(s, p)`, `endsWith(s, p)` | prefix / suffix test |
 * | `lower(s)`, `upper(s)`, `trim(s)` | string case and whitespace |
 * | `replace(s, find, with)` | every occurrence of `find` replaced (plain text, no regex) |
 * | `split(s, sep)`, `join(arr, sep = ',')` | string <-> array |
 * | `slice(x, start, end?)` | part of a string or an array |
 * | `format(tpl, a, b, ...)` | `{0}`, `{1}`... replaced by the arguments |
 * | `toJSON(v)`, `fromJSON(s)` | JSON text <-> data |
 * | `number(v)`, `string(v)`, `boolean(v)` | conversions (`number('x')` is an error) |
 * | `round(n, digits = 0)`, `floor(n)`, `ceil(n)`, `abs(n)` | arithmetic |
 * | `min(...)`, `max(...)`, `sum(arr)` | of numbers or an array of numbers |
 * | `keys(obj)`, `values(obj)` | of a plain object |
 * | `pluck(arr, key)` | `key` of every item of an array of objects |
 * | `coalesce(a, b, ...)` | first argument that is not null, undefined or '' |
 * | `filter(arr, x => cond)` | the items for which `cond` is true |
 * | `map(arr, x => expr)` | `expr` of every item |
 * | `digits(s)` | only the digits of `s` (`'+7 (900) 111-22-33'` -> `'79001112233'`) |
 * | `formatDate(t, pattern = 'YYYY-MM-DD HH:mm', tz = 'UTC')` | a time (ms, ISO text) as text; YYYY MM DD HH mm ss SSS |
 * | `now()` | the current time in ms (the engine's clock in a run) |
 */
import { isPlainObject, kindOf, readMember, toText, truthy } from './data.js';

/** What a function may use besides its arguments. */
export interface FnContext {
  /** Applies the lambda given as argument `argIndex` to `value`. */
  apply(argIndex: number, value: unknown): unknown;
  /** Now in ms: the engine's clock in a run. */
  now(): number;
  /** Counts work (items visited); over the budget it throws EXPRESSION_LIMIT. */
  charge(steps: number): void;
  /** The largest string a function may build. */
  maxStringLength: number;
}

export type ExprFunction = (args: unknown[], ctx: FnContext) => unknown;

interface FnDef {
  minArgs: number;
  maxArgs: number;
  fn: ExprFunction;
  /** Argument positions that must be lambdas (`x => ...`). */
  lambdaArgs?: number[];
}

/** Thrown by a function when its result would go over a budget; the interpreter adds the position. */
export class FunctionLimitError extends Error {}

/** Thrown by a function for a bad argument; the interpreter adds the position. */
export class FunctionArgError extends Error {}

function str(name: string, v: unknown, i: number): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw new FunctionArgError(`${name}(): argument ${i + 1} must be a string, got ${kindOf(v)}`);
}

function num(name: string, v: unknown, i: number): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  if (Number.isNaN(n)) throw new FunctionArgError(`${name}(): argument ${i + 1} must be a number, got ${kindOf(v)}`);
  return n;
}

function arr(name: string, v: unknown, i: number): unknown[] {
  if (Array.isArray(v)) return v;
  throw new FunctionArgError(`${name}(): argument ${i + 1} must be an array, got ${kindOf(v)}`);
}

function obj(name: string, v: unknown, i: number): Record<string, unknown> {
  if (isPlainObject(v)) return v;
  throw new FunctionArgError(`${name}(): argument ${i + 1} must be an object, got ${kindOf(v)}`);
}

function numbers(name: string, args: unknown[]): number[] {
  const list = args.length === 1 && Array.isArray(args[0]) ? args[0] : args;
  return list.map((v, i) => num(name, v, i));
}

/** Compares like `==`: numbers and numeric strings (CSV values) compare as numbers. */
export function looseEquals(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === undefined || a === null) return b === undefined || b === null;
  if (typeof a === 'number' && typeof b === 'string' && b.trim() !== '') return a === Number(b);
  if (typeof b === 'number' && typeof a === 'string' && a.trim() !== '') return b === Number(a);
  return false;
}

const defs: Record<string, FnDef> = {
  length: {
    minArgs: 1,
    maxArgs: 1,
    fn: ([v]) => {
      if (typeof v === 'string' || Array.isArray(v)) return v.length;
      if (isPlainObject(v)) return Object.keys(v).length;
      if (v === null || v === undefined) return 0;
      throw new FunctionArgError(`length(): cannot measure a ${kindOf(v)}`);
    },
  },
  contains: {
    minArgs: 2,
    maxArgs: 2,
    fn: ([h, n]) => {
      if (Array.isArray(h)) return h.some((x) => looseEquals(x, n));
      if (h === null || h === undefined) return false;
      return str('contains', h, 0).includes(str('contains', n, 1));
    },
  },
  startsWith: { minArgs: 2, maxArgs: 2, fn: ([s, p]) => str('startsWith', s, 0).startsWith(str('startsWith', p, 1)) },
  endsWith: { minArgs: 2, maxArgs: 2, fn: ([s, p]) => str('endsWith', s, 0).endsWith(str('endsWith', p, 1)) },
  lower: { minArgs: 1, maxArgs: 1, fn: ([s]) => str('lower', s, 0).toLowerCase() },
  upper: { minArgs: 1, maxArgs: 1, fn: ([s]) => str('upper', s, 0).toUpperCase() },
  trim: { minArgs: 1, maxArgs: 1, fn: ([s]) => str('trim', s, 0).trim() },
  replace: {
    minArgs: 3,
    maxArgs: 3,
    fn: ([s, f, w], ctx) => {
      const find = str('replace', f, 1);
      if (find === '') throw new FunctionArgError('replace(): the text to find must not be empty');
      const pieces = str('replace', s, 0).split(find);
      const by = str('replace', w, 2);
      // Sized before it is built: a replace that multiplies a string is refused, not allocated.
      const size = pieces.reduce((t, p) => t + p.length, 0) + (pieces.length - 1) * by.length;
      if (size > ctx.maxStringLength)
        throw new FunctionLimitError(`replace() would build a string of ${size} characters (limit ${ctx.maxStringLength})`);
      return pieces.join(by);
    },
  },
  split: { minArgs: 2, maxArgs: 2, fn: ([s, sep]) => str('split', s, 0).split(str('split', sep, 1)) },
  join: {
    minArgs: 1,
    maxArgs: 2,
    fn: ([a, sep], ctx) => {
      const list = arr('join', a, 0);
      const glue = sep === undefined ? ',' : str('join', sep, 1);
      ctx.charge(list.length);
      let size = Math.max(0, list.length - 1) * glue.length;
      const texts = list.map((v) => {
        const t = toText(v);
        size += t.length;
        if (size > ctx.maxStringLength)
          throw new FunctionLimitError(`join() would build a string of more than ${ctx.maxStringLength} characters`);
        return t;
      });
      return texts.join(glue);
    },
  },
  slice: {
    minArgs: 2,
    maxArgs: 3,
    fn: ([x, s, e]) => {
      const start = num('slice', s, 1);
      const end = e === undefined ? undefined : num('slice', e, 2);
      if (typeof x === 'string' || Array.isArray(x)) return x.slice(start, end);
      throw new FunctionArgError(`slice(): argument 1 must be a string or an array, got ${kindOf(x)}`);
    },
  },
  format: {
    minArgs: 1,
    maxArgs: 20,
    fn: ([tpl, ...rest]) =>
      str('format', tpl, 0).replace(/\{(\d+)\}/g, (whole, d: string) => (Number(d) < rest.length ? toText(rest[Number(d)]) : whole)),
  },
  toJSON: { minArgs: 1, maxArgs: 1, fn: ([v]) => JSON.stringify(v) ?? 'null' },
  fromJSON: {
    minArgs: 1,
    maxArgs: 1,
    fn: ([s]) => {
      try {
        return JSON.parse(str('fromJSON', s, 0));
      } catch (e) {
        throw new FunctionArgError(`fromJSON(): not valid JSON (${(e as Error).message})`);
      }
    },
  },
  number: { minArgs: 1, maxArgs: 1, fn: ([v]) => (typeof v === 'boolean' ? Number(v) : num('number', v, 0)) },
  string: { minArgs: 1, maxArgs: 1, fn: ([v]) => toText(v) },
  boolean: { minArgs: 1, maxArgs: 1, fn: ([v]) => (v === 'false' || v === '0' ? false : truthy(v)) },
  round: {
    minArgs: 1,
    maxArgs: 2,
    fn: ([n, d]) => {
      const digits = d === undefined ? 0 : num('round', d, 1);
      const f = 10 ** Math.max(0, Math.min(15, Math.trunc(digits)));
      return Math.round(num('round', n, 0) * f) / f;
    },
  },
  floor: { minArgs: 1, maxArgs: 1, fn: ([n]) => Math.floor(num('floor', n, 0)) },
  ceil: { minArgs: 1, maxArgs: 1, fn: ([n]) => Math.ceil(num('ceil', n, 0)) },
  abs: { minArgs: 1, maxArgs: 1, fn: ([n]) => Math.abs(num('abs', n, 0)) },
  min: { minArgs: 1, maxArgs: 20, fn: (args) => Math.min(...numbers('min', args)) },
  max: { minArgs: 1, maxArgs: 20, fn: (args) => Math.max(...numbers('max', args)) },
  sum: { minArgs: 1, maxArgs: 1, fn: ([a]) => arr('sum', a, 0).reduce<number>((t, v, i) => t + num('sum', v, i), 0) },
  keys: { minArgs: 1, maxArgs: 1, fn: ([o]) => Object.keys(obj('keys', o, 0)) },
  values: { minArgs: 1, maxArgs: 1, fn: ([o]) => Object.keys(obj('values', o, 0)).map((k) => readOrThrow(o, k)) },
  pluck: {
    minArgs: 2,
    maxArgs: 2,
    fn: ([a, k]) => {
      const key = str('pluck', k, 1);
      return arr('pluck', a, 0).map((item) => readOrThrow(item, key));
    },
  },
  coalesce: {
    minArgs: 1,
    maxArgs: 20,
    fn: (args) => args.find((v) => v !== undefined && v !== null && v !== ''),
  },
  filter: {
    minArgs: 2,
    maxArgs: 2,
    lambdaArgs: [1],
    fn: ([a], ctx) => arr('filter', a, 0).filter((v) => truthy(ctx.apply(1, v))),
  },
  map: {
    minArgs: 2,
    maxArgs: 2,
    lambdaArgs: [1],
    fn: ([a], ctx) => arr('map', a, 0).map((v) => ctx.apply(1, v)),
  },
  digits: {
    minArgs: 1,
    maxArgs: 1,
    fn: ([v]) => (v === null || v === undefined ? '' : str('digits', v, 0).replace(/\D+/g, '')),
  },
  formatDate: { minArgs: 1, maxArgs: 3, fn: ([t, p, tz]) => formatDate(t, p, tz) },
  now: { minArgs: 0, maxArgs: 0, fn: (_args, ctx) => ctx.now() },
};

const DATE_TOKENS = /YYYY|MM|DD|HH|mm|ss|SSS/g;

/** `formatDate(1767603600000, 'DD.MM.YYYY HH:mm', 'Europe/Berlin')` -> `05.01.2026 10:00`. */
function formatDate(t: unknown, pattern: unknown, tz: unknown): string {
  let ms: number;
  if (typeof t === 'number') ms = t;
  else if (typeof t === 'string' && /^\d+$/.test(t.trim())) ms = Number(t);
  else if (typeof t === 'string') ms = Date.parse(t);
  else throw new FunctionArgError(`formatDate(): argument 1 must be a time (ms or ISO text), got ${kindOf(t)}`);
  if (!Number.isFinite(ms)) throw new FunctionArgError(`formatDate(): '${String(t).slice(0, 40)}' is not a time`);
  const pat = pattern === undefined || pattern === null ? 'YYYY-MM-DD HH:mm' : str('formatDate', pattern, 1);
  const zone = tz === undefined || tz === null ? 'UTC' : str('formatDate', tz, 2);
  let parts: Intl.DateTimeFormatPart[];
  try {
    parts = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    }).formatToParts(ms);
  } catch {
    throw new FunctionArgError(`formatDate(): unknown time zone '${zone}'`);
  }
  const part = (type: string) => parts.find((x) => x.type === type)?.value ?? '';
  const values: Record<string, string> = {
    YYYY: part('year'),
    MM: part('month'),
    DD: part('day'),
    HH: part('hour'),
    mm: part('minute'),
    ss: part('second'),
    SSS: String(((ms % 1000) + 1000) % 1000).padStart(3, '0'),
  };
  return pat.replace(DATE_TOKENS, (k) => values[k]!);
}

function readOrThrow(o: unknown, k: string): unknown {
  const r = readMember(o, k);
  if (!r.ok) throw new FunctionArgError(r.reason);
  return r.value;
}

/** Null-prototype table: a name such as `constructor` or `toString` is simply not there. */
const FUNCTIONS: Readonly<Record<string, FnDef>> = Object.freeze(Object.assign(Object.create(null) as Record<string, FnDef>, defs));

export function getFunction(name: string): FnDef | undefined {
  return FUNCTIONS[name];
}

export function functionNames(): string[] {
  return Object.keys(FUNCTIONS).sort();
}

/** Functions that take a lambda. */
export function lambdaFunctions(): string[] {
  return functionNames().filter((n) => FUNCTIONS[n]!.lambdaArgs?.length);
}
