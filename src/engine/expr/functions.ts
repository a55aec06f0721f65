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
 */
import { isPlainObject, kindOf, readMember, toText, truthy } from './data.js';

export type ExprFunction = (args: unknown[]) => unknown;

interface FnDef {
  minArgs: number;
  maxArgs: number;
  fn: ExprFunction;
}

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
    minArgs: 1, maxArgs: 1,
    fn: ([v]) => {
      if (typeof v === 'string' || Array.isArray(v)) return v.length;
      if (isPlainObject(v)) return Object.keys(v).length;
      if (v === null || v === undefined) return 0;
      throw new FunctionArgError(`length(): cannot measure a ${kindOf(v)}`);
    },
  },
  contains: {
    minArgs: 2, maxArgs: 2,
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
    minArgs: 3, maxArgs: 3,
    fn: ([s, f, w]) => {
      const find = str('replace', f, 1);
      if (find === '') throw new FunctionArgError('replace(): the text to find must not be empty');
      return str('replace', s, 0).split(find).join(str('replace', w, 2));
    },
  },
  split: { minArgs: 2, maxArgs: 2, fn: ([s, sep]) => str('split', s, 0).split(str('split', sep, 1)) },
  join: {
    minArgs: 1, maxArgs: 2,
    fn: ([a, sep]) => arr('join', a, 0).map(toText).join(sep === undefined ? ',' : str('join', sep, 1)),
  },
  slice: {
    minArgs: 2, maxArgs: 3,
    fn: ([x, s, e]) => {
      const start = num('slice', s, 1);
      const end = e === undefined ? undefined : num('slice', e, 2);
      if (typeof x === 'string' || Array.isArray(x)) return x.slice(start, end);
      throw new FunctionArgError(`slice(): argument 1 must be a string or an array, got ${kindOf(x)}`);
    },
  },
  format: {
    minArgs: 1, maxArgs: 20,
    fn: ([tpl, ...rest]) =>
      str('format', tpl, 0).replace(/\{(\d+)\}/g, (whole, d: string) => (Number(d) < rest.length ? toText(rest[Number(d)]) : whole)),
  },
  toJSON: { minArgs: 1, maxArgs: 1, fn: ([v]) => JSON.stringify(v) ?? 'null' },
  fromJSON: {
    minArgs: 1, maxArgs: 1,
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
    minArgs: 1, maxArgs: 2,
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
    minArgs: 2, maxArgs: 2,
    fn: ([a, k]) => {
      const key = str('pluck', k, 1);
      return arr('pluck', a, 0).map((item) => readOrThrow(item, key));
    },
  },
  coalesce: {
    minArgs: 1, maxArgs: 20,
    fn: (args) => args.find((v) => v !== undefined && v !== null && v !== ''),
  },
};

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
