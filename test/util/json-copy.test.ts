import { describe, expect, it } from 'vitest';
import { jsonCopy } from '../../src/util/json-copy.js';

const roundTrip = (v: unknown): unknown => {
  const text = JSON.stringify(v) as string | undefined;
  return text === undefined ? undefined : (JSON.parse(text) as unknown);
};

class Point {
  constructor(
    readonly x: number,
    readonly y: number,
  ) {}
}

const sparse: unknown[] = [1];
sparse[3] = 4;
const withExtra = Object.assign([1, 2], { extra: 'left out' });
const nullProto = Object.assign(Object.create(null) as object, { a: 1, b: [true] });
const protoKey = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as unknown;
let deep: unknown = 'bottom';
for (let i = 0; i < 150; i++) deep = { next: deep };

const cases: Array<[string, unknown]> = [
  ['a string', 'text with "quotes", \\ and a lone \ud800 surrogate'],
  ['numbers', { zero: 0, negZero: -0, big: 1e300, frac: -1.5 }],
  ['non-finite numbers', { nan: NaN, inf: Infinity, list: [-Infinity] }],
  ['booleans and null', [true, false, null]],
  ['undefined, functions and symbols in an object', { u: undefined, f: () => 1, s: Symbol('s'), kept: 1 }],
  ['undefined, functions and symbols in an array', [undefined, () => 1, Symbol('s'), 2]],
  ['a sparse array', sparse],
  ['an array with a named property', withExtra],
  ['integer-like keys after string keys', { b: 1, 2: 'two', a: 2, 1: 'one' }],
  ['a null-prototype object', nullProto],
  ['a key named __proto__', protoKey],
  ['a Date', { at: new Date(Date.UTC(2026, 10, 28)) }],
  ['an object with toJSON', { v: { toJSON: () => ({ replaced: true }) } }],
  ['a class instance', [new Point(1, 2)]],
  ['a Buffer', { b: Buffer.from('hi') }],
  ['a Map and a Set', { m: new Map([[1, 2]]), s: new Set([1]) }],
  ['boxed primitives', [Object(1), Object('s'), Object(true)]],
  ['nesting deeper than the direct copy goes', deep],
  ['undefined at the top', undefined],
  ['a function at the top', () => 1],
  ['a scalar at the top', 42],
  ['a symbol-keyed property', { [Symbol('k')]: 1, k: 2 }],
];

describe('jsonCopy', () => {
  it.each(cases)('gives what JSON.parse(JSON.stringify()) gives for %s', (_, value) => {
    const copy = jsonCopy(value);
    expect(copy).toStrictEqual(roundTrip(value));
    expect(JSON.stringify(copy)).toBe(JSON.stringify(roundTrip(value)));
  });

  it('keeps an own property named __proto__ as an own property, prototype untouched', () => {
    const copy = jsonCopy(protoKey) as Record<string, unknown>;
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.keys(copy)).toEqual(['__proto__', 'a']);
  });

  it('shares no object or array with the value it copies', () => {
    const inner = { list: [1, 2] };
    const value = { inner, rows: [inner.list] };
    const copy = jsonCopy(value) as typeof value;
    expect(copy).toStrictEqual(value);
    expect(copy.inner).not.toBe(inner);
    expect(copy.inner.list).not.toBe(inner.list);
    expect(copy.rows[0]).not.toBe(inner.list);
  });

  it('throws what JSON.stringify throws: a cycle, a bigint', () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    expect(() => jsonCopy(cycle)).toThrow(TypeError);
    expect(() => jsonCopy({ n: 1n })).toThrow(TypeError);
  });
});
