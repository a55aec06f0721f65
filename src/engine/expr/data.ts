/**
 * The one gate between expressions and the values they read. Expressions
 * only see plain data: JSON-like objects, arrays and primitives. Everything
 * else (functions, class instances, prototypes, getters) is unreachable, so a
 * flow cannot climb from `inputs` to `constructor.constructor` and on to
 * `process` or the globals.
 */

/** Names never read, even as own properties of plain objects. */
export const BLOCKED_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** A short name of a value's kind, for messages. */
export function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'object') return isPlainObject(v) ? 'object' : `${(v as object).constructor?.name ?? 'non-plain'} object`;
  return typeof v;
}

export type MemberResult = { ok: true; value: unknown } | { ok: false; reason: string };

/**
 * Reads `key` of `obj` under the rules above. Missing properties and reads
 * of null/undefined give `undefined` (as in CI workflow expressions), so
 * `steps.x.output.maybe` does not throw when `output` is absent.
 */
export function readMember(obj: unknown, key: unknown): MemberResult {
  if (typeof key !== 'string' && typeof key !== 'number') {
    return { ok: false, reason: `a property name must be a string or a number, got ${kindOf(key)}` };
  }
  const k = String(key);
  if (BLOCKED_KEYS.has(k)) return { ok: false, reason: `'${k}' cannot be read in expressions` };
  if (obj === null || obj === undefined) return { ok: true, value: undefined };
  if (typeof obj === 'string') {
    if (k === 'length') return { ok: true, value: obj.length };
    if (isIndex(k)) return { ok: true, value: obj[Number(k)] };
    return { ok: true, value: undefined };
  }
  if (Array.isArray(obj)) {
    if (k === 'length') return { ok: true, value: obj.length };
    if (!isIndex(k)) return { ok: true, value: undefined };
    return ownValue(obj, k);
  }
  if (isPlainObject(obj)) return ownValue(obj, k);
  return { ok: false, reason: `cannot read '${k}' of a ${kindOf(obj)}: expressions only read plain data` };
}

function ownValue(obj: object, k: string): MemberResult {
  const desc = Object.getOwnPropertyDescriptor(obj, k);
  if (!desc) return { ok: true, value: undefined };
  // A getter would run code on read; data properties only.
  if (!('value' in desc)) return { ok: false, reason: `'${k}' is an accessor property, not data` };
  if (typeof desc.value === 'function') return { ok: false, reason: `'${k}' is a function, not data` };
  return { ok: true, value: desc.value };
}

function isIndex(k: string): boolean {
  return /^(0|[1-9]\d*)$/.test(k);
}

/** JS-like truthiness: false, 0, NaN, '', null and undefined are false. */
export function truthy(v: unknown): boolean {
  return Boolean(v);
}

/** How a value is written into a string template: null/undefined empty, objects as JSON. */
export function toText(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'object') return JSON.stringify(v) ?? '';
  return String(v);
}
