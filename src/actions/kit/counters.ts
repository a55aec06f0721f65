/**
 * A job's counters (done, failed, invalid, duplicate, skipped, waiting), reported through
 * `ctx.progress`: the same numbers reach the bar, the log lines, `msgflow
 * runs`, the job's summary and the exit code. Updates are sent every
 * `every` changes or every `intervalMs` on the job's clock, whichever comes
 * first (and on demand), so a million records do not mean a million progress
 * events and a slow, paced job still shows its progress.
 */
import type { ActionContext, ProgressCounts } from '../../engine/action.js';

export type CounterName = 'done' | 'failed' | 'invalid' | 'duplicate' | 'skipped' | 'waiting';

export class JobCounters {
  done = 0;
  failed = 0;
  invalid = 0;
  duplicate = 0;
  skipped = 0;
  waiting = 0;
  total?: number;
  private pending = 0;
  private lastAt = 0;

  /**
   * @param every send an update after this many changes. @default 100
   * @param intervalMs ...or once this long has passed since the last one (when ctx has a clock). @default 500
   */
  constructor(
    private readonly ctx: Pick<ActionContext, 'progress'> & Partial<Pick<ActionContext, 'clock'>>,
    private readonly every = 100,
    private readonly intervalMs = 500,
  ) {}

  /** Adds to a counter; reports when `every` changes have gathered or `intervalMs` passed. */
  add(name: CounterName, n = 1): void {
    this[name] += n;
    // While records wait (a pause of hours), the clock may stand still: the records
    // still in flight that commit meanwhile are shown at once, not when the wait ends.
    if (++this.pending >= this.every || this.waiting > 0) return this.flush();
    if (this.ctx.clock && this.ctx.clock.now() - this.lastAt >= this.intervalMs) this.flush();
  }

  /**
   * Moves one record from a counter to another (either may be absent: a record
   * counted for the first time, or no longer counted); reported as {@link add} is.
   */
  move(from: CounterName | undefined, to: CounterName | undefined): void {
    if (from) this[from]--;
    if (to) this.add(to);
    else if (from) this.add(from, 0);
  }

  /** Sends the current counts now. */
  flush(): void {
    this.pending = 0;
    this.lastAt = this.ctx.clock?.now() ?? 0;
    this.ctx.progress(this.snapshot());
  }

  /** Runs `fn` (a durable wait) with `n` records counted as waiting. */
  async waitingFor<T>(fn: () => Promise<T>, n = 1): Promise<T> {
    this.waiting += n;
    this.flush();
    try {
      return await fn();
    } finally {
      this.waiting -= n;
      this.flush();
    }
  }

  snapshot(): ProgressCounts {
    return {
      done: this.done,
      ...(this.total === undefined ? {} : { total: this.total }),
      failed: this.failed,
      invalid: this.invalid,
      duplicate: this.duplicate,
      skipped: this.skipped,
      waiting: this.waiting,
    };
  }
}
