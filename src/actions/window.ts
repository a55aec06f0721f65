/**
 * A send window: `start`/`stop` as absolute ISO times or as daily `HH:MM`
 * wall-clock times in a time zone (an overnight window such as 22:00–06:00
 * is allowed). Computed with Intl, so daylight-saving changes are honoured.
 */
import { z } from 'zod';
import { validateTimezone } from '../engine/schedule/validate.js';
import { zoneFormat } from '../util/zone-format.js';

const HHMM = /^([01]?\d|2[0-3]):([0-5]\d)$/;

/** The scheduler's rule for a zone name (the one check of it). */
const validZone = (tz: string) => validateTimezone(tz) === undefined;

const timeText = z
  .string()
  .refine((s) => HHMM.test(s) || !Number.isNaN(Date.parse(s)), { error: "expected 'HH:MM' (daily) or an ISO date-time" });

export const WindowSchema = z
  .strictObject({
    start: timeText
      .optional()
      .describe("When sending may begin: 'HH:MM' every day, or an ISO date-time. Before it, the job waits (durably)."),
    stop: timeText
      .optional()
      .describe("When sending must end: 'HH:MM' or an ISO date-time. Past it, the job stops and reports the rest as not sent."),
    timezone: z
      .string()
      .refine(validZone, { error: 'unknown IANA time zone' })
      .optional()
      .describe("Zone of 'HH:MM' times. @default the machine's zone (a flow test case's zone in msgflow test)"),
  })
  .describe('Send window: { start, stop, timezone }.');

export type SendWindow = z.output<typeof WindowSchema>;

/** Offset of `tz` from UTC at instant `at`, ms (positive east of Greenwich). */
function offsetAt(at: number, tz: string): number {
  const parts = zoneFormat('parts', tz).formatToParts(new Date(at));
  const get = (t: string) => Number(parts.find((p) => p.type === t)!.value);
  const asUtc = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  return asUtc - Math.floor(at / 1000) * 1000;
}

/** The calendar date (y, m, d) of instant `at` in `tz`. */
function dateIn(at: number, tz: string): [number, number, number] {
  const shifted = new Date(at + offsetAt(at, tz));
  return [shifted.getUTCFullYear(), shifted.getUTCMonth(), shifted.getUTCDate()];
}

/** The instant at which the wall clock in `tz` shows y-m-d h:mi. */
function wallToInstant(y: number, m: number, d: number, h: number, mi: number, tz: string): number {
  const guess = Date.UTC(y, m, d, h, mi);
  const first = guess - offsetAt(guess, tz);
  return guess - offsetAt(first, tz);
}

export interface ResolvedWindow {
  /** Earliest send time, or undefined for none. */
  startAt?: number;
  /** Latest send time, or undefined for none. */
  stopAt?: number;
}

/**
 * The window that applies at `now`: for daily times, today's window (or
 * yesterday's overnight window if `now` is still inside it); if today's
 * window is over, it is reported as over (stopAt ≤ now), not moved to tomorrow.
 * `zone`: what `HH:MM` means when the window names no timezone (the run
 * clock's zone, see zoneOf).
 */
export function resolveWindow(w: SendWindow | undefined, now: number, zone: string): ResolvedWindow {
  if (!w || (w.start === undefined && w.stop === undefined)) return {};
  const tz = w.timezone ?? zone;
  const at = (text: string | undefined, dayShift: number): number | undefined => {
    if (text === undefined) return undefined;
    const m = HHMM.exec(text);
    if (!m) return Date.parse(text);
    const [y, mo, d] = dateIn(now, tz);
    return wallToInstant(y, mo, d + dayShift, Number(m[1]), Number(m[2]), tz);
  };
  const daily = (w.start !== undefined && HHMM.test(w.start)) || (w.stop !== undefined && HHMM.test(w.stop));
  let startAt = at(w.start, 0);
  let stopAt = at(w.stop, 0);
  if (daily && startAt !== undefined && stopAt !== undefined && stopAt <= startAt) {
    // Overnight window: either we are in the one that began yesterday, or in tonight's.
    const yStart = at(w.start, -1)!;
    if (now < stopAt && now >= yStart) startAt = yStart;
    else stopAt = at(w.stop, 1);
  }
  return { startAt, stopAt };
}

/**
 * When sending may happen next, from `now`: `now` itself inside the window,
 * the window's start before it, tomorrow's start once a daily window closed
 * for today; undefined when an absolute window is over for good. `zone` as
 * for {@link resolveWindow}.
 */
export function nextOpening(w: SendWindow | undefined, now: number, zone: string): { at: number; stopAt?: number } | undefined {
  const today = resolveWindow(w, now, zone);
  if (today.stopAt === undefined || now < today.stopAt) return { at: Math.max(now, today.startAt ?? now), stopAt: today.stopAt };
  const daily = w !== undefined && ((w.start !== undefined && HHMM.test(w.start)) || (w.stop !== undefined && HHMM.test(w.stop)));
  if (!daily) return undefined;
  // Today's window is over: the same window one day later (DST handled by resolveWindow).
  // A window with only a daily `stop` opens again at midnight.
  const tomorrow = resolveWindow(w.start === undefined ? { ...w, start: '00:00' } : w, now + 24 * 3_600_000, zone);
  return { at: tomorrow.startAt!, stopAt: tomorrow.stopAt };
}
