/**
 * A job's counters (done, failed, invalid, skipped, waiting), reported through
 * `ctx.progress`: the same numbers reach the bar, the log lines, `msgflow
 * runs`, the job's summary and the exit code. Updates are sent every
 * `every` changes (and on demand), so a million records do not mean a
 * million progress events.
 */
import type { ActionContext, ProgressCounts } from '../../engine/action.js';

export type CounterName = 'done' | 'failed' | 'invalid' | 'skipped' | 'waiting';

export class JobCounters {
  done = 0;
  failed = 0;
  invalid = 0;
  skipped = 0;
  waiting = 0;
  total?: number;
  private pending = 0;

  /** @param every send an update after this many changes. @default 100 */
  constructor(
    private readonly ctx: Pick<ActionContext, 'progress'>,
    private readonly every = 100,
  ) {}

  /** Adds to a counter; reports when `every` changes have gathered. */
  add(name: CounterName, n = 1): void {
    this[name] += n;
    if (++this.pending >= this.every) this.flush();
  }

  /** Sends the current counts now. */
  flush(): void {
    this.pending = 0;
    this.ctx.progress(this.snapshot());
  }

  snapshot(): ProgressCounts {
    return {
      done: this.done,
      ...(this.total === undefined ? {} : { total: this.total }),
      failed: this.failed,
      invalid: this.invalid,
      skipped: this.skipped,
      waiting: this.waiting,
    };
  }
}
