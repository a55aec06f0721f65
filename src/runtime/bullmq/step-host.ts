/**
 * A worker's side of a single step sent to workers (a job such as
 * messages.broadcast, a dialog step with `executor: workers`): rebuilds the
 * run's context (run-context.ts), runs the step through the same unit runner
 * as the process that drives the run, and records its outcome once.
 *
 * - **One worker at a time**: the step's claim is a lease in the store
 *   (`step-owner:<runId>:<step>`, the engine's LeaseOwner, renewed while the
 *   step runs, lapsing `executor.lockDurationMs` after its worker stopped;
 *   on the same host a dead pid's claim is broken at once). Every writing
 *   call first checks it (the run scope's owner), as a run's writes check
 *   the run's lease. A job that finds the claim held by a live worker waits
 *   (delayed) and finds the outcome once that worker recorded it.
 * - **Taken over where it stopped**: the step's durable state, journal and
 *   waits are the run's, in the store; the action resumes from them as after
 *   a restart of the local executor, with its own exactly-once rules (a
 *   broadcast's recipient records, a dialog's decision and send journal,
 *   each reconciling a send caught in flight from the service's history
 *   once its journal lag has passed).
 * - **Recorded once**: the outcome is written (kv runItemsNamespace(runId), `run-items:<runId>`, key
 *   `<step>#step`) before the job completes; a job run again finds it and
 *   returns it. The process that drives the run reads it from the job's
 *   result, or from the store when it missed the event.
 * - The action's counts (ctx.progress) and waits go to the driving process
 *   as the job's progress; its log lines are kept with the run.
 */
import { FlowError } from '../../api/errors.js';
import type { ProgressCounts } from '../../engine/action.js';
import { errorInfo } from '../../engine/run/errors.js';
import { defaultHostId, LeaseOwner } from '../../engine/run/ownership.js';
import type { TraceSpan } from '../../engine/run/tracing.js';
import { StepFatalError, runUnit, type UnitOutcome } from '../../engine/run/unit-runner.js';
import { runItemsNamespace, type ErrorInfo, type WaitRecord } from '../../store/types.js';
import {
  loadUnitContext,
  runStopReason,
  WorkerFlows,
  workerRunScope,
  workerWaits,
  type RunUnitContext,
  type WorkerDeps,
} from './run-context.js';

/** What a single step's job carries: the rest is the run's, in the store. */
export interface StepJobData {
  kind: 'step';
  runId: string;
  step: string;
  /** The step span's W3C trace context when the run is traced. */
  trace?: Record<string, string>;
}

/** A step's outcome as a worker records it (serialisable: no cause; `fatal` stops the run as a fatal error does). */
export interface StepOutcomeRecord {
  status: 'succeeded' | 'failed';
  output?: unknown;
  error?: ErrorInfo;
  attempts: number;
  progress?: ProgressCounts;
  fatal?: boolean;
  finishedAt: number;
}

/** What a step's job returns (QueueEvents `completed`). `later`: wait `ms`, then try again; `interrupted`: this worker is stopping. */
export type StepJobResult =
  | { kind: 'recorded'; outcome: StepOutcomeRecord }
  | { kind: 'dropped'; reason: string }
  | { kind: 'later'; ms: number }
  | { kind: 'interrupted' };

/** What a step's job tells the driving process while it runs (the job's progress). */
export type StepProgress = { counts: ProgressCounts } | { waiting: WaitRecord } | { resumed: WaitRecord };

export const isStepJob = (data: unknown): data is StepJobData => (data as { kind?: unknown } | null)?.kind === 'step';

/** Where a step's outcome is recorded, in the run's `run-items:` namespace (beside its items'). */
export const stepOutcomeKey = (step: string) => `${step}#step`;

/** How often a running step looks whether its run was cancelled (real time). */
const STOP_CHECK_MS = 1000;
/** The least time between two progress reports of a step (a job counts each record). */
const PROGRESS_MS = 250;

export class StepHost {
  private readonly flows: WorkerFlows;
  /** The steps this worker is running: aborted when it stops (their jobs go back to the queue). */
  private readonly running = new Set<AbortController>();

  constructor(private readonly d: WorkerDeps) {
    this.flows = new WorkerFlows(d.flows);
  }

  /** Interrupts the steps in progress: each stops at its next safe point and its job goes back to the queue. */
  stop(): void {
    for (const c of this.running)
      c.abort(new FlowError('ENGINE_STOPPED', { reason: 'the worker is stopping; the step goes back to the queue' }));
  }

  /** Works one step's job. Throws only when the job should be tried again (the store is down). */
  async process(job: StepJobData, signal: AbortSignal, report: (p: StepProgress) => Promise<unknown>): Promise<StepJobResult> {
    const { store } = this.d;
    const records = store.kv(runItemsNamespace(job.runId));
    const key = stepOutcomeKey(job.step);
    const prev = await records.get<StepOutcomeRecord>(key);
    if (prev) return { kind: 'recorded', outcome: prev };
    const stop = await runStopReason(store, job.runId);
    if (stop) return { kind: 'dropped', reason: stop };
    const u = await loadUnitContext(this.d, this.flows, job.runId, job.step);
    // Not workable here (this worker's flows differ): tried again later, by any worker, then recorded failed by the run.
    if (typeof u === 'string') throw new FlowError('ITEM_NOT_WORKABLE', { reason: u });
    const owner = new LeaseOwner(
      { store, hostId: defaultHostId(), ttlMs: this.d.lockDurationMs ?? 30_000 },
      { runId: job.runId, label: `step ${job.step}` },
    );
    const claim = await owner.claim(`step-owner:${job.runId}:${job.step}`);
    // Another worker is on it (its job was taken over while it was starved): this job looks again once its claim may have lapsed.
    if (!claim.ok) return { kind: 'later', ms: Math.max(1000, claim.holder.expiresAt - Date.now()) };
    try {
      // The worker that held the step before may have recorded it since this one looked.
      const done = await records.get<StepOutcomeRecord>(key);
      if (done) return { kind: 'recorded', outcome: done };
      const out = await this.work(job, u, owner, signal, report);
      if (!out) return { kind: 'interrupted' };
      await records.set(key, out);
      return { kind: 'recorded', outcome: out };
    } finally {
      await owner.release();
    }
  }

  /** Runs the step under its claim; undefined when it was interrupted (this worker stops, the claim was lost, the run cancelled). */
  private async work(
    job: StepJobData,
    u: RunUnitContext,
    owner: LeaseOwner,
    signal: AbortSignal,
    report: (p: StepProgress) => Promise<unknown>,
  ): Promise<StepOutcomeRecord | undefined> {
    const tell = (p: StepProgress) => void report(p).catch(() => {});
    const waits = await workerWaits(this.d, job.runId, { waiting: (w) => tell({ waiting: w }), resumed: (w) => tell({ resumed: w }) });
    const own = new AbortController();
    this.running.add(own);
    owner.onLost = (reason) => own.abort(new FlowError('RUN_OWNERSHIP_LOST', { reason }));
    owner.startHeartbeat();
    const cancelled = setInterval(() => {
      runStopReason(this.d.store, job.runId).then(
        (reason) => reason && own.abort(new FlowError('ENGINE_STOPPED', { reason })),
        () => {},
      );
    }, STOP_CHECK_MS);
    cancelled.unref();
    const progress = throttled((counts: ProgressCounts) => tell({ counts }), PROGRESS_MS);
    let span: TraceSpan | undefined;
    const { tracer } = this.d;
    const scope = workerRunScope(this.d, u, waits, {
      signal: AbortSignal.any([signal, own.signal]),
      // Every writing call first checks that this worker still holds the step.
      owner,
      // A pause is waited out here, as in the process that drives the run: the step resumes from its records either way.
      worker: false,
      onProgress: (_step, counts) => progress.push(counts),
      ...(tracer && job.trace
        ? {
            traceUnit: () =>
              (span ??= tracer.continue(job.trace!, `step ${job.step}`, { 'msgflow.step': job.step, 'msgflow.worker': true })),
          }
        : {}),
    });
    scope.logger.info(`step '${job.step}' worked by a worker (pid ${process.pid} on ${defaultHostId()})`, { step: job.step });
    let out: UnitOutcome;
    try {
      out = await runUnit(scope, u.step, u.def, u.expr);
    } catch (e) {
      span?.end({ error: { code: 'ERROR' } });
      if (!(e instanceof StepFatalError)) throw e;
      return { status: 'failed', error: errorInfo(e.fatal, job.step), attempts: 1, fatal: true, finishedAt: this.d.clock.now() };
    } finally {
      clearInterval(cancelled);
      this.running.delete(own);
      progress.flush();
    }
    if (out.interrupted) return undefined;
    span?.end(out.status === 'failed' ? { error: { code: out.error?.code ?? 'ERROR' } } : undefined);
    return {
      status: out.status,
      attempts: out.attempts,
      finishedAt: this.d.clock.now(),
      ...(out.output === undefined ? {} : { output: out.output }),
      ...(out.error ? { error: out.error } : {}),
      ...(out.progress ? { progress: out.progress } : {}),
    };
  }
}

/** Calls `f` with the latest value at most every `ms` (real time); `flush` sends the one held back. */
function throttled<T>(f: (v: T) => void, ms: number): { push(v: T): void; flush(): void } {
  let last = 0;
  let held: { v: T } | undefined;
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (!held) return;
    const { v } = held;
    held = undefined;
    last = Date.now();
    f(v);
  };
  return {
    push(v) {
      held = { v };
      const wait = last + ms - Date.now();
      if (wait <= 0) flush();
      else timer ??= setTimeout(flush, wait);
    },
    flush,
  };
}
