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
