/** Text pieces of progress lines: rates, the bar, waits (durations: util/duration.ts). */
import { formatSpan } from '../../util/duration.js';

/** Items per second with a precision that suits the size. */
export function formatRate(perSecond: number): string {
  if (!Number.isFinite(perSecond) || perSecond <= 0) return '0';
  if (perSecond >= 100) return String(Math.round(perSecond));
  if (perSecond >= 10) return perSecond.toFixed(1);
  return perSecond.toFixed(2);
}

/**
 * `[#####.....]` with `width` cells; `[?]`-style empty track when the total is unknown.
 * @default width 20
 */
export function renderBar(processed: number, total: number | undefined, width = 20): string {
  if (!total || total <= 0) return `[${'?'.padEnd(width, ' ')}]`;
  const filled = Math.min(width, Math.floor((processed / total) * width));
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
}

const pad2 = (n: number) => String(n).padStart(2, '0');

/**
 * When a wait ends, in the machine's local time, with what is left:
 * `21:14 (1h52m)`; a date is added when it is not within the next 24 hours.
 * @example formatUntil(now + 6_720_000, now) // '21:14 (1h52m)'
 */
export function formatUntil(until: number, now: number): string {
  const d = new Date(until);
  const hm = `${pad2(d.getHours())}:${pad2(d.getMinutes())}`;
  const left = until - now;
  const when = left >= 0 && left < 24 * 3_600_000 ? hm : `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${hm}`;
  return `${when} (${left > 0 ? formatSpan(left) : 'now'})`;
}

/** `waiting: <reason> until 21:14 (1h52m)`: what a waiting step shows instead of an ETA. */
export function formatWaiting(reason: string, until: number, now: number): string {
  return `waiting: ${reason} until ${formatUntil(until, now)}`;
}
