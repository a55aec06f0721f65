import { describe, expect, it } from 'vitest';
import { paceDelay } from '../../src/actions/pace.js';

describe('pacing', () => {
  it('jitters the pace within ± jitter', () => {
    expect(paceDelay({ delay: 1000, jitter: 0.3 }, () => 0)).toBe(700);
    expect(paceDelay({ delay: 1000, jitter: 0.3 }, () => 1)).toBe(1300);
    expect(paceDelay({ delay: 1000, jitter: 0 }, Math.random)).toBe(1000);
  });
});
