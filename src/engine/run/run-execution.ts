/**
 * One run of a flow, from its first pending step to a final status. Each
 * step's record and each forEach item's result is written to the store
 * BEFORE the run moves on, so that after a crash `resume` skips completed
 * steps and items.
 *
 * Semantics worth knowing:
 * - forEach: a failed item (after its retries) is recorded and counted; it
 *   does not stop the other items nor the run (`steps.<id>.failed` tells).
 *   The step's status is `failed` when at least one item failed.
 * - A step-level failure (unknown action, a bad `if`/`forEach`, a single
 *   step's action failing) fails the run unless the step has `continueOnError`.
 */
import type { Pool } from '../../util/pool.js';
import { FlowError, MsgflowError } from '../../api/errors.js';
import type { InstanceApi } from '../../api/types.js';
import type { EngineStore, ErrorInfo, ItemCounts, ItemResult, RunRecord, StepRecord, StepStatus, WaitRecord } from '../../store/types.js';
import { runCountFields } from '../../store/types.js';
import type { Clock } from '../../util/clock.js';
import type { Logger, ProgressCounts } from '../action.js';
import { isRunInterruption } from '../control.js';
import type { EngineBus } from '../events.js';
import type { ExprScope, StepScope } from '../expr/interpreter.js';
import { collectReferences } from '../expr/references.js';
import { compileTemplate, evaluateCondition, evaluateTemplate, hasTemplate } from '../expr/template.js';
import type { Flow, FlowStep } from '../flow/types.js';
import type { ActionRegistry, RegisteredAction } from '../registry/registry.js';
import type { EngineRedactor } from './types.js';
import { DurableWaits } from './durable-waits.js';
import { errorInfo, failureCode } from './errors.js';
import { pauseAlert, recordAlertIntent, slaAlert, type AlertIntent } from '../alerts/records.js';
import type { LeaseOwner } from './ownership.js';
import { type ItemExecutor, localExecutor, placement } from './executor.js';
import { ForEachItems } from './for-each.js';
import { declaredPauseRules } from './pauses.js';
import { announceProgress, createRunScope, runExprScope, type RunScope } from './unit-context.js';
import { StepFatalError, runUnit, type UnitOutcome } from './unit-runner.js';
import { subflowName } from '../flow/subflows.js';
import { type SubflowHost, subflowAction } from './subflow.js';
import type { EngineTracer, TraceSpan } from './tracing.js';

export interface ExecutionDeps {
  store: EngineStore;
  bus: EngineBus;
  clock: Clock;
  registry: ActionRegistry;
  logger: Logger;
  random: () => number;
  clientFor(instance: string): InstanceApi;
  identityFor(instance: string): string;
  localUrl?: string;
  baseDir: string;
  /** See EngineOptions.pools. */
  pools?: Readonly<Record<string, Pool>>;
  /** See EngineOptions.resolvePath. */
  resolvePath?(base: string, p: string): string;
  defaultRateLimitWaitMs: number;
  progressSaveIntervalMs: number;
  /** @see EngineOptions.waitRecheckMs */
  waitRecheckMs?: number;
  /** Where forEach items run. */
  executor: ItemExecutor;
  /** What sub-flow steps (`uses: flow/<name>`) start and await their child runs with. */
  subflows: SubflowHost;
  /** @see EngineOptions.secret */
  secret?(name: string): string | undefined;
  /** @see EngineOptions.redactor */
  redactor?: EngineRedactor;
  /** Where runs, steps, items and client calls are traced (config.yaml telemetry:). @default none */
  tracer?: EngineTracer;
}

export interface ResumeState {
  steps: StepRecord[];
  waits: WaitRecord[];
}

type StepOutcome = { kind: 'ok' } | { kind: 'interrupted' } | { kind: 'fatal'; error: unknown };

/** A job's invalid/duplicate/skipped/waiting counts (ctx.progress), for its step record. */
function ownCounts(own: ProgressCounts | undefined): Partial<StepRecord> {
  const out: Partial<StepRecord> = {};
  if (own?.invalid) out.invalid = own.invalid;
  if (own?.duplicate) out.duplicate = own.duplicate;
  if (own?.skipped) out.skipped = own.skipped;
  if (own?.waiting) out.waiting = own.waiting;
  return out;
}

/** A step record's counters, as events carry them (absent when 0). */
function stepCounts(rec: StepRecord): ItemCounts {
  return {
    done: rec.done,
    failed: rec.failed,
    ...(rec.invalid ? { invalid: rec.invalid } : {}),
    ...(rec.duplicate ? { duplicate: rec.duplicate } : {}),
    ...(rec.skipped ? { skipped: rec.skipped } : {}),
  };
}

/**
 * Whether an `if:` reads `item` or `index`: on a forEach step it is then a
 * per-item condition (items for which it is false are skipped and counted),
 * not a condition on the whole step.
 */
export function refersToItem(expr: string | boolean | undefined): boolean {
  if (typeof expr !== 'string') return false;
  try {
    const t = compileTemplate(hasTemplate(expr) ? expr : `\${{${expr}}}`);
    return t.parts.some((p) => p.kind === 'expr' && collectReferences(p.node).some((r) => r.root === 'item' || r.root === 'index'));
  } catch {
    return false; // a syntax error is reported when the condition is evaluated
  }
}

/**
 * What expressions see of a finished step (`steps.<id>`), rebuilt from its
 * record and, for a forEach step, its item log: by a resumed run, and by a
 * worker working a later step's items.
 */
export async function restoredView(store: EngineStore, runId: string, rec: StepRecord): Promise<StepScope> {
  const view: StepScope = { status: rec.status, output: rec.output, done: rec.done, failed: rec.failed, total: rec.total ?? 0 };
  if (rec.error) view.error = { message: rec.error.message, ...(rec.error.code ? { code: rec.error.code } : {}) };
  if (rec.forEach && rec.status !== 'skipped') {
    const results: unknown[] = new Array(rec.total ?? 0).fill(null);
    for (const [i, r] of await store.getItems(runId, rec.step)) {
      if (i < results.length && r.status === 'succeeded') results[i] = r.output ?? null;
    }
    view.output = results;
    view.results = results;
  }
  return view;
}

/** The kv namespace other processes use to ask a run's owner to stop (`msgflow runs cancel`). */
export const RUN_CONTROL_NS = 'run-control';

const FINISHED: readonly StepStatus[] = ['succeeded', 'failed', 'skipped'];
const OK: StepOutcome = { kind: 'ok' };
const INTERRUPTED: StepOutcome = { kind: 'interrupted' };

export class RunExecution {
  private readonly controller = new AbortController();
  private readonly steps = new Map<string, StepRecord>();
  private readonly scope: ExprScope;
  private readonly sh: RunScope;
  private readonly waits: DurableWaits;
  private run: RunRecord;
  private interruptReason = 'interrupted';
  /** The error that interrupted the run (the store stopped answering or taking writes): recorded with the run, shown by the CLI. */
  private interruptError: ErrorInfo | undefined;
  private cancelled = false;
  /** Why this process lost the run to another one: it then writes nothing more. */
  private lost: string | undefined;
  private outageLogged = false;
  /** `step:started` of a single step whose action counts its records, held until its first count. */
  private readonly unannounced = new Map<string, (total?: number) => void>();
  /** Single steps whose action reported its own counts (ctx.progress): their total is the records'. */
  private readonly counted = new Set<string>();
  /** What a single step's counts have added to the run's so far (a job's are added as it reports them). */
  private readonly inRun = new Map<string, ItemCounts>();
  private lastLiveSave = 0;
  /** The run's span and its open steps' spans, when traced. */
  private runSpan: TraceSpan | undefined;
  private readonly stepSpans = new Map<string, TraceSpan>();
  /** The flow's `outputs:`, evaluated once its steps succeeded. */
  private outputs: Record<string, unknown> | undefined;

  constructor(
    private readonly deps: ExecutionDeps,
    private readonly flow: Flow,
    run: RunRecord,
    inputs: Record<string, unknown>,
    private readonly owner: LeaseOwner,
    private readonly resume?: ResumeState,
  ) {
    this.run = { ...run };
    for (const s of resume?.steps ?? []) this.steps.set(s.step, { ...s });
    this.scope = runExprScope({ flow, run, inputs, clock: deps.clock, localUrl: deps.localUrl, secret: deps.secret });
    const waits = new DurableWaits({
      store: deps.store,
      runId: run.id,
      clock: deps.clock,
      onWaiting: (w) => this.onWaiting(w),
      onResumed: (w) => this.onResumed(w),
      recheckMs: deps.waitRecheckMs,
    });
    waits.load(resume?.waits ?? []);
    this.waits = waits;
    this.sh = createRunScope({
      runId: run.id,
      flow,
      inputs,
      dryRun: run.dryRun,
      ...(run.plan ? { plan: { ...run.plan, flowHash: run.flowHash ?? '' } } : {}),
      store: deps.store,
      bus: deps.bus,
      clock: deps.clock,
      random: deps.random,
      logger: deps.logger,
      ...(deps.redactor ? { scrub: deps.redactor.scrub } : {}),
      signal: this.controller.signal,
      client: () => deps.clientFor(flow.instance),
      identity: deps.identityFor(flow.instance),
      instances: { clientFor: deps.clientFor, identityFor: deps.identityFor },
      ...(deps.pools ? { pools: deps.pools } : {}),
      // Every writing call first checks that this process still owns the run.
      owner,
      pauseRules: declaredPauseRules(deps.registry.list()),
      waits,
      baseDir: deps.baseDir,
      ...(deps.resolvePath ? { resolvePath: deps.resolvePath } : {}),
      defaultRateLimitWaitMs: deps.defaultRateLimitWaitMs,
      onProgress: (stepId, u) => this.jobProgress(stepId, u),
      onPauseRaised: (p) => void recordAlertIntent(deps.store, pauseAlert(p, deps.clock.now())).catch(() => {}),
      traceUnit: (stepId, index) => {
        const span = this.stepSpans.get(stepId);
        return index === undefined ? span : span?.child(`item ${index}`, { 'msgflow.item': index });
      },
    });
  }

  /** An engine message about this run: printed and kept with the run. */
  private runLog(level: 'info' | 'warn' | 'error', message: string): void {
    this.sh.logger[level](message);
  }

  get id(): string {
    return this.run.id;
  }

  /** A copy of the run record with live counts. */
  snapshot(): RunRecord {
    return structuredClone(this.run);
  }

  /** Copies of the step records with live counts. */
  stepSnapshots(): StepRecord[] {
    return [...this.steps.values()].map((s) => structuredClone(s));
  }

  /** Stops at the next safe point: in-flight items finish (and are recorded) or are left for the resume. */
  interrupt(reason: string): void {
    this.interruptReason = reason;
    this.controller.abort(new FlowError('ENGINE_STOPPED', { reason }));
  }

  /** `msgflow runs cancel`: stops at the next item boundary; the run ends `cancelled`, its state kept. */
  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.interrupt('cancelled (msgflow runs cancel)');
  }

  /** The run's claims (its lease, its concurrency slot): the engine resumes an outage's run with them. */
  get claims(): LeaseOwner {
    return this.owner;
  }

  /** Gives up the run's claims (the engine's shutdown, past its grace). */
  async releaseClaims(): Promise<void> {
    await this.owner.release();
  }

  /** The run-failed occurrence of this run's failure. */
  private failureAlert(info: ErrorInfo, code: string | undefined, step: string | undefined, now: number): AlertIntent {
    const c = this.run;
    return {
      key: `run-failed:${this.run.id}`,
      kind: 'run-failed',
      subject: this.flow.name,
      message: `run ${this.run.id} of ${this.flow.name} failed: ${info.message}`,
      at: now,
      flow: this.flow.name,
      runId: this.run.id,
      ...(step ? { step } : {}),
      ...(code ? { code } : {}),
      counts: {
        done: c.itemsDone,
        failed: c.itemsFailed,
        invalid: c.itemsInvalid ?? 0,
        duplicate: c.itemsDuplicate ?? 0,
        skipped: c.itemsSkipped ?? 0,
      },
      trigger: this.run.trigger,
    };
  }

  /** A run that took longer than the flow's `sla.maxDuration` raises sla-missed (once per run: the key is the run's). */
  private async slaCheck(now: number): Promise<void> {
    const max = this.flow.sla?.maxDuration;
    const took = now - this.run.startedAt;
    if (max === undefined || took <= max) return;
    await recordAlertIntent(this.deps.store, slaAlert(this.flow.name, this.run.id, took, max, now));
  }

  /** An error as it is kept and announced: its message scrubbed of secrets. */
  private kept(info: ErrorInfo): ErrorInfo {
    return this.deps.redactor ? { ...info, message: this.deps.redactor.scrub(info.message) } : info;
  }

  /** Runs to the end. Never rejects: the outcome is the returned record. */
  async execute(): Promise<RunRecord> {
    const ref = { runId: this.run.id, flow: this.flow.name };
    this.owner.onLost = (reason) => {
      this.lost = reason;
      this.interruptError = errorInfo(new FlowError('RUN_OWNERSHIP_LOST', { reason }));
      this.deps.logger.error(`run ${this.run.id}: ${reason}; this process stops it and writes nothing more`, ref);
      this.interrupt(`ownership lost: ${reason}`);
    };
    // Cancel requests from other processes arrive through the store; polled at each heartbeat.
    this.owner.onBeat = async () => {
      const c = await this.deps.store.kv(RUN_CONTROL_NS).get<{ cancel?: boolean }>(this.run.id);
      if (c?.cancel) this.cancel();
    };
    this.owner.startHeartbeat();
    try {
      return await this.executeOwned();
    } finally {
      await this.owner.release();
    }
  }

  private async executeOwned(): Promise<RunRecord> {
    const { bus } = this.deps;
    const ref = { runId: this.run.id, flow: this.flow.name };
    this.runSpan = this.deps.tracer?.run(this.run.id, {
      'msgflow.run': this.run.id,
      'msgflow.flow': this.flow.name,
      'msgflow.trigger': this.resume ? 'resume' : this.run.trigger,
      'msgflow.dry_run': this.run.dryRun,
    });
    bus.emit('run:started', { ...ref, trigger: this.resume ? 'resume' : this.run.trigger, dryRun: this.run.dryRun });
    if (this.resume) bus.emit('run:resumed', ref);
    try {
      for (const step of this.flow.steps) {
        if (this.controller.signal.aborted) return await this.end('interrupted');
        const out = await this.runStep(step);
        if (out.kind === 'interrupted') return await this.end('interrupted');
        if ((await this.runHandlers(step)) === 'interrupted') return await this.end('interrupted');
        if (out.kind === 'fatal' && !step.continueOnError) return await this.end('failed', out.error, step.id);
      }
      // forEach items that failed do not stop later steps (they may report on
      // them), but the run as a whole did not succeed: schedulers, CI and the
      // exit code of `msgflow run` must see it.
      const partial = this.flow.steps.find((st) => !st.continueOnError && this.steps.get(st.id)?.status === 'failed');
      if (partial) {
        const rec = this.steps.get(partial.id)!;
        const reason = `${rec.failed} of ${rec.total ?? rec.done + rec.failed} items failed`;
        return await this.end('failed', new FlowError('ACTION_FAILED', { step: partial.id, action: partial.uses, reason }), partial.id);
      }
      if (this.flow.outputs !== undefined) {
        try {
          this.outputs = evaluateTemplate(this.flow.outputs, this.scope) as Record<string, unknown>;
        } catch (e) {
          return await this.end('failed', e);
        }
      }
      return await this.end('succeeded');
    } catch (e) {
      if (isRunInterruption(e)) {
        if (e instanceof MsgflowError && e.code === 'STORE_UNAVAILABLE' && !this.outageLogged) {
          this.outageLogged = true;
          this.runLog('error', `run ${this.run.id} interrupted: ${e.message}; it resumes from its checkpoint once the store answers again`);
        }
        this.interruptReason = e instanceof Error ? e.message : String(e);
        this.interruptError = errorInfo(e);
        // The store may refuse this last write too: the run is interrupted all the same (its record, still `running`, is resumable).
        return this.end('interrupted').catch(() => ({
          ...this.snapshot(),
          status: 'interrupted' as const,
          updatedAt: this.deps.clock.now(),
          error: this.interruptError,
        }));
      }
      if (e instanceof StepFatalError) {
        const st = this.flow.steps.find((x) => x.id === e.step);
        if (st) await this.stepFailed(st, e.fatal).catch(() => {});
        if (st && (await this.runHandlers(st).catch(() => 'ok')) === 'interrupted')
          return this.end('interrupted').catch(() => this.snapshot());
        return this.end('failed', e.fatal, e.step).catch(() => this.snapshot());
      }
      if (this.controller.signal.aborted) return this.end('interrupted').catch(() => this.snapshot());
      return this.end('failed', e).catch(() => this.snapshot());
    }
  }

  /**
   * A failed step's `on-failure:` steps, in order, each once (a resumed run
   * skips those it finished). One failing is recorded and the next still
   * runs: the flow's outcome is the failed step's, whatever they do.
   */
  private async runHandlers(step: FlowStep): Promise<'ok' | 'interrupted'> {
    if (!step.onFailure || this.steps.get(step.id)?.status !== 'failed') return 'ok';
    for (const h of step.onFailure) {
      if (this.controller.signal.aborted) return 'interrupted';
      const out = await this.runStep(h);
      if (out.kind === 'interrupted') return 'interrupted';
      if (out.kind === 'fatal')
        this.runLog('warn', `on-failure step '${h.id}' of '${step.id}' failed too: ${errorInfo(out.error).message}`);
    }
    return 'ok';
  }

  /** A step, in a span of its own when the run is traced (its units' spans go under it). */
  private async runStep(step: FlowStep): Promise<StepOutcome> {
    const span = this.runSpan?.child(`step ${step.id}`, { 'msgflow.step': step.id, 'msgflow.uses': step.uses });
    if (!span) return this.runStepOnce(step);
    this.stepSpans.set(step.id, span);
    try {
      return await this.runStepOnce(step);
    } finally {
      this.stepSpans.delete(step.id);
      const rec = this.steps.get(step.id);
      span.setAttributes({
        'msgflow.status': rec?.status ?? 'interrupted',
        'msgflow.done': rec?.done ?? 0,
        'msgflow.failed': rec?.failed ?? 0,
      });
      span.end(rec?.status === 'failed' ? { error: { code: rec.error?.code ?? 'ACTION_FAILED' } } : undefined);
    }
  }

  private async runStepOnce(step: FlowStep): Promise<StepOutcome> {
    const prev = this.steps.get(step.id);
    if (prev && FINISHED.includes(prev.status)) {
      await this.restoreView(step, prev);
      return OK;
    }
    if (this.run.currentStep !== step.id) {
      this.run.currentStep = step.id;
      await this.deps.store.updateRun(this.run.id, { currentStep: step.id, updatedAt: this.deps.clock.now() });
    }
    const def = subflowName(step.uses) === undefined ? this.deps.registry.get(step.uses) : subflowAction(this.deps.subflows, step.uses);
    if (!def) {
      const hint = this.deps.registry.suggest(step.uses);
      return this.stepFailed(
        step,
        new FlowError('UNKNOWN_ACTION', {
          location: step.location,
          path: `steps.${step.id}.uses`,
          action: step.uses,
          hint: hint ? ` (did you mean '${hint}'?)` : '',
        }),
      );
    }
    const perItem = step.forEach !== undefined && refersToItem(step.if);
    if (step.if !== undefined && !perItem) {
      let go: boolean;
      try {
        go = evaluateCondition(step.if, this.scope, step.templates);
      } catch (e) {
        return this.stepFailed(step, e);
      }
      if (!go) {
        const rec = this.newRecord(step, { status: 'skipped', finishedAt: this.deps.clock.now(), total: 0 });
        await this.deps.store.saveStep(rec);
        this.scope.steps[step.id] = { status: 'skipped', output: undefined, done: 0, failed: 0, total: 0 };
        this.deps.bus.emit('step:finished', {
          runId: this.run.id,
          flow: this.flow.name,
          step: step.id,
          status: 'skipped',
          done: 0,
          failed: 0,
        });
        return OK;
      }
    }
    return step.forEach === undefined ? this.runSingle(step, def) : this.runForEach(step, def, prev);
  }

  private newRecord(step: FlowStep, over: Partial<StepRecord>): StepRecord {
    const rec: StepRecord = {
      runId: this.run.id,
      step: step.id,
      action: step.uses,
      status: 'running',
      startedAt: this.deps.clock.now(),
      done: 0,
      failed: 0,
      forEach: step.forEach !== undefined,
      ...over,
    };
    this.steps.set(step.id, rec);
    return rec;
  }

  /** A step-level failure: recorded on the step, reported; the caller decides (continueOnError). */
  private async stepFailed(step: FlowStep, error: unknown): Promise<StepOutcome> {
    const info = this.kept(errorInfo(error, step.id));
    if (failureCode(error) === 'STEP_TIMEOUT') {
      const now = this.deps.clock.now();
      await recordAlertIntent(this.deps.store, {
        key: `step-timeout:${this.run.id}:${step.id}`,
        kind: 'step-timeout',
        subject: `${this.flow.name}.${step.id}`,
        message: `run ${this.run.id}: ${info.message}`,
        at: now,
        flow: this.flow.name,
        runId: this.run.id,
        step: step.id,
        code: 'STEP_TIMEOUT',
      });
    }
    const rec = this.steps.get(step.id) ?? this.newRecord(step, {});
    Object.assign(rec, { status: 'failed', finishedAt: this.deps.clock.now(), error: info });
    await this.deps.store.saveStep(rec);
    this.scope.steps[step.id] = {
      status: 'failed',
      output: undefined,
      done: rec.done,
      failed: rec.failed,
      total: rec.total ?? 0,
      error: { message: info.message, ...(failureCode(error) ? { code: failureCode(error) } : {}) },
    };
    this.announced(step.id);
    this.deps.bus.emit('step:finished', {
      runId: this.run.id,
      flow: this.flow.name,
      step: step.id,
      status: 'failed',
      ...stepCounts(rec),
      ...this.totalOf(rec),
      error: info.message,
    });
    return { kind: 'fatal', error };
  }

  private async runSingle(step: FlowStep, def: RegisteredAction): Promise<StepOutcome> {
    const rec = this.newRecord(step, { total: 1 });
    await this.deps.store.saveStep(rec);
    this.announce(step, def);
    const out = await this.unitOutcome(step, def);
    if (out.interrupted) return INTERRUPTED;
    // A job (checkAccount.bulk, files.broadcast...) reports its own records
    // through ctx.progress: those, not "1 step", are the items of the run.
    const own = out.progress;
    if (out.status === 'failed') {
      rec.done = own?.done ?? 0;
      rec.failed = Math.max(1, own?.failed ?? 0);
      Object.assign(rec, ownCounts(own));
      this.stepCountsToRun(rec);
      // Name the step and action, unless the error already does (the runner's own FlowErrors).
      const cause = out.cause;
      const err =
        cause instanceof FlowError
          ? cause
          : new FlowError('ACTION_FAILED', { step: step.id, action: step.uses, reason: out.error?.message ?? String(cause) }, { cause });
      return this.stepFailed(step, err);
    }
    // What is kept (and what later steps read) never holds a secret's value, even one the other side echoed.
    const output = this.deps.redactor ? this.deps.redactor.scrubValue(out.output) : out.output;
    const done = own ? own.done : 1;
    const failed = own?.failed ?? 0;
    const total = own ? (own.total ?? done + failed) : 1;
    // A job whose records failed (its own `failed` count) did not succeed: later
    // steps still run (they may report on it), but the run ends failed unless
    // the step says continueOnError, as with failed forEach items.
    const status = failed > 0 ? 'failed' : 'succeeded';
    Object.assign(rec, { status, done, failed, total, finishedAt: this.deps.clock.now(), output }, ownCounts(own));
    this.stepCountsToRun(rec);
    await this.deps.store.saveStep(rec);
    this.scope.steps[step.id] = { status, output, done, failed, total };
    this.announced(step.id);
    this.deps.bus.emit('step:finished', {
      runId: this.run.id,
      flow: this.flow.name,
      step: step.id,
      status,
      ...stepCounts(rec),
      ...this.totalOf(rec),
    });
    return OK;
  }

  /**
   * A single step's outcome: worked by the executor's workers when its
   * placement says so (a job with the bullmq executor), which report its
   * counts and waits here as it goes; else in this process. A dry run calls
   * no writing method: it stays here.
   */
  private unitOutcome(step: FlowStep, def: RegisteredAction): Promise<UnitOutcome> {
    const { executor } = this.deps;
    if (!executor.runStep || this.run.dryRun || placement(step, def) !== 'workers') return runUnit(this.sh, step, def, this.scope);
    const trace = this.stepSpans.get(step.id)?.carrier();
    return executor.runStep({
      runId: this.run.id,
      flow: this.flow,
      step,
      signal: this.controller.signal,
      progress: (counts) => announceProgress(this.sh, step.id, counts),
      waiting: (w) => void this.onWaiting(w).catch(() => {}),
      resumed: (w) => void this.onResumed(w).catch(() => {}),
      ...(trace ? { trace } : {}),
    });
  }

  /**
   * A job's own counts (ctx.progress) of a single step: its record follows
   * them, and the run's counters too (by the change since the last count), so
   * `msgflow runs` says what the bar says while the job works.
   */
  private jobProgress(stepId: string, u: ProgressCounts): void {
    // A job's first count announces its step, with its number of records.
    this.announced(stepId, u.total);
    this.counted.add(stepId);
    const rec = this.steps.get(stepId);
    if (!rec || rec.forEach) return;
    Object.assign(rec, { done: u.done, failed: u.failed ?? 0, ...(u.total !== undefined ? { total: u.total } : {}) });
    rec.invalid = u.invalid ?? 0;
    rec.duplicate = u.duplicate ?? 0;
    rec.skipped = u.skipped ?? 0;
    rec.waiting = u.waiting ?? 0;
    this.stepCountsToRun(rec);
    // Throttled (real time) so that other processes (`msgflow runs`, `runs show`) see a long job's counts.
    const now = Date.now();
    if (now - this.lastLiveSave >= this.deps.progressSaveIntervalMs) {
      this.lastLiveSave = now;
      this.deps.store.saveStep(rec).catch(() => {});
      this.deps.store.updateRun(this.run.id, { ...runCountFields(this.run), updatedAt: this.deps.clock.now() }).catch(() => {});
    }
  }

  /** Brings the run's counters up to a single step's current ones: adds what changed since they were last added. */
  private stepCountsToRun(rec: StepRecord): void {
    const now = stepCounts(rec);
    const before = this.inRun.get(rec.step) ?? { done: 0, failed: 0 };
    this.inRun.set(rec.step, now);
    this.addToRun({
      done: now.done - before.done,
      failed: now.failed - before.failed,
      invalid: (now.invalid ?? 0) - (before.invalid ?? 0),
      duplicate: (now.duplicate ?? 0) - (before.duplicate ?? 0),
      skipped: (now.skipped ?? 0) - (before.skipped ?? 0),
    });
  }

  /**
   * `step:started` of a single step: at once, or, when its action counts its
   * records (`countsRecords`), at its first count, which carries their number:
   * the start line of a job says its rows, not "1 item".
   */
  private announce(step: FlowStep, def: RegisteredAction): void {
    const emit = (total?: number) => {
      this.unannounced.delete(step.id);
      const ref = { runId: this.run.id, flow: this.flow.name, step: step.id };
      this.deps.bus.emit('step:started', { ...ref, action: step.uses, ...(total === undefined ? {} : { total }) });
    };
    if (def.countsRecords) this.unannounced.set(step.id, emit);
    else emit();
  }

  /** Emits a held `step:started` now: the job's first count, or its first wait or its end, whichever comes first. */
  private announced(stepId: string, total?: number): void {
    this.unannounced.get(stepId)?.(total);
  }

  /** A step's total for its events: a forEach step's items or a job's records; a single step of one call has none. */
  private totalOf(rec: StepRecord): { total?: number } {
    const counted = rec.forEach || this.counted.has(rec.step);
    return counted && rec.total !== undefined ? { total: rec.total } : {};
  }

  /** Adds a step's counters to the run's. */
  private addToRun(c: ItemCounts): void {
    const r = this.run;
    r.itemsDone += c.done;
    r.itemsFailed += c.failed;
    r.itemsInvalid = (r.itemsInvalid ?? 0) + (c.invalid ?? 0);
    r.itemsDuplicate = (r.itemsDuplicate ?? 0) + (c.duplicate ?? 0);
    r.itemsSkipped = (r.itemsSkipped ?? 0) + (c.skipped ?? 0);
  }

  private async runForEach(step: FlowStep, def: RegisteredAction, prev: StepRecord | undefined): Promise<StepOutcome> {
    let list: unknown;
    try {
      list = evaluateTemplate(step.forEach, this.scope, step.templates);
    } catch (e) {
      return this.stepFailed(step, e);
    }
    if (!Array.isArray(list)) {
      const kind = list === null ? 'null' : typeof list;
      return this.stepFailed(
        step,
        new FlowError('FLOW_INVALID', {
          location: step.location,
          path: `steps.${step.id}.forEach`,
          reason: `expected an array, got ${kind}`,
        }),
      );
    }
    const items: unknown[] = list;
    const { bus, clock } = this.deps;
    const total = items.length;
    const { rec, results, prior } = await this.openForEach(step, prev, total);
    const ref = { runId: this.run.id, flow: this.flow.name, step: step.id };
    bus.emit('step:started', { ...ref, action: step.uses, total });
    const pending: number[] = [];
    for (let i = 0; i < total; i++) if (!prior.has(i)) pending.push(i);
    const signal = this.controller.signal;
    const sink = new ForEachItems(
      {
        sh: this.sh,
        step,
        def,
        scope: this.scope,
        items,
        rec,
        results,
        perItem: refersToItem(step.if),
        count: (status) =>
          this.addToRun({ done: +(status === 'succeeded'), failed: +(status === 'failed'), skipped: +(status === 'skipped') }),
        saveProgress: () => this.saveProgress(rec),
        progressSaveIntervalMs: this.deps.progressSaveIntervalMs,
      },
      prior.keys(),
    );
    try {
      // Sub-flow items start child runs through this engine, and a step may say `executor: local`: those stay in this process.
      const executor = placement(step, def) === 'local' ? localExecutor : this.deps.executor;
      const trace = this.stepSpans.get(step.id)?.carrier();
      await executor.run({
        runId: this.run.id,
        flow: this.flow,
        step,
        items,
        pending,
        dryRun: this.run.dryRun,
        signal,
        sink,
        ...(trace ? { trace } : {}),
      });
    } finally {
      await sink.flushed();
    }
    if (signal.aborted) {
      await this.saveProgress(rec);
      return INTERRUPTED;
    }
    const status = rec.failed > 0 ? 'failed' : 'succeeded';
    Object.assign(rec, { status, finishedAt: clock.now() });
    await this.deps.store.saveStep(rec);
    this.scope.steps[step.id] = { status, output: results, results, done: rec.done, failed: rec.failed, total };
    bus.emit('step:finished', { ...ref, status, ...stepCounts(rec), total });
    return OK;
  }

  /** The step's record and results, with the items recorded before a restart replayed (they are not redone). */
  private async openForEach(step: FlowStep, prev: StepRecord | undefined, total: number) {
    const { store } = this.deps;
    const results: unknown[] = new Array(total).fill(null);
    const prior = prev ? await store.getItems(this.run.id, step.id) : new Map<number, ItemResult>();
    const rec = this.newRecord(step, { total, ...(prev ? { startedAt: prev.startedAt } : {}) });
    for (const [i, r] of prior) {
      if (i >= total) continue;
      if (r.status === 'succeeded') {
        rec.done++;
        results[i] = r.output ?? null;
      } else if (r.status === 'skipped') rec.skipped = (rec.skipped ?? 0) + 1;
      else rec.failed++;
    }
    this.addToRun(stepCounts(rec));
    await store.saveStep(rec);
    return { rec, results, prior };
  }

  private async saveProgress(rec: StepRecord): Promise<void> {
    await this.deps.store.saveStep(rec);
    await this.deps.store.updateRun(this.run.id, { ...runCountFields(this.run), updatedAt: this.deps.clock.now() });
  }

  /** A step finished before the restart: rebuild what expressions see, and the run's counts. */
  private async restoreView(step: FlowStep, rec: StepRecord): Promise<void> {
    this.addToRun(stepCounts(rec));
    this.scope.steps[step.id] = await restoredView(this.deps.store, this.run.id, rec);
  }

  private async onWaiting(w: WaitRecord): Promise<void> {
    this.announced(w.step);
    const first = this.waits.earliest() ?? w;
    Object.assign(this.run, { status: 'waiting', waitingUntil: first.until, waitReason: first.reason });
    // A wait may last hours: the records other processes read (`msgflow runs`) get the counts it starts with.
    const rec = this.steps.get(w.step);
    if (rec && !rec.forEach) await this.deps.store.saveStep(rec);
    await this.deps.store.updateRun(this.run.id, {
      status: 'waiting',
      waitingUntil: first.until,
      waitReason: first.reason,
      ...runCountFields(this.run),
      updatedAt: this.deps.clock.now(),
    });
    this.deps.bus.emit('run:waiting', { runId: this.run.id, flow: this.flow.name, step: w.step, until: w.until, reason: w.reason });
  }

  private async onResumed(w: WaitRecord): Promise<void> {
    if (this.controller.signal.aborted) return;
    this.run.status = 'running';
    delete this.run.waitingUntil;
    delete this.run.waitReason;
    await this.deps.store.updateRun(this.run.id, {
      status: 'running',
      waitingUntil: undefined,
      waitReason: undefined,
      updatedAt: this.deps.clock.now(),
    });
    this.deps.bus.emit('run:resumed', { runId: this.run.id, flow: this.flow.name, step: w.step });
  }

  private async end(requested: 'succeeded' | 'failed' | 'interrupted', error?: unknown, step?: string): Promise<RunRecord> {
    const { store, bus, clock } = this.deps;
    const now = clock.now();
    const ref = { runId: this.run.id, flow: this.flow.name };
    if (this.lost) {
      // Another process owns the run now: its record is theirs to write.
      bus.emit('run:interrupted', { ...ref, reason: this.interruptReason });
      return { ...this.snapshot(), status: 'interrupted', ...(this.interruptError ? { error: this.interruptError } : {}) };
    }
    const status = requested === 'interrupted' && this.cancelled ? 'cancelled' : requested;
    const patch: Partial<RunRecord> = {
      status,
      updatedAt: now,
      ...runCountFields(this.run),
      waitingUntil: undefined,
      waitReason: undefined,
    };
    let info: ErrorInfo | undefined;
    if (status !== 'interrupted') Object.assign(patch, { finishedAt: now, durationMs: now - this.run.startedAt });
    if (status === 'succeeded' && this.outputs !== undefined) patch.outputs = this.outputs;
    if (status === 'cancelled') {
      // A step cut short by the cancel must not read `running` forever.
      for (const rec of this.steps.values()) {
        if (rec.status !== 'running' && rec.status !== 'waiting') continue;
        rec.status = 'cancelled';
        rec.finishedAt = now;
        await store.saveStep(rec).catch(() => {});
      }
      patch.cancelRequested = true;
      // The request is served: it must not cancel anything later.
      await store
        .kv(RUN_CONTROL_NS)
        .delete(this.run.id)
        .catch(() => {});
    }
    if (status === 'failed') {
      info = this.kept(errorInfo(error, step));
      patch.error = info;
      // Before the record says failed: a crash in between leaves the occurrence for the alert dispatcher (records.ts).
      await recordAlertIntent(store, this.failureAlert(info, failureCode(error) ?? info.code, step, now));
    }
    if (status !== 'interrupted') await this.slaCheck(now);
    if (status === 'interrupted' && this.interruptError) patch.error = this.interruptError;
    this.run = await store.updateRun(this.run.id, patch);
    this.runSpan?.setAttributes({
      'msgflow.status': status,
      'msgflow.items_done': this.run.itemsDone,
      'msgflow.items_failed': this.run.itemsFailed,
    });
    this.runSpan?.end(status === 'failed' ? { error: { code: info?.code ?? 'ERROR' } } : undefined);
    if (status === 'succeeded') {
      bus.emit('run:finished', { ...ref, durationMs: this.run.durationMs ?? 0, ...runCountFields(this.run) });
    } else if (status === 'failed') {
      bus.emit('run:failed', { ...ref, error: info!.message, ...(info!.code ? { code: info!.code } : {}), ...(step ? { step } : {}) });
    } else {
      bus.emit('run:interrupted', { ...ref, reason: this.interruptReason });
    }
    return structuredClone(this.run);
  }
}
