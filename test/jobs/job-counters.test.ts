import { describe, expect, it } from 'vitest';
import { JobCounters } from '../../src/actions/kit/counters.js';

describe('job counters', () => {
  it('counters report every `every` changes and on flush', () => {
    const seen: unknown[] = [];
    const c = new JobCounters({ progress: (u) => void seen.push(u) }, 2);
    c.total = 3;
    c.add('done');
    expect(seen).toHaveLength(0);
    c.add('invalid');
    c.add('skipped');
    c.flush();
    expect(seen).toEqual([
      { done: 1, total: 3, failed: 0, invalid: 1, duplicate: 0, skipped: 0, waiting: 0 },
      { done: 1, total: 3, failed: 0, invalid: 1, duplicate: 0, skipped: 1, waiting: 0 },
    ]);
  });
});
