/**
 * Live counts of the steps that are running, fed by bus events. Shared by the
 * TTY bar and the plain periodic lines so both say the same numbers.
 */
import type { EngineBus, EngineEvents } from '../events.js';
import type { Clock } from '../../util/clock.js';
import type { ItemCounts } from '../../store/types.js';

/** A running step's counters ({@link ItemCounts}: a job's ctx.progress feeds invalid and duplicate) and its pace. */
export interface StepProgress extends Required<ItemCounts> {
  runId: string;
  flow: string;
  step: string;
  total?: number;
  /** When the step started in this process (a resumed step counts from its resume). */
  startedAt: number;
  /** Items finished in this process, for the rate: items finished before a restart did not take this process's time. */
  counted: number;
  finished: boolean;
  /** A durable wait in progress (run:waiting until run:resumed): shown instead of a rate-based ETA. */
  waiting?: { until: number; reason: string; since: number };
  /** Time spent in finished waits, left out of the rate. */
  pausedMs: number;
}

export interface StepView extends StepProgress {
  processed: number;
  /** Items per second since the step started in this process. */
  rate: number;
  /** Estimated ms until all items are processed; undefined without a total or a rate, and while waiting. */
  etaMs?: number;
  /** Wall time since the step started in this process, waits included. */
  elapsedMs: number;
}

type Handler = (view: StepView, kind: 'started' | 'update' | 'finished') => void;

export interface StepTracker {
  view(p: StepProgress): StepView;
  active(): StepProgress[];
  close(): void;
}

const key = (e: { runId: string; step: string }) => `${e.runId}\u0000${e.step}`;

export function trackSteps(bus: EngineBus, clock: Clock, onChange: Handler): StepTracker {
  const t = new Tracker(clock, onChange);
  // One table of subscriptions, so close() removes exactly what was added.
  const handlers = [
    ['step:started', t.onStarted],
    ['item:finished', t.onItem],
    ['step:progress', t.onProgress],
    ['step:finished', t.onFinished],
    ['run:waiting', t.onWaiting],
    ['run:resumed', t.onResumed],
    ['run:failed', t.onRunEnd],
    ['run:interrupted', t.onRunEnd],
    ['run:finished', t.onRunEnd],
  ] as const;
  const on = bus.on.bind(bus) as (event: string, fn: (...args: any[]) => void) => void;
  const off = bus.off.bind(bus) as (event: string, fn: (...args: any[]) => void) => void;
  for (const [event, fn] of handlers) on(event, fn);

  return {
    view: (p) => t.view(p),
    active: () => [...t.steps.values()],
    close() {
      for (const [event, fn] of handlers) off(event, fn);
      t.steps.clear();
    },
  };
}

/** The tracker's state; its handlers are arrow properties so they can be (un)subscribed as they are. */
class Tracker {
  readonly steps = new Map<string, StepProgress>();

  constructor(
    private readonly clock: Clock,
    private readonly onChange: Handler,
  ) {}

  view(p: StepProgress): StepView {
    const now = this.clock.now();
    const elapsedMs = Math.max(0, now - p.startedAt);
    // The rate counts working time only: a 2-hour pause must not make the next ETA read 2 hours per item.
    const working = Math.max(0, elapsedMs - p.pausedMs - (p.waiting ? Math.max(0, now - p.waiting.since) : 0));
    const processed = p.done + p.failed + p.invalid + p.duplicate + p.skipped;
    const rate = working > 0 ? (p.counted * 1000) / working : 0;
    const left = p.total === undefined ? undefined : Math.max(0, p.total - processed);
    const etaMs = p.waiting || left === undefined ? undefined : left === 0 ? 0 : rate > 0 ? (left / rate) * 1000 : undefined;
    return { ...p, processed, rate, etaMs, elapsedMs };
  }

  private endWait(p: StepProgress): void {
    if (!p.waiting) return;
    p.pausedMs += Math.max(0, this.clock.now() - p.waiting.since);
    delete p.waiting;
  }

  readonly onStarted = (e: EngineEvents['step:started'][0]) => {
    const p: StepProgress = {
      runId: e.runId,
      flow: e.flow,
      step: e.step,
      total: e.total,
      done: 0,
      failed: 0,
      invalid: 0,
      duplicate: 0,
      skipped: 0,
      startedAt: this.clock.now(),
      counted: 0,
      finished: false,
      pausedMs: 0,
    };
    this.steps.set(key(e), p);
    this.onChange(this.view(p), 'started');
  };

  readonly onWaiting = (e: EngineEvents['run:waiting'][0]) => {
    const p = this.steps.get(key(e));
    if (!p) return;
    const since = p.waiting?.since ?? this.clock.now();
    p.waiting = { until: e.until, reason: e.reason, since };
    this.onChange(this.view(p), 'update');
  };

  readonly onResumed = (e: EngineEvents['run:resumed'][0]) => {
    for (const p of this.steps.values()) {
      if (p.runId !== e.runId || !p.waiting || (e.step !== undefined && p.step !== e.step)) continue;
      this.endWait(p);
      this.onChange(this.view(p), 'update');
    }
  };

  readonly onItem = (e: EngineEvents['item:finished'][0]) => {
    const p = this.steps.get(key(e));
    if (!p) return;
    this.endWait(p);
    const status = e.status;
    if (status === 'failed') p.failed++;
    else if (status === 'skipped') p.skipped++;
    else p.done++;
    p.counted++;
    this.onChange(this.view(p), 'update');
  };

  readonly onProgress = (e: EngineEvents['step:progress'][0]) => {
    const p = this.steps.get(key(e));
    if (!p) return;
    // An action's own counts are absolute (ProgressCounts); the rate counts what changed here.
    const before = p.done + p.failed + p.invalid + p.duplicate + p.skipped;
    p.done = e.done;
    if (e.failed !== undefined) p.failed = e.failed;
    if (e.invalid !== undefined) p.invalid = e.invalid;
    if (e.duplicate !== undefined) p.duplicate = e.duplicate;
    if (e.skipped !== undefined) p.skipped = e.skipped;
    const after = p.done + p.failed + p.invalid + p.duplicate + p.skipped;
    if (after > before) this.endWait(p);
    if (e.total !== undefined) p.total = e.total;
    p.counted += Math.max(0, after - before);
    this.onChange(this.view(p), 'update');
  };

  readonly onFinished = (e: EngineEvents['step:finished'][0]) => {
    const p = this.steps.get(key(e));
    if (!p) return;
    // The step's record has the last word: the same counters as the end line and `msgflow runs`.
    p.done = e.done;
    p.failed = e.failed;
    p.invalid = e.invalid ?? 0;
    p.duplicate = e.duplicate ?? 0;
    p.skipped = e.skipped ?? 0;
    if (e.total !== undefined) p.total = e.total;
    this.endWait(p);
    p.finished = true;
    this.steps.delete(key(e));
    this.onChange(this.view(p), 'finished');
  };

  readonly onRunEnd = (e: { runId: string }) => {
    for (const [k, p] of this.steps) if (p.runId === e.runId) this.steps.delete(k);
  };
}
