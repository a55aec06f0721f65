/**
 * Calendar arithmetic of a cron schedule in a time zone, on cron-parser: the
 * next slot after a time, and the slots missed in a window. node-cron fires
 * live slots; both agree because validateCron refuses the expressions they
 * read differently.
 */
import { CronExpressionParser } from 'cron-parser';

/** First slot strictly after `after` (ms since the epoch), or undefined when the expression has no further slot. */
export function nextSlot(cron: string, timezone: string, after: number): number | undefined {
  const expr = CronExpressionParser.parse(cron, { tz: timezone, currentDate: new Date(after) });
  try {
    return expr.next().getTime();
  } catch {
    // cron-parser throws past the end of its range (e.g. a year-bounded expression).
    return undefined;
  }
}

export interface MissedSlots {
  /** Slots in (`after`, `upTo`], oldest first; the most recent `limit` when there were more. */
  slots: number[];
  /** True when older slots than those returned were left out because of `limit`. */
  truncated: boolean;
}

/**
 * Slots s with `after` < s <= `upTo`, walking back from `upTo` so that a long
 * downtime with a per-second expression costs at most `limit` steps.
 *
 * @example
 * // weekdays at 09:00 Berlin time, daemon down over a weekend
 * missedSlots('0 9 * * 1-5', 'Europe/Berlin', fridayEvening, tuesdayNoon, 100).slots.length; // 2
 */
export function missedSlots(cron: string, timezone: string, after: number, upTo: number, limit: number): MissedSlots {
  if (upTo <= after) return { slots: [], truncated: false };
  // prev() is strictly before currentDate; +1 ms makes `upTo` itself eligible.
  const expr = CronExpressionParser.parse(cron, { tz: timezone, currentDate: new Date(upTo + 1) });
  const slots: number[] = [];
  for (;;) {
    let t: number;
    try {
      t = expr.prev().getTime();
    } catch {
      break; // no earlier slot
    }
    if (t <= after) return { slots: slots.reverse(), truncated: false };
    if (slots.length === limit) return { slots: slots.reverse(), truncated: true };
    slots.push(t);
  }
  return { slots: slots.reverse(), truncated: false };
}
