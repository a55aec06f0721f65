import { describe, expect, it } from 'vitest';
import { withFields } from '../../src/util/with-fields.js';

describe('withFields', () => {
  it('gives the fields of both, the second over the first, and leaves both as they were', () => {
    const base = { a: 1, b: 2 };
    const extra = { b: 3, c: 4 };
    const out = withFields(base, extra);
    expect(out).toEqual({ a: 1, b: 3, c: 4 });
    expect(Object.keys(out)).toEqual(['a', 'b', 'c']);
    expect(base).toEqual({ a: 1, b: 2 });
    expect(extra).toEqual({ b: 3, c: 4 });
  });

  it('copies only own enumerable fields, as a spread does', () => {
    const proto = { inherited: true };
    const base = Object.create(proto) as Record<string, unknown>;
    base.own = 1;
    Object.defineProperty(base, 'hidden', { value: 2, enumerable: false });
    expect(withFields(base, {})).toEqual({ own: 1 });
  });

  it('keeps a field named __proto__ (a CSV column) as a field and never as the prototype', () => {
    const row = JSON.parse('{"__proto__": {"polluted": true}, "phone": "79001112233"}') as Record<string, unknown>;
    const out = withFields(row, { chatId: '79001112233@c.us' }) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect(out.polluted).toBeUndefined();
    expect(Object.keys(out)).toEqual(['__proto__', 'phone', 'chatId']);
  });
});
