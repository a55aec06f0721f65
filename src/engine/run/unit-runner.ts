/**
 * Runs one unit of work (a single step, or one forEach item) to an outcome:
 * templates → input validation → attempts with timeout, retry/backoff and
 * rate-limit waits. Rate-limit waits are durable and do not spend an attempt.
 */
import { resolve } from 'node:path';
import { FlowError, MsgflowError, RateLimitError } from '../../api/errors.js';
import { classify } from '../../api/failure.js';
import type { InstanceApi } from '../../api/types.js';
import { prefixedState } from '../../store/prefixed-state.js';
import type { EngineStore, ErrorInfo } from '../../store/types.js';
import type { Clock } from '../../util/clock.js';
import type { ActionContext, DurableState, InstanceRef, Logger, ProgressCounts } from '../action.js';
import type { EngineBus } from '../events.js';
import type { ExprScope } from '../expr/interpreter.js';
import { evaluateTemplate } from '../expr/template.js';
import type { Flow, FlowStep } from '../flow/types.js';
import type { RegisteredAction } from '../registry/registry.js';
import { retryDelay } from './backoff.js';
import type { DurableWaits, WaitTarget } from './durable-waits.js';
import { errorInfo, inputInvalid } from './errors.js';

/** What every unit of a run shares. */
export interface RunShared {
  runId: string;
  flow: Flow;
  inputs: Readonly<Record<string, unknown>>;
  dryRun: boolean;
  store: EngineStore;
  bus: EngineBus;
  clock: Clock;
  logger: Logger;
  random: () => number;
  /** Aborted on shutdown. */
  signal: AbortSignal;
  client(): InstanceApi;
  runState: DurableState;
  waits: DurableWaits;
  instance: InstanceRef;
  baseDir: string;
  /** Where ctx.resolvePath leads (EngineOptions.resolvePath). @default path.resolve(base, p) */
  resolvePath?(base: string, p: string): string;
  defaultRateLimitWaitMs: number;
  /** A job's live counts (ctx.progress) of a single step: the step record follows them while it runs. */
  onProgress?(step: string, counts: ProgressCounts): void;
}

/** The last counts an action reported through ctx.progress (a job's own records). */
export type ProgressUpdate = ProgressCounts;

export type UnitOutcome =
  | { interrupted: true }
  | {
      interrupted: false;
      status: 'succeeded' | 'failed';
      output?: unknown;
      error?: ErrorInfo;
      cause?: unknown;
      attempts: number;
      progress?: ProgressUpdate;
    };

/** Where a unit's context records what ctx.progress reported, for its outcome. */
interface ProgressSink {
  last?: ProgressUpdate;
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

const INTERRUPTED: UnitOutcome = { interrupted: true };

/** The RateLimitError behind `e` (thrown as is, or as the cause of an action's own error). */
function rateLimitOf(e: unknown): RateLimitError | undefined {
  if (e instanceof RateLimitError) return e;
  if (e instanceof Error && e.cause instanceof RateLimitError) return e.cause;
  return undefined;
}

function failed(e: unknown, step: string, index: number | undefined, attempts: number): Extract<UnitOutcome, { interrupted: false }> {
  return { interrupted: false, status: 'failed', error: errorInfo(e, step, index), cause: e, attempts };
}

async function parseInput(def: RegisteredAction, raw: unknown) {
  try {
    return def.input.safeParse(raw);
  } catch {
    // A schema with async refinements cannot be parsed synchronously.
    return def.input.safeParseAsync(raw);
  }
}

/** Evaluates `with:`, passing the action's rawInputs keys through as written (the action evaluates them). */
function evaluateWith(step: FlowStep, def: RegisteredAction, scope: ExprScope): unknown {
  const raw = def.rawInputs;
  if (!raw || raw.length === 0) return evaluateTemplate(step.with, scope, step.templates);
  return Object.fromEntries(
    Object.entries(step.with).map(([k, v]) => [k, raw.includes(k) ? v : evaluateTemplate(v, scope, step.templates)]),
  );
}

export async function runUnit(
  sh: RunShared,
  step: FlowStep,
  def: RegisteredAction,
  scope: ExprScope,
  index?: number,
): Promise<UnitOutcome> {
  let input: unknown;
  try {
    const parsed = await parseInput(def, evaluateWith(step, def, scope));
    if (!parsed.success) return failed(inputInvalid(step.id, index, parsed.error), step.id, index, 0);
    input = parsed.data;
  } catch (e) {
    return failed(e, step.id, index, 0);
  }
  // A dry run calls only the actions that predict (their client refuses writing methods).
  if (sh.dryRun && !def.dryRun) return { interrupted: false, status: 'succeeded', output: { dryRun: true, input }, attempts: 0 };

  const target: WaitTarget = index === undefined ? { step: step.id } : { step: step.id, item: index };
  // A rate-limit pause persisted before a restart is honoured before calling again.
  const pendingPause = sh.waits.pending(target, 'rate-limit');
  if (pendingPause) {
    try {
      await sh.waits.wait(target, { until: pendingPause.until, reason: pendingPause.reason, key: 'rate-limit' }, sh.signal);
    } catch {
      return INTERRUPTED;
    }
  }

  const sink: ProgressSink = {};
  let attempt = 1;
  for (;;) {
    if (sh.signal.aborted) return INTERRUPTED;
    try {
      const output = await callAction(sh, step, def, input, attempt, scope, target, sink);
      return { interrupted: false, status: 'succeeded', output, attempts: attempt, progress: sink.last };
    } catch (e) {
      // The store is down or another process owns the run: the run stops (interrupted), the item is not failed.
      if (isRunInterruption(e)) throw e;
      if (sh.signal.aborted) return INTERRUPTED;
      const rl = rateLimitOf(e);
      if (rl) {
        try {
          const ms = rl.retryAfterMs > 0 ? rl.retryAfterMs : sh.defaultRateLimitWaitMs;
          await sh.waits.wait(target, { ms, reason: `rate limited: ${rl.message}`, key: 'rate-limit' }, sh.signal);
        } catch {
          return INTERRUPTED;
        }
        continue; // same attempt number: a rate-limit pause is not a failure
      }
      // A fatal error (wrong token, unknown instance) stops the step at once: the next item would fail the same way.
      if (hasCode(e) && classify(e) === 'fatal') throw new StepFatalError(e, step.id);
      // A definite answer (400, 404, an invalid number) is final: trying again cannot change it.
      const definite = hasCode(e) && classify(e) === 'definite';
      if (definite || attempt >= step.retry.maxAttempts) return { ...failed(e, step.id, index, attempt), progress: sink.last };
      const delayMs = retryDelay(step.retry, attempt, sh.random);
      sh.bus.emit('step:retry', {
        runId: sh.runId,
        flow: sh.flow.name,
        step: step.id,
        attempt,
        delayMs,
        error: e instanceof Error ? e.message : String(e),
        ...(index === undefined ? {} : { item: index }),
      });
      try {
        await sh.clock.sleep(delayMs, sh.signal);
      } catch {
        return INTERRUPTED;
      }
      attempt++;
    }
  }
}

function isRunInterruption(e: unknown): boolean {
  return e instanceof MsgflowError && (e.code === 'STORE_UNAVAILABLE' || e.code === 'RUN_OWNERSHIP_LOST');
}

/** Errors with a catalogue code are classified; a plain Error (a plugin's own) keeps the step's `retry:` as written. */
function hasCode(e: unknown): boolean {
  return e instanceof MsgflowError;
}

/** A fatal failure of one unit: stops its step (no retry, no further items) and fails the run with the cause's message. */
export class StepFatalError extends Error {
  constructor(
    readonly fatal: unknown,
    readonly step: string,
  ) {
    super(fatal instanceof Error ? fatal.message : String(fatal), { cause: fatal });
    this.name = 'StepFatalError';
  }
}

/** The per-attempt timer; paused while the action sits in a durable wait (a 2-hour wait is not a timeout). */
interface AttemptTimer {
  pause(): void;
  resume(): void;
}

const NO_TIMER: AttemptTimer = { pause() {}, resume() {} };

function callAction(
  sh: RunShared,
  step: FlowStep,
  def: RegisteredAction,
  input: unknown,
  attempt: number,
  scope: ExprScope,
  target: WaitTarget,
  sink: ProgressSink,
): Promise<unknown> {
  const timeoutMs = step.timeoutMs;
  if (!timeoutMs) return def.run(makeContext(sh, step, attempt, scope, target, sh.signal, NO_TIMER, sink), input);

  const attemptAbort = new AbortController();
  const signal = AbortSignal.any([sh.signal, attemptAbort.signal]);
  return new Promise<unknown>((resolveP, rejectP) => {
    let settled = false;
    let remaining = timeoutMs;
    let armedAt = 0;
    let sleeper: AbortController | undefined;
    let paused = 0;
    const arm = () => {
      const own = (sleeper = new AbortController());
      armedAt = sh.clock.now();
      sh.clock.sleep(remaining, own.signal).then(
        () => {
          if (settled || own.signal.aborted) return;
          settled = true;
          const err = new FlowError('STEP_TIMEOUT', { step: step.id, timeoutMs });
          attemptAbort.abort(err);
          rejectP(err);
        },
        () => {},
      );
    };
    const disarm = () => {
      if (!sleeper) return;
      sleeper.abort();
      sleeper = undefined;
      remaining = Math.max(0, remaining - (sh.clock.now() - armedAt));
    };
    const timer: AttemptTimer = {
      pause: () => {
        if (paused++ === 0) disarm();
      },
      resume: () => {
        if (--paused === 0 && !settled) arm();
      },
    };
    arm();
    let result: Promise<unknown>;
    try {
      result = def.run(makeContext(sh, step, attempt, scope, target, signal, timer, sink), input);
    } catch (e) {
      result = Promise.reject(e);
    }
    result.then(
      (v) => {
        if (settled) return;
        settled = true;
        disarm();
        resolveP(v);
      },
      (e) => {
        if (settled) return;
        settled = true;
        disarm();
        rejectP(e);
      },
    );
  });
}

function makeContext(
  sh: RunShared,
  step: FlowStep,
  attempt: number,
  scope: ExprScope,
  target: WaitTarget,
  signal: AbortSignal,
  timer: AttemptTimer,
  sink: ProgressSink,
): ActionContext {
  const ref = { runId: sh.runId, flow: sh.flow.name, step: step.id };
  const journalStream = `${step.id}/${target.item ?? '-'}`;
  return {
    get client() {
      return sh.client();
    },
    instanceName: sh.flow.instance,
    instance: sh.instance,
    logger: sh.logger,
    run: {
      id: sh.runId,
      flow: sh.flow.name,
      step: step.id,
      attempt,
      ...(target.item === undefined ? {} : { item: { index: target.item, value: scope.item } }),
      dryRun: sh.dryRun,
      inputs: sh.inputs,
      ...(isRecord(scope.event) ? { event: scope.event } : {}),
      ...(step.templates ? { templates: step.templates } : {}),
    },
    signal,
    clock: sh.clock,
    state: prefixedState(sh.runState, `${step.id}/${target.item ?? '-'}/`),
    shared: (namespace) => sh.store.kv(`shared:${namespace}`),
    journal: {
      append: (...entries) => sh.store.appendJournal(sh.runId, journalStream, entries),
      replay: <T>() => sh.store.readJournal<T>(sh.runId, journalStream),
    },
    wait: async (options) => {
      timer.pause();
      try {
        await sh.waits.wait(target, options, signal);
      } finally {
        timer.resume();
      }
    },
    progress: (u) => {
      sink.last = { ...u };
      if (target.item === undefined) sh.onProgress?.(step.id, u);
      sh.bus.emit('step:progress', { ...ref, ...u });
    },
    emit: (name, payload = {}) => sh.bus.emit('action:event', { ...ref, name, payload }),
    resolvePath: (p) => (sh.resolvePath ?? resolve)(sh.flow.baseDir || sh.baseDir, p),
  };
}
