/** Text pieces of progress lines: durations, rates, the bar. */

/**
 * `mm:ss`, or `h:mm:ss` from one hour on.
 * @example formatDuration(65_000) // '01:05'
 */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const mmss = `${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}`;
  return h > 0 ? `${h}:${mmss}` : mmss;
}

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
