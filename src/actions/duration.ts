/**
 * Durations in action inputs: milliseconds as a number, or text such as
 * `500ms`, `30s`, `10m`, `2h`, `1d`, `1h30m` (the same units flow files use
 * for retry delays and timeouts).
 */
import { z } from 'zod';
import { DURATION_HINT, parseDuration } from '../engine/flow/duration.js';

// One parser for every duration msgflow reads, in flow files and in action inputs.
export { parseDuration };

/** A zod schema accepting a number of ms or a duration text; outputs ms. */
export function duration(description: string) {
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

/** `5400000` → `1h30m`, for messages and reports. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  let s = Math.round(ms / 1000);
  const parts: string[] = [];
  for (const [unit, size] of [['d', 86400], ['h', 3600], ['m', 60], ['s', 1]] as const) {
    if (s >= size) {
      parts.push(`${Math.floor(s / size)}${unit}`);
      s %= size;
    }
  }
  return parts.join('');
}
