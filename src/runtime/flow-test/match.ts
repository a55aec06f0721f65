/**
 * Expectation matching of flow tests. An expected object is a subset of the
 * actual one; an expected array lists elements that must each match some
 * actual element (any order); `{ $count: N }` checks a length; `$gte`, `$lte`
 * bound numbers; `$match` is a regular expression for strings. Scalars compare
 * loosely across number/string (CSV reports hold strings).
 */

export interface Mismatch {
  /** Where, e.g. `steps.check.output.exists`. */
  path: string;
  expected: unknown;
  actual: unknown;
  /** Why, when more than "not equal". */
  note?: string;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function match(expected: unknown, actual: unknown, path = ''): Mismatch[] {
  if (isObj(expected) && Object.keys(expected).some((k) => k.startsWith('$'))) return matchOps(expected, actual, path);
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [{ path, expected, actual, note: 'expected a list' }];
    const out: Mismatch[] = [];
    expected.forEach((e, i) => {
      if (!actual.some((a) => match(e, a).length === 0))
        out.push({
          path: `${path}[${i}]`,
          expected: e,
          actual: actual.length > 3 ? [...actual.slice(0, 3), `…${actual.length - 3} more`] : actual,
          note: 'no element matches',
        });
    });
    return out;
  }
  if (isObj(expected)) {
    if (!isObj(actual)) return [{ path, expected, actual, note: 'expected an object' }];
    return Object.entries(expected).flatMap(([k, v]) => {
      const at = path ? `${path}.${k}` : k;
      if (actual[k] === undefined && v !== undefined && v !== null) {
        const keys = Object.keys(actual);
        return [
          { path: at, expected: v, actual: undefined, note: `missing; it has ${keys.length ? keys.slice(0, 20).join(', ') : 'no keys'}` },
        ];
      }
      return match(v, actual[k], at);
    });
  }
  return scalarEqual(expected, actual) ? [] : [{ path, expected, actual }];
}

function matchOps(ops: Record<string, unknown>, actual: unknown, path: string): Mismatch[] {
  const out: Mismatch[] = [];
  for (const [op, want] of Object.entries(ops)) {
    switch (op) {
      case '$count': {
        const n = Array.isArray(actual) ? actual.length : undefined;
        if (n !== want) out.push({ path, expected: { $count: want }, actual: n, note: 'count' });
        break;
      }
      case '$contains':
        out.push(...match(want, actual, path));
        break;
      case '$gte':
        if (!(typeof actual === 'number' && actual >= Number(want))) out.push({ path, expected: ops, actual });
        break;
      case '$lte':
        if (!(typeof actual === 'number' && actual <= Number(want))) out.push({ path, expected: ops, actual });
        break;
      case '$match':
        if (!(typeof actual === 'string' && new RegExp(String(want)).test(actual))) out.push({ path, expected: ops, actual });
        break;
      default:
        out.push({ path, expected: ops, actual, note: `unknown operator ${op} (use $count, $contains, $gte, $lte, $match)` });
    }
  }
  return out;
}

function scalarEqual(e: unknown, a: unknown): boolean {
  if (e === a) return true;
  if (e === null || a === null || e === undefined || a === undefined) return false;
  if ((typeof e === 'number' || typeof e === 'boolean') && typeof a === 'string') return String(e) === a;
  if (typeof e === 'string' && (typeof a === 'number' || typeof a === 'boolean')) return e === String(a);
  return false;
}

/** Human-readable diff lines of mismatches: `- expected` / `+ actual` per path. */
export function formatMismatches(ms: readonly Mismatch[], indent = '      '): string {
  const show = (v: unknown) => {
    if (v === undefined) return 'undefined';
    const s = JSON.stringify(v);
    return s.length > 600 ? `${s.slice(0, 600)}…` : s;
  };
  return ms
    .map(
      (m) =>
        `${indent}at ${m.path || '(root)'}${m.note ? ` (${m.note})` : ''}:\n${indent}  - expected ${show(m.expected)}\n${indent}  + actual   ${show(m.actual)}`,
    )
    .join('\n');
}
