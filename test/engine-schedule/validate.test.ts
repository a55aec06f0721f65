import { describe, expect, it } from 'vitest';
import { validateCron, validateTimezone } from '../../src/engine/schedule/validate.js';

describe('validateCron', () => {
  it.each(['0 9 * * 1-5', '* * * * * *', '0 9 * * MON-FRI', '*/15 * * * *', '0 0 1,15 * *', '@daily', '0 0 ? * 5', '0 0 L * *'])(
    'accepts %s',
    (expr) => {
      expect(validateCron(expr)).toBeUndefined();
    },
  );

  it('names the field and the bad value', () => {
    expect(validateCron('61 * * * *')).toBe('invalid cron expression "61 * * * *": minute (0-59) cannot be "61"');
    expect(validateCron('0 25 * * *')).toContain('hour (0-23) cannot be "25"');
    expect(validateCron('0 9 * * 8')).toContain('day of week (0-7 or SUN-SAT) cannot be "8"');
    expect(validateCron('0 9 * 13 *')).toContain('month (1-12 or JAN-DEC) cannot be "13"');
    expect(validateCron('*/0 * * * *')).toContain('minute (0-59) cannot be "*/0"');
  });

  it('counts fields', () => {
    expect(validateCron('* * *')).toContain(
      'expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, got 3',
    );
    expect(validateCron('nonsense')).toContain('got 1');
    expect(validateCron('   ')).toBe('cron expression is empty');
  });

  it('refuses impossible dates', () => {
    expect(validateCron('0 0 30 2 *')).toContain('day of month "30" never occurs');
  });

  it('refuses day-of-month AND day-of-week, which node-cron and cron-parser read differently', () => {
    expect(validateCron('0 0 13 * 5')).toContain('restricts both day of month ("13") and day of week ("5")');
    expect(validateCron('0 0 0 13 * FRI')).toContain('restricts both');
  });

  it('refuses what only one library understands', () => {
    // node-cron knows the W (nearest weekday) suffix, cron-parser does not.
    expect(validateCron('0 0 15W * *')).toMatch(/^invalid cron expression "0 0 15W \* \*": /);
    // cron-parser takes "5/15", node-cron does not.
    expect(validateCron('5/15 * * * *')).toMatch(/^invalid cron expression/);
  });
});

describe('validateTimezone', () => {
  it.each(['Europe/Berlin', 'UTC', 'America/New_York', 'Asia/Kolkata', 'Etc/GMT+1'])('accepts %s', (tz) => {
    expect(validateTimezone(tz)).toBeUndefined();
  });

  it('refuses unknown zones with a hint', () => {
    expect(validateTimezone('Mars/Olympus')).toBe(
      'unknown timezone "Mars/Olympus": expected an IANA zone name such as Europe/Berlin or UTC',
    );
    expect(validateTimezone('GMT+25')).toContain('unknown timezone');
    expect(validateTimezone('')).toBe('timezone is empty');
  });
});
