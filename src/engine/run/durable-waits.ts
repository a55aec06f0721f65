/**
 * Durable waits of one run. A wait is persisted with an ABSOLUTE wake time
 * before the engine sleeps, so a restart (even after kill -9) finds it and
 * sleeps only what is left, instead of a setTimeout that dies with the
 * process. The same mechanism serves `ctx.wait()` and rate-limit pauses.
 *
 * A wait may end before its time: one given `lifted` (a wait on a record in
 * the store, such as an instance-wide pause) asks it every `recheckMs` of
 * real time while it sleeps. The store is the signal, not an event of this
 * process, so a lift from another process or host wakes it too.
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
  /**
   * How often (real time, whatever the clock) a wait with `lifted` asks it:
   * the delay between a lift and the run calling the instance again.
   * @default 1000
   */
  recheckMs?: number;
}

/** Default of {@link DurableWaitsOptions.recheckMs}. */
export const DEFAULT_WAIT_RECHECK_MS = 1000;

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
    const early = new AbortController();
    const watching = options.lifted ? this.watch(options.lifted, options.liftedEvery, early, signal) : undefined;
    try {
      await this.o.onWaiting(rec);
      await this.o.clock.sleep(rec.until - this.o.clock.now(), AbortSignal.any([signal, early.signal]));
    } catch (e) {
      // Lifted: the wait is over as if its time had come. Aborted by the run: it stays for the resume.
      if (signal.aborted || !early.signal.aborted) throw e;
    } finally {
      early.abort();
      await watching;
      this.active.delete(rec);
    }
    await this.forget(key);
    if (this.active.size === 0) await this.o.onResumed(rec);
  }

  /**
   * Asks `lifted` every recheckMs of real time (or every `clockEvery` ms of
   * the run's clock) until it answers true (then aborts `early`) or the wait
   * ends either way. A failed read is asked again.
   */
  private async watch(
    lifted: () => boolean | Promise<boolean>,
    clockEvery: number | undefined,
    early: AbortController,
    run: AbortSignal,
  ): Promise<void> {
    const stop = AbortSignal.any([early.signal, run]);
    const delay =
      clockEvery === undefined
        ? () => realDelay(this.o.recheckMs ?? DEFAULT_WAIT_RECHECK_MS, stop)
        : () =>
            this.o.clock.sleep(Math.max(1, clockEvery), stop).then(
              () => true,
              () => false,
            );
    while (!stop.aborted) {
      if (!(await delay())) return;
      let yes = false;
      try {
        yes = await lifted();
      } catch {
        // the store did not answer: ask again next time
      }
      if (yes && !stop.aborted) early.abort();
    }
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

/** Resolves true after `ms` of real time, false at once when `signal` aborts; the timer never keeps the process up. */
function realDelay(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const done = (v: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      resolve(v);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    timer.unref();
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
