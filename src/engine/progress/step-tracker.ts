/**
 * Live counts of the steps that are running, fed by bus events. Shared by the
 * TTY bar and the plain periodic lines so both say the same numbers.
 */
import type { EngineBus, EngineEvents } from '../events.js';
import type { Clock } from '../../util/clock.js';

export interface StepProgress {
  runId: string;
  flow: string;
  step: string;
  total?: number;
  /** Items that succeeded. */
  done: number;
  /** Items that failed (not part of `done`). */
  failed: number;
  /** Input records rejected before any call (ctx.progress `invalid`): not failures of the service. */
  invalid: number;
  /** Records not attempted by design (`if:` false per item, cache policy). */
  skipped: number;
  /** When the step started in this process (a resumed step counts from its resume). */
  startedAt: number;
  /** Items finished in this process, for the rate: items finished before a restart did not take this process's time. */
  counted: number;
  finished: boolean;
  /** The action reported its own counts (ctx.progress): they describe the step better than the engine's 1 unit. */
  ownCounts?: boolean;
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
  const steps = new Map<string, StepProgress>();

  const view = (p: StepProgress): StepView => {
    const now = clock.now();
    const elapsedMs = Math.max(0, now - p.startedAt);
    // The rate counts working time only: a 2-hour pause must not make the next ETA read 2 hours per item.
    const working = Math.max(0, elapsedMs - p.pausedMs - (p.waiting ? Math.max(0, now - p.waiting.since) : 0));
    const processed = p.done + p.failed + p.invalid + p.skipped;
    const rate = working > 0 ? (p.counted * 1000) / working : 0;
    const left = p.total === undefined ? undefined : Math.max(0, p.total - processed);
    const etaMs = p.waiting || left === undefined ? undefined : left === 0 ? 0 : rate > 0 ? (left / rate) * 1000 : undefined;
    return { ...p, processed, rate, etaMs, elapsedMs };
  };

  const onStarted = (e: EngineEvents['step:started'][0]) => {
    const p: StepProgress = { runId: e.runId, flow: e.flow, step: e.step, total: e.total, done: 0, failed: 0, invalid: 0, skipped: 0, startedAt: clock.now(), counted: 0, finished: false, pausedMs: 0 };
    steps.set(key(e), p);
    onChange(view(p), 'started');
  };
  const endWait = (p: StepProgress) => {
    if (!p.waiting) return;
    p.pausedMs += Math.max(0, clock.now() - p.waiting.since);
    delete p.waiting;
  };
  const onWaiting = (e: EngineEvents['run:waiting'][0]) => {
    const p = steps.get(key(e));
    if (!p) return;
    const since = p.waiting?.since ?? clock.now();
    p.waiting = { until: e.until, reason: e.reason, since };
    onChange(view(p), 'update');
  };
  const onResumed = (e: EngineEvents['run:resumed'][0]) => {
    for (const p of steps.values()) {
      if (p.runId !== e.runId || !p.waiting || (e.step !== undefined && p.step !== e.step)) continue;
      endWait(p);
      onChange(view(p), 'update');
    }
  };
  const onItem = (e: EngineEvents['item:finished'][0]) => {
    const p = steps.get(key(e));
    if (!p) return;
    endWait(p);
    // 'skipped' comes from a per-item `if:`; the event type may not list it yet.
    const status = e.status as string;
    if (status === 'failed') p.failed++;
    else if (status === 'skipped') p.skipped++;
    else p.done++;
    p.counted++;
    onChange(view(p), 'update');
  };
  const onProgress = (e: EngineEvents['step:progress'][0]) => {
    const p = steps.get(key(e));
    if (!p) return;
    // An action's own counts are absolute (ProgressCounts); the rate counts what changed here.
    const c = e as typeof e & { invalid?: number; skipped?: number };
    const before = p.done + p.failed + p.invalid + p.skipped;
    p.done = c.done;
    if (c.failed !== undefined) p.failed = c.failed;
    if (c.invalid !== undefined) p.invalid = c.invalid;
    if (c.skipped !== undefined) p.skipped = c.skipped;
    const after = p.done + p.failed + p.invalid + p.skipped;
    if (after > before) endWait(p);
    if (e.total !== undefined) p.total = e.total;
    p.counted += Math.max(0, after - before);
    p.ownCounts = true;
    onChange(view(p), 'update');
  };
  const onFinished = (e: EngineEvents['step:finished'][0]) => {
    const p = steps.get(key(e));
    if (!p) return;
    if (!p.ownCounts) {
      p.done = e.done;
      p.failed = e.failed;
    }
    endWait(p);
    p.finished = true;
    steps.delete(key(e));
    onChange(view(p), 'finished');
  };
  const onRunEnd = (e: { runId: string }) => {
    for (const [k, p] of steps) if (p.runId === e.runId) steps.delete(k);
  };

  // One table of subscriptions, so close() removes exactly what was added.
  const handlers = [
    ['step:started', onStarted],
    ['item:finished', onItem],
    ['step:progress', onProgress],
    ['step:finished', onFinished],
    ['run:waiting', onWaiting],
    ['run:resumed', onResumed],
    ['run:failed', onRunEnd],
    ['run:interrupted', onRunEnd],
    ['run:finished', onRunEnd],
  ] as const;
  const on = bus.on.bind(bus) as (event: string, fn: (...args: any[]) => void) => void;
  const off = bus.off.bind(bus) as (event: string, fn: (...args: any[]) => void) => void;
  for (const [event, fn] of handlers) on(event, fn);

  return {
    view,
    active: () => [...steps.values()],
    close() {
      for (const [event, fn] of handlers) off(event, fn);
      steps.clear();
    },
  };
}
