import { describe, expect, it } from 'vitest';
import { parseDuration, formatDuration } from '../../src/util/duration.js';

describe('durations', () => {
  it('parses and formats durations', () => {
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('250')).toBe(250);
    expect(parseDuration('2 hours')).toBeUndefined();
    expect(formatDuration(7_200_000)).toBe('2h');
  });
});
