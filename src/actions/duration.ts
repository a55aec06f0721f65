/**
 * Durations in action inputs: milliseconds as a number, or text such as
 * `500ms`, `30s`, `10m`, `2h`, `1d`, `1h30m` (the same units flow files use
 * for retry delays and timeouts).
 */
import { z } from 'zod';
import { DURATION_HINT, parseDuration } from '../util/duration.js';

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
