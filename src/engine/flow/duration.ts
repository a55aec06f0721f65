/**
 * Durations in flow files: `500ms`, `2s`, `10m`, `1h30m`, `1d`, or a
 * number of milliseconds.
 */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PART_RE = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/y;

/** JSON Schema pattern of a duration string (for editors). */
export const DURATION_PATTERN = '^(\\d+(\\.\\d+)?(ms|s|m|h|d))+$';

export const DURATION_HINT = 'use a number of ms or a duration such as 500ms, 2s, 10m, 1h30m';

/**
 * Milliseconds of a duration, or undefined when it is not one.
 *
 * @example parseDuration('1h30m') // 5_400_000
 */
export function parseDuration(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.round(value) : undefined;
  if (typeof value !== 'string') return undefined;
  const s = value.trim();
  if (s === '') return undefined;
  if (/^\d+$/.test(s)) return Number(s);
  let total = 0;
  PART_RE.lastIndex = 0;
  let pos = 0;
  while (pos < s.length) {
    PART_RE.lastIndex = pos;
    const m = PART_RE.exec(s);
    if (!m) return undefined;
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
    pos = PART_RE.lastIndex;
  }
  return Number.isSafeInteger(Math.round(total)) ? Math.round(total) : undefined;
}
