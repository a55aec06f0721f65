/**
 * Durations, read and written in one place. Read: `500ms`, `2s`, `10m`,
 * `1h30m`, `1d`, or a number of milliseconds (flow files, action inputs).
 * Written three ways, each for its reader: {@link formatDuration} in the same
 * syntax (`1h30m`, readable back by parseDuration), {@link formatSpan} in a
 * sentence (`4m05s`), {@link formatClock} on a progress line (`01:05`).
 */

import { z } from 'zod';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

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
  // Sticky: its lastIndex is where it reads next, so each call has its own.
  const part = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/y;
  let pos = 0;
  while (pos < s.length) {
    part.lastIndex = pos;
    const m = part.exec(s);
    if (!m) return undefined;
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
    pos = part.lastIndex;
  }
  return Number.isSafeInteger(Math.round(total)) ? Math.round(total) : undefined;
}

/** `5400000` → `1h30m`, for messages and reports. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  let s = Math.round(ms / 1000);
  const parts: string[] = [];
  for (const [unit, size] of [
    ['d', 86400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    if (s >= size) {
      parts.push(`${Math.floor(s / size)}${unit}`);
      s %= size;
    }
  }
  return parts.join('');
}

/**
 * A human span: `850ms`, `33s`, `4m05s`, `1h52m`, `3d4h`. Used where a person
 * reads a duration in a sentence (waits, summaries); never rounds a non-zero
 * span down to nothing.
 * @example formatSpan(33_000) // '33s'
 */
export function formatSpan(ms: number): string {
  const v = Math.max(0, ms);
  if (v < 1000) return `${Math.round(v)}ms`;
  const s = Math.round(v / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  // From an hour on, round to the minute: `1h52m` reads better than `1h51m47s`.
  const mins = Math.round(s / 60);
  const h = Math.floor(mins / 60);
  if (h < 48) return `${h}h${String(mins % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d${h % 24}h`;
}

/**
 * `mm:ss`, or `h:mm:ss` from one hour on.
 * @example formatClock(65_000) // '01:05'
 */
export function formatClock(ms: number): string {
  const total = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const mmss = `${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}`;
  return h > 0 ? `${h}:${mmss}` : mmss;
}

/**
 * A zod schema of a duration in an input (an action's `with:`, config.yaml):
 * a number of ms or a duration text; outputs ms.
 */
export function durationSchema(description: string) {
  return z
    .union([z.number().min(0), z.string()])
    .transform((v, ctx) => {
      if (typeof v === 'number') return v;
      const ms = parseDuration(v);
      if (ms === undefined) {
        ctx.addIssue({ code: 'custom', message: `'${v}' is not a duration: ${DURATION_HINT}` });
        return z.NEVER;
      }
      return ms;
    })
    .describe(description);
}
