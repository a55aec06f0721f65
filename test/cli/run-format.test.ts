import { describe, expect, it } from 'vitest';
import { formatRunSummary } from '../../src/cli/run-format.js';
import type { RunRecord, StepRecord } from '../../src/store/types.js';

const run: RunRecord = {
  id: 'r1',
  flow: 'broadcast-file',
  status: 'succeeded',
  trigger: 'manual',
  dryRun: false,
  startedAt: 0,
  finishedAt: 17_000,
  durationMs: 17_000,
  updatedAt: 17_000,
  itemsDone: 1,
  itemsFailed: 0,
  resumes: 0,
};
const step = (over: Partial<StepRecord>): StepRecord => ({
  runId: 'r1',
  step: 'broadcast',
  action: 'files.broadcast',
  status: 'succeeded',
  startedAt: 0,
  done: 1,
  failed: 0,
  forEach: false,
  ...over,
});

describe('formatRunSummary', () => {
  it("prints a job's counts and its report under its step", () => {
    const text = formatRunSummary(run, [step({ output: { total: 4, sent: 4, failed: 0, report: 'reports/b.csv', rows: [1] } })]);
    expect(text).toContain('run r1 broadcast-file: succeeded in 17s');
    expect(text).toContain('    total: 4, sent: 4, failed: 0');
    expect(text).toContain('    report: reports/b.csv');
  });

  it('shows forEach counts and a step error', () => {
    const text = formatRunSummary({ ...run, status: 'failed' }, [
      step({
        step: 'check',
        action: 'checkAccount',
        forEach: true,
        total: 3,
        done: 2,
        failed: 1,
        status: 'failed',
        error: { message: '1 of 3 items failed' },
      }),
    ]);
    expect(text).toContain('  check (checkAccount): failed (3 items): 2 done, 1 failed - 1 of 3 items failed');
  });
});
