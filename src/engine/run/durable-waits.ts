/**
 * Durable waits of one run. A wait is persisted with an ABSOLUTE wake time
 * before the engine sleeps, so a restart (even after kill -9) finds it and
 * sleeps only what is left, instead of a setTimeout that dies with the
 * process. The same mechanism serves `ctx.wait()` and rate-limit pauses.
 */
import type { EngineStore, WaitRecord } from '../../store/types.js';
import type { Clock } from '../../util/clock.js';
import type { WaitOptions } from '../action.js';

export interface WaitTarget {
  step: string;
  /** forEach item index; undefined for a single step. */
  item?: number;
}

export interface DurableWaitsOptions {
  store: EngineStore;
  runId: string;
  clock: Clock;
  /** The run starts waiting (first active wait) or its earliest wake time changes. */
  onWaiting(wait: WaitRecord): Promise<void> | void;
  /** The last active wait is over. */
  onResumed(wait: WaitRecord): Promise<void> | void;
}

/** Key of a wait within its run: `<step>/<item or ->/<key>`. */
export function waitKey(target: WaitTarget, key = 'wait'): string {
  return `${target.step}/${target.item ?? '-'}/${key}`;
}

export class DurableWaits {
  /** Persisted waits of the run (loaded on resume), by key. This process owns the run, so the map is authoritative. */
  private readonly known = new Map<string, WaitRecord>();
  private readonly active = new Set<WaitRecord>();

  constructor(private readonly o: DurableWaitsOptions) {}

  /** Seeds the persisted waits found on resume. */
  load(waits: readonly WaitRecord[]): void {
    for (const w of waits) this.known.set(w.key, w);
  }

  /** The persisted wait under `key`, if any (e.g. a rate-limit pause to honour before retrying). */
  pending(target: WaitTarget, key: string): WaitRecord | undefined {
    return this.known.get(waitKey(target, key));
  }

  get activeCount(): number {
    return this.active.size;
  }

  /**
   * Persists (or finds) the wait, sleeps until its wake time on the clock,
   * then forgets it. Rejects with the signal's reason when aborted: the wait
   * then stays persisted for the resume.
   */
  async wait(target: WaitTarget, options: WaitOptions, signal: AbortSignal): Promise<void> {
    const key = waitKey(target, options.key);
    const now = this.o.clock.now();
    let rec = this.known.get(key);
    if (!rec) {
      const until = options.until ?? now + Math.max(0, options.ms ?? 0);
      rec = { key, until, reason: options.reason, step: target.step, createdAt: now };
      if (target.item !== undefined) rec.item = target.item;
      await this.o.store.setWait(this.o.runId, rec);
      this.known.set(key, rec);
    }
    if (rec.until <= now) {
      await this.forget(key);
      return;
    }
    this.active.add(rec);
    try {
      await this.o.onWaiting(rec);
      await this.o.clock.sleep(rec.until - this.o.clock.now(), signal);
    } finally {
      this.active.delete(rec);
    }
    await this.forget(key);
    if (this.active.size === 0) await this.o.onResumed(rec);
  }

  /** The earliest wake time among active waits. */
  earliest(): WaitRecord | undefined {
    let best: WaitRecord | undefined;
    for (const w of this.active) if (!best || w.until < best.until) best = w;
    return best;
  }

  private async forget(key: string): Promise<void> {
    if (!this.known.delete(key)) return;
    await this.o.store.deleteWait(this.o.runId, key);
  }
}
