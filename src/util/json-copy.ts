/**
 * `JSON.parse(JSON.stringify(value))` without the text in between: the
 * in-process transport hands the local service and the client the very
 * values a trip over HTTP would (a bulk job sends a million small bodies,
 * and the text round trip of each cost more than the rest of the
 * transport).
 *
 * Plain data is copied directly: strings, booleans, finite numbers (-0 as
 * 0), non-finite numbers as null, arrays (holes, undefined, functions and
 * symbols as null), plain objects (keys whose value is undefined, a
 * function or a symbol left out). Anything else anywhere in the value (a
 * Date, a Buffer, a class instance, an object with toJSON, a bigint, a key
 * named `__proto__`, nesting deeper than {@link DIRECT_DEPTH}, a cycle) sends
 * the whole value through JSON.stringify and JSON.parse, so it comes out,
 * or throws, exactly as it would have.
 *
 * @returns the copy; undefined where JSON.stringify gives undefined (an
 * undefined, a function or a symbol at the top), as a body left out.
 */
export function jsonCopy(value: unknown): unknown {
  const direct = copyDirect(value, 0);
  if (direct !== NOT_PLAIN) return direct === OMIT ? undefined : direct;
  const text = JSON.stringify(value) as string | undefined;
  return text === undefined ? undefined : (JSON.parse(text) as unknown);
}

/** Deeper than this, the JSON functions copy it (their own limits and errors apply). */
const DIRECT_DEPTH = 100;

/** A value the direct copy does not take: the JSON functions do it. */
const NOT_PLAIN = Symbol('not plain');
/** A value JSON.stringify leaves out (undefined, a function, a symbol). */
const OMIT = Symbol('omit');

function copyDirect(v: unknown, depth: number): unknown {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      return Number.isFinite(v) ? (v === 0 ? 0 : v) : null;
    case 'undefined':
    case 'function':
    case 'symbol':
      return OMIT;
    case 'object':
      if (v === null) return null;
      if (depth >= DIRECT_DEPTH) return NOT_PLAIN;
      return Array.isArray(v) ? copyArray(v, depth) : copyObject(v, depth);
    default:
      return NOT_PLAIN; // bigint: JSON.stringify throws its own TypeError
  }
}

function copyArray(a: unknown[], depth: number): unknown {
  if (Object.getPrototypeOf(a) !== Array.prototype) return NOT_PLAIN;
  const out = new Array<unknown>(a.length);
  for (let i = 0; i < a.length; i++) {
    const c = copyDirect(a[i], depth + 1);
    if (c === NOT_PLAIN) return NOT_PLAIN;
    out[i] = c === OMIT ? null : c;
  }
  return out;
}

function copyObject(o: object, depth: number): unknown {
  const proto = Object.getPrototypeOf(o) as unknown;
  if ((proto !== Object.prototype && proto !== null) || 'toJSON' in o) return NOT_PLAIN;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(o)) {
    if (k === '__proto__') return NOT_PLAIN;
    const c = copyDirect((o as Record<string, unknown>)[k], depth + 1);
    if (c === NOT_PLAIN) return NOT_PLAIN;
    if (c !== OMIT) out[k] = c;
  }
  return out;
}
