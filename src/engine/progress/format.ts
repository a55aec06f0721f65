/** Text pieces of progress and log lines: rates, the bar, waits, counters (durations: util/duration.ts). */
import type { ItemCounts } from '../../store/types.js';
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
 * When a wait ends, with what is left: `21:14 (1h52m)` in the machine's local
 * time, or `21:14Z (1h52m)` in UTC; a date is added when it is not within the
 * next 24 hours.
 * @example formatUntil(now + 6_720_000, now) // '21:14 (1h52m)'
 */
export function formatUntil(until: number, now: number, opts: { utc?: boolean } = {}): string {
  const d = new Date(until);
  const [y, mo, day, h, mi] = opts.utc
    ? [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes()]
    : [d.getFullYear(), d.getMonth(), d.getDate(), d.getHours(), d.getMinutes()];
  const hm = `${pad2(h)}:${pad2(mi)}${opts.utc ? 'Z' : ''}`;
  const left = until - now;
  const when = left >= 0 && left < 24 * 3_600_000 ? hm : `${y}-${pad2(mo + 1)}-${pad2(day)} ${hm}`;
  return `${when} (${left > 0 ? formatSpan(left) : 'now'})`;
}

/** `text` cut to `width` characters, the cut marked with `…`. */
export function clip(text: string, width: number): string {
  if (text.length <= width) return text;
  return width <= 1 ? text.slice(0, Math.max(0, width)) : `${text.slice(0, width - 1)}…`;
}

/** Fewer characters of a reason than this say nothing: the reason is left out instead. */
const MIN_REASON = 6;

/**
 * `waiting until 21:14 (1h52m): <reason>`: what a waiting step or run shows
 * instead of an ETA. The end comes first and is never cut: with `width`, the
 * reason is cut to fit (or left out when too little room is left).
 */
export function formatWaiting(
  reason: string | undefined,
  until: number | undefined,
  now: number,
  opts: { utc?: boolean; width?: number } = {},
): string {
  const head = until === undefined ? 'waiting' : `waiting until ${formatUntil(until, now, opts)}`;
  if (!reason) return head;
  const room = opts.width === undefined ? reason.length : opts.width - head.length - 2;
  return room >= Math.min(MIN_REASON, reason.length) ? `${head}: ${clip(reason, room)}` : head;
}

/** The counters in the order they are always said. */
const COUNTERS = ['done', 'failed', 'invalid', 'duplicate', 'skipped'] as const;

/**
 * The one wording of a step's or a run's counters, used by the log lines,
 * the progress bar and `msgflow runs`: `8 done, 4 invalid, 2 duplicate`
 * (done always, the others when not 0).
 */
export function formatCounts(c: ItemCounts): string {
  return COUNTERS.filter((k) => k === 'done' || (c[k] ?? 0) > 0)
    .map((k) => `${c[k] ?? 0} ${k}`)
    .join(', ');
}

/** `14 items`, `1 item`. */
export function formatItems(n: number): string {
  return `${n} item${n === 1 ? '' : 's'}`;
}

/** Counts by flow, as a retention pass tells them: `reply 12, campaign 1`. */
export function formatByFlow(byFlow: Record<string, number>): string {
  return Object.entries(byFlow)
    .map(([flow, n]) => `${flow} ${n}`)
    .join(', ');
}
