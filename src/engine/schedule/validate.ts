/**
 * Validation of `on.schedule` values, shared by the flow loader (which reports
 * the text with file:line:col) and the scheduler. An expression must satisfy
 * BOTH libraries: node-cron fires it, cron-parser enumerates missed slots, and
 * a cron string one accepts and the other rejects would fail at start-up
 * instead of at `msgflow validate`.
 */
import { validateDetailed } from 'node-cron';
import { CronExpressionParser } from 'cron-parser';

const FIELD_RANGES: Record<string, string> = {
  second: 'second (0-59)',
  minute: 'minute (0-59)',
  hour: 'hour (0-23)',
  dayOfMonth: 'day of month (1-31)',
  month: 'month (1-12 or JAN-DEC)',
  dayOfWeek: 'day of week (0-7 or SUN-SAT)',
};

/**
 * Checks a cron expression: 5 fields (`minute hour day-of-month month
 * day-of-week`) or 6 with seconds first.
 *
 * @returns undefined when valid, else a sentence saying what is wrong.
 * @example
 * validateCron('0 9 * * 1-5');  // undefined
 * validateCron('61 * * * *');   // 'invalid cron expression "61 * * * *": minute (0-59) cannot be "61"'
 */
export function validateCron(expr: string): string | undefined {
  if (typeof expr !== 'string' || expr.trim() === '') return 'cron expression is empty';
  const text = expr.trim();
  const fields = text.split(/\s+/);
  if (!text.startsWith('@') && fields.length !== 5 && fields.length !== 6) {
    return `invalid cron expression "${text}": expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, got ${fields.length}`;
  }
  const detailed = validateDetailed(text);
  if (!detailed.valid) {
    const first = detailed.errors[0];
    if (first?.message.includes('impossible')) {
      return `invalid cron expression "${text}": day of month "${first.value ?? ''}" never occurs in the given month(s)`;
    }
    const field = first && FIELD_RANGES[first.field];
    if (field) return `invalid cron expression "${text}": ${field} cannot be "${first.value ?? ''}"`;
    return `invalid cron expression "${text}": ${first?.message ?? 'not understood'}`;
  }
  if (fields.length >= 5) {
    // Vixie cron (and cron-parser, which computes missed runs) fires when EITHER
    // day field matches; node-cron (which fires live runs) requires BOTH. Refusing
    // the combination keeps live and missed runs on the same calendar.
    const dom = fields[fields.length - 3];
    const dow = fields[fields.length - 1];
    if (!isWildcard(dom) && !isWildcard(dow)) {
      return `invalid cron expression "${text}": restricts both day of month ("${dom}") and day of week ("${dow}"), which cron implementations read differently (either vs both); set one of them to "*"`;
    }
  }
  try {
    CronExpressionParser.parse(text, { strict: false });
  } catch (err) {
    return `invalid cron expression "${text}": ${(err as Error).message}`;
  }
  return undefined;
}

function isWildcard(field: string): boolean {
  return field === '*' || field === '?';
}

/**
 * Checks an IANA time zone name (e.g. `Europe/Berlin`, `UTC`) against the
 * zones this Node build knows (Intl), which is what node-cron and cron-parser
 * use too.
 *
 * @returns undefined when valid, else a sentence saying what is wrong.
 */
export function validateTimezone(tz: string): string | undefined {
  if (typeof tz !== 'string' || tz.trim() === '') return 'timezone is empty';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch {
    return `unknown timezone "${tz}": expected an IANA zone name such as Europe/Berlin or UTC`;
  }
  return undefined;
}
