import { describe, expect, it } from 'vitest';
import { computeBackoff, parseRetryAfter } from '../../src/client/backoff.js';

describe('computeBackoff', () => {
  const opts = { baseMs: 500, maxMs: 30_000 };
  it('doubles per retry and caps', () => {
    const top = (retry: number) => computeBackoff(retry, { ...opts, jitter: 'full' }, () => 1);
    expect([1, 2, 3, 4, 7, 8, 30].map(top)).toEqual([500, 1000, 2000, 4000, 30_000, 30_000, 30_000]);
  });
  it('full jitter spans [0, d], equal jitter [d/2, d]', () => {
    expect(computeBackoff(3, { ...opts, jitter: 'full' }, () => 0)).toBe(0);
    expect(computeBackoff(3, { ...opts, jitter: 'full' }, () => 0.5)).toBe(1000);
    expect(computeBackoff(3, { ...opts, jitter: 'equal' }, () => 0)).toBe(1000);
    expect(computeBackoff(3, { ...opts, jitter: 'equal' }, () => 1)).toBe(2000);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 1.5 ', now)).toBe(1500);
    expect(parseRetryAfter('0', now)).toBe(0);
  });
  it('reads an HTTP-date against the given clock, never negative', () => {
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now)).toBe(0);
  });
  it('ignores absent or unreadable values', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('-5', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });
});
