/**
 * Flows must not reach process, globals or code through expressions: only
 * plain data is readable, only the documented functions are callable.
 */
import { describe, expect, it } from 'vitest';
import { evaluateTemplate } from '../../src/engine/expr/template.js';
import { ExpressionError } from '../../src/engine/expr/errors.js';
import { parseExpression } from '../../src/engine/expr/parser.js';
import type { ExprScope } from '../../src/engine/expr/interpreter.js';

const sentinel = { touched: 0 };
(globalThis as Record<string, unknown>).__msgflowSentinel = sentinel;

class Secretive {
  secret = 'class field';
  get leak() {
    sentinel.touched++;
    return process.env;
  }
}

function scope(): ExprScope {
  const withGetter = {};
  Object.defineProperty(withGetter, 'boom', {
    enumerable: true,
    get() {
      sentinel.touched++;
      return process;
    },
  });
  return {
    inputs: {
      text: 'abc',
      list: [1, 2],
      obj: { a: 1 },
      fn: () => {
        sentinel.touched++;
        return process;
      },
      instance: new Secretive(),
      date: new Date(0),
      getter: withGetter,
      map: new Map([['a', 1]]),
    },
    env: {},
    steps: {},
    run: { id: 'r', flow: 'f', startedAt: 0 },
  };
}

const ev = (text: string) => evaluateTemplate(`\${{ ${text} }}`, scope());

describe('expressions cannot reach process or globals', () => {
  it('has no names for globals: process, globalThis, require, this, Function, eval...', () => {
    for (const name of [
      'process',
      'globalThis',
      'global',
      'require',
      'this',
      'Function',
      'eval',
      'module',
      'import',
      'constructor',
      'Object',
      'window',
      '__proto__',
    ]) {
      expect(() => parseExpression(`${name}.x`), name).toThrow(ExpressionError);
      expect(() => parseExpression(name), name).toThrow(/unknown name|unexpected/);
    }
  });

  it('cannot call anything but the documented functions (no methods, no calls of values)', () => {
    expect(() => parseExpression("inputs.text.constructor('return process')()")).toThrow(ExpressionError);
    expect(() => parseExpression('inputs.fn()')).toThrow(/method calls are not supported/);
    expect(() => parseExpression("inputs['fn']()")).toThrow(/method calls are not supported/);
    expect(() => parseExpression('(inputs.fn)()')).toThrow(/method calls are not supported/);
    expect(() => parseExpression('toString(inputs)')).toThrow(/unknown function/);
    expect(() => parseExpression('constructor(1)')).toThrow(/unknown function/);
    expect(() => parseExpression('hasOwnProperty(1)')).toThrow(/unknown function/);
    expect(() => parseExpression('__proto__(1)')).toThrow(/unknown function/);
  });

  it('blocks __proto__, constructor and prototype, by dot and by computed index', () => {
    for (const expr of [
      'inputs.constructor',
      'inputs.__proto__',
      'inputs.obj.prototype',
      "inputs['constructor']",
      "inputs['__' + 'proto__']",
      "inputs.text['constr' + 'uctor']",
      'inputs.list.constructor',
      "inputs[lower('CONSTRUCTOR')]",
      "pluck([inputs.obj], 'constructor')",
      'fromJSON(\'{"__proto__": {"x": 1}}\').__proto__',
    ]) {
      expect(() => ev(expr), expr).toThrow(/cannot be read in expressions/);
    }
  });

  it('does not see inherited properties of plain data', () => {
    expect(ev('inputs.obj.toString')).toBeUndefined();
    expect(ev('inputs.obj.hasOwnProperty')).toBeUndefined();
    expect(ev('inputs.text.toUpperCase')).toBeUndefined();
    expect(ev('inputs.list.map')).toBeUndefined();
    expect(ev("inputs.list['push']")).toBeUndefined();
    expect(ev('length(keys(inputs.obj))')).toBe(1);
  });

  it('refuses to read functions, class instances, Dates, Maps and getters', () => {
    expect(() => ev('inputs.fn')).toThrow(/is a function, not data/);
    expect(() => ev('inputs.instance.secret')).toThrow(/only read plain data/);
    expect(() => ev('inputs.instance.leak')).toThrow(/only read plain data/);
    expect(() => ev('inputs.date.getTime')).toThrow(/only read plain data/);
    expect(() => ev('inputs.map.size')).toThrow(/only read plain data/);
    expect(() => ev('inputs.getter.boom')).toThrow(/accessor property/);
    expect(() => ev('values(inputs.getter)')).toThrow(/accessor property/);
    expect(sentinel.touched).toBe(0);
  });

  it('fromJSON output is plain data and cannot pollute prototypes', () => {
    const v = ev('fromJSON(\'{"__proto__": {"polluted": true}, "a": 1}\')') as Record<string, unknown>;
    expect(v.a).toBe(1);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(ev('fromJSON(\'{"a": {"b": 2}}\').a.b')).toBe(2);
  });

  it('never yields a function or the global object, whatever it is given', () => {
    const hostile = [
      'inputs',
      'inputs.obj',
      "inputs['text']",
      'run',
      'steps',
      'env',
      'item',
      'keys(inputs)',
      'values(inputs.obj)',
      'coalesce(inputs.nope, inputs.obj)',
      "fromJSON('[1]')",
      '[inputs.obj, inputs.list]',
      'inputs.obj ?? inputs',
    ];
    for (const expr of hostile) {
      const v = ev(expr);
      expect(typeof v, expr).not.toBe('function');
      expect(v, expr).not.toBe(globalThis);
      expect(v, expr).not.toBe(process);
    }
    expect(sentinel.touched).toBe(0);
  });

  it('the implementation uses no eval, Function or vm', async () => {
    const { readdir, readFile } = await import('node:fs/promises');
    const dir = new URL('../../src/engine/expr/', import.meta.url);
    for (const f of await readdir(dir)) {
      const text = await readFile(new URL(f, dir), 'utf8');
      expect(text, f).not.toMatch(/\beval\s*\(|new\s+Function\b|\bFunction\s*\(|node:vm|from 'vm'/);
    }
  });
});
