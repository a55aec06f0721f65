import { describe, expect, it } from 'vitest';
import { missedSlots, nextSlot } from '../../src/engine/schedule/slots.js';

const iso = (t: number | undefined) => (t === undefined ? undefined : new Date(t).toISOString());

describe('slots', () => {
  it('honours the time zone: 09:00 Berlin is not 09:00 UTC, and follows DST', () => {
    const winter = Date.parse('2026-01-15T00:00:00Z');
    expect(iso(nextSlot('0 9 * * *', 'UTC', winter))).toBe('2026-01-15T09:00:00.000Z');
    expect(iso(nextSlot('0 9 * * *', 'Europe/Berlin', winter))).toBe('2026-01-15T08:00:00.000Z');
    const summer = Date.parse('2026-07-15T00:00:00Z');
    expect(iso(nextSlot('0 9 * * *', 'Europe/Berlin', summer))).toBe('2026-07-15T07:00:00.000Z');
  });

  it('next is strictly after the given time', () => {
    const slot = Date.parse('2026-01-15T09:00:00Z');
    expect(iso(nextSlot('0 9 * * *', 'UTC', slot))).toBe('2026-01-16T09:00:00.000Z');
  });

  it('enumerates missed weekday slots over a weekend, oldest first, window (after, upTo]', () => {
    // Fri 2026-01-16 09:00 Berlin was the last fire; now Tue 2026-01-20 08:00Z (= 09:00 Berlin, exactly a slot).
    const after = Date.parse('2026-01-16T08:00:00Z');
    const upTo = Date.parse('2026-01-20T08:00:00Z');
    const { slots, truncated } = missedSlots('0 9 * * 1-5', 'Europe/Berlin', after, upTo, 100);
    expect(slots.map(iso)).toEqual(['2026-01-19T08:00:00.000Z', '2026-01-20T08:00:00.000Z']);
    expect(truncated).toBe(false);
    // In UTC the same window holds Monday 09:00Z only (Tuesday 09:00Z is after upTo).
    expect(missedSlots('0 9 * * 1-5', 'UTC', after, upTo, 100).slots.map(iso)).toEqual([
      '2026-01-16T09:00:00.000Z',
      '2026-01-19T09:00:00.000Z',
    ]);
  });

  it('keeps only the latest `limit` slots of a long gap and says so', () => {
    const after = Date.parse('2026-01-01T00:00:00Z');
    const upTo = after + 30 * 86_400_000; // a month of per-second slots
    const { slots, truncated } = missedSlots('* * * * * *', 'UTC', after, upTo, 5);
    expect(truncated).toBe(true);
    expect(slots.map(iso)).toEqual([4, 3, 2, 1, 0].map((s) => iso(upTo - s * 1000)));
  });

  it('empty window', () => {
    const t = Date.parse('2026-01-01T00:00:00Z');
    expect(missedSlots('0 9 * * *', 'UTC', t, t, 10)).toEqual({ slots: [], truncated: false });
    expect(missedSlots('0 9 * * *', 'UTC', t, t + 3600_000, 10).slots).toEqual([]);
  });
});
