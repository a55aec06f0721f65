/**
 * `new Date(ms).toISOString()`, cheaper for times that come in runs: the
 * text up to the second is made once per second met, the milliseconds
 * appended (a bulk job stamps a million report rows, and toISOString cost
 * more than a microsecond each). Outside years 0 to 9999, and for a time
 * that is no number of ms, it is toISOString's own answer (or error).
 *
 * @example isoTime(Date.UTC(2026, 10, 28, 9, 0, 1, 5)) // '2026-11-28T09:00:01.005Z'
 */
export function isoTime(ms: number): string {
  if (!(ms >= 0 && ms <= LAST_FOUR_DIGIT_MS) || !Number.isInteger(ms)) return new Date(ms).toISOString();
  const second = Math.floor(ms / 1000);
  if (second !== lastSecond) {
    // The ISO text of the whole second, without its '.000Z'.
    lastPrefix = new Date(second * 1000).toISOString().slice(0, -4);
    lastSecond = second;
  }
  const milli = ms - second * 1000;
  return `${lastPrefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}

/** 9999-12-31T23:59:59.999Z: toISOString writes later years with six digits and a sign. */
const LAST_FOUR_DIGIT_MS = 253_402_300_799_999;

// cache: the second last formatted and its text, a pure function's memo: every caller gets the same answer for the same second.
let lastSecond = -1;
// cache: see lastSecond.
let lastPrefix = '';
