/**
 * A worker's side of a forEach item: rebuilds what the item's templates see
 * (the run's inputs and the earlier steps' results, cached per run and
 * step), runs it through the same unit runner as the local executor, and
 * records its result idempotently.
 *
 * Records, per run (kv namespace `run-items:<runId>`):
 * - `<step>#<index>`: the item's result, written before it goes into the
 *   item log: a job run again (its worker died after recording) only
 *   re-appends it, never calls the action again;
 *
 * And the intent of a writing call (sendFileByUrl, addContact, ...): lease
 * `item-intent:<runId>:<step>#<index>`, taken atomically at the moment the
 * call leaves (the client's `beforeSend`: after its rate limiter, just before
 * the transport sends) and released once the item's result is recorded. An
 * item whose worker died before its call left (waiting on the rate limiter,
 * say) holds no intent and is simply worked again by another worker. Two
 * workers can hold one job (one starved past its lock while the job went on
 * elsewhere): only the one that takes the intent calls. A job that finds
 * another worker's intent without a result knows that worker died during the
 * call (or was starved in it). A send (sendMessage, sendFileByUrl) is then
 * looked for at the service: found, the item is recorded sent; in neither the
 * send queue nor the chat history once the journal lag (executor.journalLagMs)
 * has passed, it never reached the service and is made now. Any other call is
 * recorded failed (ITEM_OUTCOME_UNKNOWN), never called a second time. A
 * plugin action with `writes: true` may write by other means than the
 * client, so its intent is taken before it runs.
 */
import { randomUUID } from 'node:crypto';
import { FlowError } from '../../api/errors.js';
import { METHOD_SPECS } from '../../api/methods.js';
import type { PauseInfo } from '../../engine/control.js';
import type { ExprScope } from '../../engine/expr/interpreter.js';
import type { Flow, FlowStep } from '../../engine/flow/types.js';
import type { RegisteredAction } from '../../engine/registry/registry.js';
import { errorInfo } from '../../engine/run/errors.js';
import { defaultHostId } from '../../engine/run/ownership.js';
import { itemScope, type RunScope } from '../../engine/run/unit-context.js';
import { StepFatalError, runUnit } from '../../engine/run/unit-runner.js';
import { runItemsNamespace, type ErrorInfo, type ItemResult, type Lease } from '../../store/types.js';
import { lookForSend, sendShape } from '../../client/send-lookup.js';
import { loadUnitContext, runStopReason, WorkerFlows, workerRunScope, workerWaits, type WorkerDeps } from './run-context.js';
import { WriteIntent, writeIntentInterceptor, type WriteCall } from './write-intent.js';

/** What an item's job carries: the item's value is evaluated once, by the run, so every worker sees the same list. */
export interface ItemJobData {
  runId: string;
  step: string;
  index: number;
  item: unknown;
  /** The step span's W3C trace context when the run is traced: the item's span joins the run's trace. */
  trace?: Record<string, string>;
}

/** What a job returns to the run (QueueEvents `completed`). */
/** `later`: the job waits `ms` before it is tried again (a dead worker's send still being looked for). */
export type ItemJobResult =
  | { kind: 'recorded'; result: ItemResult; fatal?: ErrorInfo }
  | { kind: 'dropped'; reason: string }
  | { kind: 'paused'; ms: number }
  | { kind: 'later'; ms: number };

/** What the item host works with: the worker's (run-context.ts). */
export type ItemHostDeps = WorkerDeps;

/** The parts of an item's unit that are the same for every item of a run's step. */
interface StepContext {
  flow: Flow;
  step: FlowStep;
  def: RegisteredAction;
  writes: boolean;
  /** The step is a writing API method (sendFileByUrl...): its one write is the client's call. */
  methodWrite: boolean;
  /** The expression scope of the step's items (each adds its item and index). */
  expr: ExprScope;
  /** What every item of the step shares (unit-context.ts); each item adds its signal and write intent. */
  scope: RunScope;
}

/** How long a run's status read by a worker is trusted (real time). */
const STOP_CHECK_MS = 1000;

/** An intent is held until its result is recorded: it never lapses on its own. */
const INTENT_HELD = Number.MAX_SAFE_INTEGER;

function intentName(job: ItemJobData, key: string): string {
  return `item-intent:${job.runId}:${key}`;
}

/** Recently used run/step contexts kept per worker process. */
const CACHE_SIZE = 32;

/** Tolerated difference between this machine's clock and the service's message timestamps (as files.broadcast's default). */
const CLOCK_SKEW_MS = 10_000;

export class ItemHost {
  private readonly contexts = new Map<string, Promise<StepContext | string>>();
  private readonly stops = new Map<string, { at: number; reason: Promise<string | undefined> }>();
  private readonly flows: WorkerFlows;

  constructor(private readonly d: ItemHostDeps) {
    this.flows = new WorkerFlows(d.flows);
  }

  /**
   * Works one item's job. Throws only when the job should be tried again (the
   * store is down). `firstTry`: the job was never taken before (no attempt,
   * no stall), so no result of it can be recorded yet and the lookup is saved.
   */
  async process(job: ItemJobData, signal?: AbortSignal, firstTry = false): Promise<ItemJobResult> {
    const records = this.d.store.kv(runItemsNamespace(job.runId));
    const key = `${job.step}#${job.index}`;
    const prev = firstTry ? undefined : await records.get<ItemResult>(key);
    if (prev) {
      await this.d.store.appendItems(job.runId, [prev]);
      return { kind: 'recorded', result: prev };
    }
    const stop = await this.stopReason(job.runId);
    if (stop) return { kind: 'dropped', reason: stop };
    const ctx = await this.context(job.runId, job.step);
    // Not workable here (this worker's flows differ): tried again later, by any worker, then recorded failed by the run.
    if (typeof ctx === 'string') throw new FlowError('ITEM_NOT_WORKABLE', { reason: ctx });
    const intent = ctx.writes ? new WriteIntent((call) => this.claimIntent(job, key, ctx, firstTry, call)) : undefined;
    // A plugin's writes may not go through the client: its intent is taken before it runs.
    if (intent && !ctx.methodWrite) {
      const early = await intent.takeEarly();
      if (early) return early;
    }
    const tracer = this.d.tracer;
    const trace = job.trace;
    const sh = itemScope(ctx.scope, {
      signal: signal ?? new AbortController().signal,
      interceptors: intent ? [writeIntentInterceptor(intent)] : [],
      ...(tracer && trace
        ? { traceUnit: () => tracer.continue(trace, `item ${job.index}`, { 'msgflow.item': job.index, 'msgflow.worker': true }) }
        : {}),
    });
    let out;
    try {
      out = await runUnit(sh, ctx.step, ctx.def, { ...ctx.expr, item: job.item, index: job.index }, job.index);
    } catch (e) {
      if (!(e instanceof StepFatalError)) throw e;
      const r = await this.record(job, key, this.failedResult(job, e.fatal), intent?.token);
      return { ...r, fatal: errorInfo(e.fatal) } as ItemJobResult;
    }
    // The intent was held by another worker, or the item was recorded meanwhile: the call was not made here.
    if (intent?.instead) return intent.outcome();
    if (out.interrupted) return this.interrupted(job, key, ctx, intent, out.paused);
    const result: ItemResult = {
      step: job.step,
      index: job.index,
      status: out.status,
      attempts: out.attempts,
      finishedAt: this.d.clock.now(),
    };
    if (out.output !== undefined) result.output = out.output;
    if (out.error) result.error = out.error;
    return this.record(job, key, result, intent?.token);
  }

  /**
   * An item stopped before its end (the worker is stopping, its lock was
   * lost) or handed back until an instance-wide pause ends (`paused`: the
   * job goes back to the queue, the queue paused). Its intent stays when its call had left:
   * whoever takes the job next records the outcome unknown rather than call
   * again. An intent taken before a plugin's run that made no call through
   * the client is released.
   */
  private async interrupted(
    job: ItemJobData,
    key: string,
    ctx: StepContext,
    intent: WriteIntent | undefined,
    paused: PauseInfo | undefined,
  ): Promise<ItemJobResult> {
    if (intent?.token && !ctx.methodWrite && !intent.sent) await this.releaseIntent(job, key, intent.token);
    if (paused) return { kind: 'paused', ms: Math.max(1, paused.until - this.d.clock.now()) };
    throw new FlowError('ENGINE_STOPPED', { reason: 'the worker is stopping; the item goes back to the queue' });
  }

  /** The item failed on its one attempt here, with `e` as its error. */
  private failedResult(job: ItemJobData, e: unknown): ItemResult {
    const error = errorInfo(e, job.step, job.index);
    return { step: job.step, index: job.index, status: 'failed', attempts: 1, finishedAt: this.d.clock.now(), error };
  }

  /**
   * Takes the intent of a writing item's call; resolves its token, or what the
   * job comes to when another worker holds it (or finished the item already).
   */
  private async claimIntent(
    job: ItemJobData,
    key: string,
    ctx: StepContext,
    firstTry: boolean,
    call?: WriteCall,
  ): Promise<string | ItemJobResult> {
    const token = randomUUID();
    const now = this.d.clock.now();
    const lease: Lease = {
      token,
      pid: process.pid,
      host: defaultHostId(),
      acquiredAt: now,
      expiresAt: INTENT_HELD,
      runId: job.runId,
      label: `item ${key}`,
    };
    const holder = await this.d.store.acquireLease(intentName(job, key), lease);
    if (holder) {
      // A job never taken before that meets another's intent was starved past its lock and went on
      // elsewhere: it leaves the item to that worker (BullMQ drops a job whose lock is lost). A job
      // taken over meets the intent of the worker that died (or stalled) during the call.
      if (firstTry) throw new FlowError('ITEM_TAKEN_OVER', { step: job.step, item: job.index });
      return this.takeOver(job, key, ctx, holder, lease, call);
    }
    // The worker that held the job before may have recorded it since this one looked.
    const done = await this.d.store.kv(runItemsNamespace(job.runId)).get<ItemResult>(key);
    if (!done) return token;
    await this.releaseIntent(job, key, token);
    await this.d.store.appendItems(job.runId, [done]);
    return { kind: 'recorded', result: done };
  }

  /**
   * The intent of a worker that died (or stalled) once its call had left.
   * A send (sendMessage, sendFileByUrl) is looked for at the service
   * (client/send-lookup.ts): its message found, the item is recorded sent; in
   * neither the send queue nor the chat history once the journal lag has
   * passed since it was first found missing, the call never reached the
   * service and this worker makes it, under its own intent; until then the
   * job waits (`later`). Any other call, or a service that cannot say: the
   * outcome is unknown (recorded failed, never called again).
   */
  private async takeOver(
    job: ItemJobData,
    key: string,
    ctx: StepContext,
    holder: Lease,
    lease: Lease,
    call: WriteCall | undefined,
  ): Promise<string | ItemJobResult> {
    const shape = call && sendShape(call.method, call.request, holder.acquiredAt);
    const client = this.d.clientFor(ctx.flow.instance);
    const seen = shape ? await lookForSend(client, shape, { clockSkewMs: CLOCK_SKEW_MS }) : { unknown: true as const };
    if (!('absent' in seen)) {
      const result = 'found' in seen ? this.foundResult(job, ctx, seen.found.idMessage) : this.unknownOutcome(job, ctx);
      const r = await this.record(job, key, result, undefined);
      await this.releaseIntent(job, key, holder.token);
      return r;
    }
    const marks = this.d.store.kv(runItemsNamespace(job.runId));
    const now = this.d.clock.now();
    let since = await marks.get<number>(`${key}@absent`);
    if (since === undefined) await marks.set(`${key}@absent`, (since = now));
    if (now < since + this.d.journalLagMs) return { kind: 'later', ms: since + this.d.journalLagMs - now };
    await this.releaseIntent(job, key, holder.token);
    if (await this.d.store.acquireLease(intentName(job, key), lease)) return { kind: 'later', ms: 1000 };
    ctx.scope.logger.info(
      `item ${key}: its worker stopped before its ${call!.method} reached the service (in neither the send queue nor the chat history ${Math.round(this.d.journalLagMs / 1000)}s on): made now`,
      { step: job.step, item: job.index },
    );
    return lease.token;
  }

  private foundResult(job: ItemJobData, ctx: StepContext, idMessage: string): ItemResult {
    ctx.scope.logger.info(
      `item ${job.step}#${job.index}: its call had reached the service before its worker stopped (${idMessage}); not made again`,
      { step: job.step, item: job.index },
    );
    return { step: job.step, index: job.index, status: 'succeeded', attempts: 1, finishedAt: this.d.clock.now(), output: { idMessage } };
  }

  private releaseIntent(job: ItemJobData, key: string, token: string): Promise<void> {
    return this.d.store.releaseLease(intentName(job, key), token);
  }

  /** Result first (the idempotence record), then the item log, then the intent (of a writing step) goes. */
  private async record(job: ItemJobData, key: string, result: ItemResult, intent: string | undefined): Promise<ItemJobResult> {
    const records = this.d.store.kv(runItemsNamespace(job.runId));
    await records.set(key, result);
    await this.d.store.appendItems(job.runId, [result]);
    if (intent) await this.releaseIntent(job, key, intent);
    return { kind: 'recorded', result };
  }

  private unknownOutcome(job: ItemJobData, ctx: StepContext): ItemResult {
    const err = new FlowError('ITEM_OUTCOME_UNKNOWN', { step: job.step, item: job.index, action: ctx.step.uses });
    ctx.scope.logger.warn(err.message, { step: job.step, item: job.index });
    return this.failedResult(job, err);
  }

  /**
   * Why items of the run are no longer worked (finished, cancelled), if so.
   * Cached for STOP_CHECK_MS: a cancel reaches the workers within it, and a
   * busy worker does not read the run record for every item.
   */
  private stopReason(runId: string): Promise<string | undefined> {
    const now = Date.now();
    const hit = this.stops.get(runId);
    if (hit && now - hit.at < STOP_CHECK_MS) return hit.reason;
    const reason = runStopReason(this.d.store, runId);
    this.stops.set(runId, { at: now, reason });
    if (this.stops.size > CACHE_SIZE) this.stops.delete(this.stops.keys().next().value!);
    reason.catch(() => this.stops.delete(runId));
    return reason;
  }

  private context(runId: string, step: string): Promise<StepContext | string> {
    const k = `${runId}\u0000${step}`;
    let c = this.contexts.get(k);
    if (!c) {
      c = this.load(runId, step);
      this.contexts.set(k, c);
      if (this.contexts.size > CACHE_SIZE) this.contexts.delete(this.contexts.keys().next().value!);
      // Only a usable context is kept: a missing flow may be there on the next try.
      c.then(
        (v) => typeof v === 'string' && this.contexts.delete(k),
        () => this.contexts.delete(k),
      );
    }
    return c;
  }

  /** The step's context, or why the item cannot be worked here. */
  private async load(runId: string, stepId: string): Promise<StepContext | string> {
    const u = await loadUnitContext(this.d, this.flows, runId, stepId);
    if (typeof u === 'string') return u;
    const { step, def } = u;
    const methodWrite = Object.hasOwn(METHOD_SPECS, step.uses) && METHOD_SPECS[step.uses as keyof typeof METHOD_SPECS].writes;
    const writes = methodWrite || def.writes === true;
    const scope = workerRunScope(this.d, u, await workerWaits(this.d, runId));
    return { flow: u.flow, step, def, writes, methodWrite, expr: u.expr, scope };
  }
}
