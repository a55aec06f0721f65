import { describe, expect, it } from 'vitest';
import { isoTime } from '../../src/util/iso-time.js';

describe('isoTime', () => {
  it('writes what toISOString writes, for times in runs and out of order', () => {
    const base = Date.UTC(2026, 10, 28, 9, 0, 0, 0);
    const times = [
      base,
      base + 1,
      base + 9,
      base + 10,
      base + 99,
      base + 100,
      base + 999,
      base + 1000,
      base + 5,
      base - 1,
      0,
      1,
      999,
      86_399_999,
    ];
    for (let i = 0; i < 2_000; i += 7) times.push(base + i * 13);
    for (const t of times) expect(isoTime(t)).toBe(new Date(t).toISOString());
  });

  it('gives toISOString its way outside years 0 to 9999 and for fractions of a ms', () => {
    for (const t of [-1, -62_198_755_200_000, 253_402_300_800_000, 8.64e15, 1.5, base()])
      expect(isoTime(t)).toBe(new Date(t).toISOString());
    expect(() => isoTime(NaN)).toThrow(RangeError);
    expect(() => isoTime(8.64e15 + 1)).toThrow(RangeError);
  });
});

function base(): number {
  return Date.UTC(2026, 0, 1) + 0.25;
}
