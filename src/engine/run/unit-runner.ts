/**
 * Runs one unit of work (a single step, or one forEach item) to an outcome:
 * templates → input validation → attempts with timeout, retry/backoff, and
 * the control errors (engine/control.ts) read in ONE place, {@link decide}:
 * a pause or a rate limit is a durable wait, not a failure, and does not
 * spend an attempt. What the action sees is made by unit-context.ts.
 */
import { FlowError, MsgflowError, RateLimitError } from '../../api/errors.js';
import { classify } from '../../api/failure.js';
import type { InstanceApi } from '../../api/types.js';
import type { ErrorInfo } from '../../store/types.js';
import type { ProgressCounts, WaitOptions } from '../action.js';
import { PauseError, isRunInterruption, type PauseInfo } from '../control.js';
import type { ExprScope } from '../expr/interpreter.js';
import { evaluateTemplate } from '../expr/template.js';
import type { FlowStep } from '../flow/types.js';
import type { RegisteredAction } from '../registry/registry.js';
import { sharedState } from '../shared.js';
import { retryDelay } from './backoff.js';
import type { WaitTarget } from './durable-waits.js';
import { errorInfo, inputInvalid } from './errors.js';
import { pauseWait } from './pauses.js';
import { createUnitContext, type RunScope, type UnitOptions } from './unit-context.js';
import { tracingInterceptor } from './interceptors/tracing.js';

/** The last counts an action reported through ctx.progress (a job's own records). */
export type ProgressUpdate = ProgressCounts;

export type UnitOutcome =
  /** The run stops (shutdown, cancel) or, `paused`, a worker hands the item back until an instance-wide pause ends. */
  | { interrupted: true; paused?: PauseInfo }
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

const INTERRUPTED: UnitOutcome = { interrupted: true };

/** The control error behind `e`: thrown as is, or as the cause of an action's own error. */
function controlOf<E>(e: unknown, type: new (...args: any[]) => E): E | undefined {
  if (e instanceof type) return e;
  if (e instanceof Error && e.cause instanceof type) return e.cause;
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

/** One unit's fixed parts, for its attempts. */
interface Unit {
  step: FlowStep;
  def: RegisteredAction;
  input: unknown;
  target: WaitTarget;
  index: number | undefined;
  sink: ProgressSink;
  /** What its ActionContexts are made of (unit-context.ts), the same for each attempt. */
  ctx: UnitOptions;
}

export async function runUnit(sh: RunScope, step: FlowStep, def: RegisteredAction, scope: ExprScope, index?: number): Promise<UnitOutcome> {
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
  if (pendingPause && !(await waited(sh, target, { until: pendingPause.until, reason: pendingPause.reason, key: 'rate-limit' })))
    return INTERRUPTED;

  let client: InstanceApi | undefined;
  const sink: ProgressSink = {};
  const span = sh.traceUnit?.(step.id, index);
  // A traced unit's calls are spans under its own.
  const interceptors = span ? [tracingInterceptor(span, sh.instance.name)] : [];
  const ctx: UnitOptions = {
    step: step.id,
    item: index,
    expr: scope,
    ...(step.templates ? { templates: step.templates } : {}),
    // Made on first use, kept across attempts.
    client: () => (client ??= sh.unitClient({ action: def, input, interceptors })),
    onProgress: (u) => (sink.last = { ...u }),
  };
  const unit: Unit = { step, def, input, target, index, sink, ctx };
  // A single step's span is its step's: the run ends it.
  if (!span || index === undefined) return attempts(sh, unit);
  let out: UnitOutcome;
  try {
    out = await attempts(sh, unit);
  } catch (e) {
    span.end({ error: { code: e instanceof MsgflowError ? e.code : 'ERROR' } });
    throw e;
  }
  if (!out.interrupted) span.setAttributes({ 'msgflow.attempts': out.attempts });
  span.end(!out.interrupted && out.status === 'failed' ? { error: { code: out.error?.code ?? 'ERROR' } } : undefined);
  return out;
}

/** A unit's attempts until an outcome: retries, waits and the control errors (decide). */
async function attempts(sh: RunScope, unit: Unit): Promise<UnitOutcome> {
  const { step, index } = unit;
  let attempt = 1;
  for (;;) {
    if (sh.signal.aborted) return INTERRUPTED;
    try {
      const output = await callAction(sh, unit, attempt);
      return { interrupted: false, status: 'succeeded', output, attempts: attempt, progress: unit.sink.last };
    } catch (e) {
      const next = await decide(sh, unit, e, attempt);
      if (next === 'again') continue; // same attempt number: a pause is not a failure
      if (next === 'interrupted') return INTERRUPTED;
      if (next === 'failed') return { ...failed(e, step.id, index, attempt), progress: unit.sink.last };
      if (typeof next === 'object') return { interrupted: true, paused: next.paused };
      if (!(await retryLater(sh, unit, e, attempt))) return INTERRUPTED;
      attempt++;
    }
  }
}

type Next = 'again' | 'retry' | 'failed' | 'interrupted' | { paused: PauseInfo };

/**
 * What a unit's failure means, read in this one place: the run stops
 * (interruption), the unit waits and calls again (an instance-wide pause, a
 * rate limit: same attempt), the step stops (fatal), the unit fails (a
 * definite answer, no attempt left), or it is tried again.
 */
async function decide(sh: RunScope, unit: Unit, e: unknown, attempt: number): Promise<Next> {
  // The store is down or another process owns the run: the run stops (interrupted), the item is not failed.
  if (isRunInterruption(e)) throw e;
  if (sh.signal.aborted) return 'interrupted';
  const pause = controlOf(e, PauseError);
  if (pause) {
    // A worker hands the item back: its queue pauses for every worker.
    if (sh.worker) return { paused: pause.pause };
    const until = pauseWait(pause.pause, (ns) => sharedState(sh.store, ns));
    return (await waited(sh, unit.target, until)) ? 'again' : 'interrupted';
  }
  const rl = controlOf(e, RateLimitError);
  if (rl) {
    const ms = rl.retryAfterMs > 0 ? rl.retryAfterMs : sh.defaultRateLimitWaitMs;
    return (await waited(sh, unit.target, { ms, reason: `rate limited: ${rl.message}`, key: 'rate-limit' })) ? 'again' : 'interrupted';
  }
  // Errors with a catalogue code are classified (DefiniteError's is definite); a plain Error keeps the step's `retry:` as written.
  const klass = e instanceof MsgflowError ? classify(e) : undefined;
  // A fatal error (wrong token, unknown instance) stops the step at once: the next item would fail the same way.
  if (klass === 'fatal') throw new StepFatalError(e, unit.step.id);
  // A definite answer (400, 404, an invalid number) is final: trying again cannot change it.
  if (klass === 'definite' || attempt >= unit.step.retry.maxAttempts) return 'failed';
  return 'retry';
}

/** A durable wait of the unit; false when the run was stopped meanwhile. */
async function waited(sh: RunScope, target: WaitTarget, options: WaitOptions): Promise<boolean> {
  try {
    await sh.waits.wait(target, options, sh.signal);
    return true;
  } catch {
    return false;
  }
}

/** The step's backoff before the next attempt, announced; false when the run was stopped meanwhile. */
async function retryLater(sh: RunScope, unit: Unit, e: unknown, attempt: number): Promise<boolean> {
  const delayMs = retryDelay(unit.step.retry, attempt, sh.random);
  sh.bus.emit('step:retry', {
    runId: sh.runId,
    flow: sh.flow.name,
    step: unit.step.id,
    attempt,
    delayMs,
    error: e instanceof Error ? e.message : String(e),
    ...(unit.index === undefined ? {} : { item: unit.index }),
  });
  try {
    await sh.clock.sleep(delayMs, sh.signal);
    return true;
  } catch {
    return false;
  }
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

function callAction(sh: RunScope, unit: Unit, attempt: number): Promise<unknown> {
  const { step, def, input } = unit;
  const timeoutMs = step.timeoutMs;
  if (!timeoutMs) return def.run(createUnitContext(sh, unit.ctx, { attempt, signal: sh.signal }), input);

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
      result = def.run(createUnitContext(sh, unit.ctx, { attempt, signal, waiting: timer }), input);
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
