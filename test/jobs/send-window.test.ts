import { describe, expect, it } from 'vitest';
import { nextOpening, resolveWindow } from '../../src/actions/window.js';

describe('send windows', () => {
  it('resolves daily windows in a zone, across DST and overnight', () => {
    const summer = resolveWindow({ start: '09:00', stop: '18:00', timezone: 'Europe/Berlin' }, Date.parse('2026-07-01T12:00:00Z'), 'UTC');
    expect(summer.startAt).toBe(Date.parse('2026-07-01T07:00:00Z'));
    const winter = resolveWindow({ start: '09:00', stop: '18:00', timezone: 'Europe/Berlin' }, Date.parse('2026-01-15T12:00:00Z'), 'UTC');
    expect(winter.stopAt).toBe(Date.parse('2026-01-15T17:00:00Z'));
    const night = resolveWindow({ start: '22:00', stop: '06:00', timezone: 'UTC' }, Date.parse('2026-01-15T03:00:00Z'), 'UTC');
    expect(night).toEqual({ startAt: Date.parse('2026-01-14T22:00:00Z'), stopAt: Date.parse('2026-01-15T06:00:00Z') });
    expect(resolveWindow({ start: '2026-02-01T10:00:00Z' }, 0, 'UTC')).toEqual({
      startAt: Date.parse('2026-02-01T10:00:00Z'),
      stopAt: undefined,
    });
  });

  it('the next opening of a window: inside it now, before it its start, after a daily one tomorrow, after an absolute one never', () => {
    const w = { start: '09:00', stop: '17:00', timezone: 'UTC' };
    expect(nextOpening(w, Date.parse('2026-01-05T12:00:00Z'), 'UTC')?.at).toBe(Date.parse('2026-01-05T12:00:00Z'));
    expect(nextOpening(w, Date.parse('2026-01-05T07:00:00Z'), 'UTC')?.at).toBe(Date.parse('2026-01-05T09:00:00Z'));
    expect(nextOpening(w, Date.parse('2026-01-05T18:00:00Z'), 'UTC')?.at).toBe(Date.parse('2026-01-06T09:00:00Z'));
    expect(nextOpening({ stop: '17:00', timezone: 'UTC' }, Date.parse('2026-01-05T18:00:00Z'), 'UTC')?.at).toBe(
      Date.parse('2026-01-06T00:00:00Z'),
    );
    expect(
      nextOpening({ start: '2026-01-01T09:00:00Z', stop: '2026-01-01T17:00:00Z' }, Date.parse('2026-01-05T12:00:00Z'), 'UTC'),
    ).toBeUndefined();
  });

  it("reads a window without a timezone in the zone it is given (the run clock's), whatever the machine's", () => {
    const w = { start: '09:00', stop: '18:00' };
    const at = Date.parse('2026-01-05T07:00:00Z');
    expect(resolveWindow(w, at, 'UTC')).toEqual({
      startAt: Date.parse('2026-01-05T09:00:00Z'),
      stopAt: Date.parse('2026-01-05T18:00:00Z'),
    });
    // 07:00 UTC is 16:00 in Tokyo: inside that day's window, which opened at 00:00 UTC.
    expect(resolveWindow(w, at, 'Asia/Tokyo')).toEqual({
      startAt: Date.parse('2026-01-05T00:00:00Z'),
      stopAt: Date.parse('2026-01-05T09:00:00Z'),
    });
    expect(nextOpening(w, at, 'Asia/Tokyo')?.at).toBe(at);
    expect(nextOpening(w, at, 'UTC')?.at).toBe(Date.parse('2026-01-05T09:00:00Z'));
    // A timezone the window names wins over the one given.
    expect(resolveWindow({ ...w, timezone: 'UTC' }, at, 'Asia/Tokyo').startAt).toBe(Date.parse('2026-01-05T09:00:00Z'));
  });
});
