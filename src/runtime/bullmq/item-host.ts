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
import { FlowError, MsgflowError, RateLimitError } from '../../api/errors.js';
import { METHOD_SPECS } from '../../api/methods.js';
import type { CallOptions, InstanceApi } from '../../api/types.js';
import { PAUSES_NAMESPACE, pauseKey, raiseCheckPause } from '../../actions/check-account-bulk.js';
import type { Logger } from '../../engine/action.js';
import type { EngineBus } from '../../engine/events.js';
import type { ExprScope } from '../../engine/expr/interpreter.js';
import type { Flow, FlowStep } from '../../engine/flow/types.js';
import type { ActionRegistry, RegisteredAction } from '../../engine/registry/registry.js';
import { DurableWaits } from '../../engine/run/durable-waits.js';
import { errorInfo } from '../../engine/run/errors.js';
import { defaultHostId } from '../../engine/run/ownership.js';
import { RUN_CONTROL_NS, restoredView } from '../../engine/run/run-execution.js';
import { type RunShared, StepFatalError, runUnit } from '../../engine/run/unit-runner.js';
import { RESUMABLE_STATUSES, type EngineStore, type ErrorInfo, type ItemResult, type Lease } from '../../store/types.js';
import { lookForSend, sendShape } from '../../actions/kit/send-lookup.js';
import type { Clock } from '../../util/clock.js';

/** What an item's job carries: the item's value is evaluated once, by the run, so every worker sees the same list. */
export interface ItemJobData {
  runId: string;
  step: string;
  index: number;
  item: unknown;
}

/** What a job returns to the run (QueueEvents `completed`). */
/** `later`: the job waits `ms` before it is tried again (a dead worker's send still being looked for). */
export type ItemJobResult =
  | { kind: 'recorded'; result: ItemResult; fatal?: ErrorInfo }
  | { kind: 'dropped'; reason: string }
  | { kind: 'paused'; ms: number }
  | { kind: 'later'; ms: number };

export interface ItemHostDeps {
  store: EngineStore;
  bus: EngineBus;
  clock: Clock;
  registry: ActionRegistry;
  logger: Logger;
  clientFor(instance: string): InstanceApi;
  identityFor(instance: string): string;
  /** The loaded flows, by name (called again when a run names a flow not loaded yet). */
  flows(): ReadonlyMap<string, Flow>;
  localUrl?: string;
  baseDir: string;
  defaultRateLimitWaitMs: number;
  /** How long a message the service sent may take to appear in its chat history (config.yaml executor.journalLagMs). @default 120000 */
  journalLagMs: number;
}

/** Minimum pause of every checkAccount of an instance after rate_limit_exceeded (as checkAccount.bulk's default). */
export const CHECK_ACCOUNT_PAUSE_MS = 2 * 3_600_000;

/** The parts of an item's unit that are the same for every item of a run's step. */
interface StepContext {
  flow: Flow;
  step: FlowStep;
  def: RegisteredAction;
  writes: boolean;
  /** The step is a writing API method (sendFileByUrl...): its one write is the client's call. */
  methodWrite: boolean;
  dryRun: boolean;
  inputs: Record<string, unknown>;
  scope: ExprScope;
  waits: DurableWaits;
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

/** A writing call about to leave: what the take-over of a dead worker's intent looks for at the service. */
interface WriteCall {
  method: string;
  request: unknown;
}

/** Tolerated difference between this machine's clock and the service's message timestamps (as files.broadcast's default). */
const CLOCK_SKEW_MS = 10_000;

/** What one item's run shares with its client. */
interface ItemControls {
  paused: { until?: number };
  abort: AbortController;
  intent?: WriteIntent;
}

/**
 * One writing item's intent: claimed once, when its first writing call
 * leaves (or before a plugin's run), through `claim` (ItemHost.claimIntent).
 * When the claim finds the item taken (another worker's intent, a result
 * recorded meanwhile), the item is aborted and {@link outcome} says what the
 * job comes to.
 */
class WriteIntent {
  /** The intent's token, once held. */
  token: string | undefined;
  /** A writing call left through the client. */
  sent = false;
  /** What the job comes to instead of calling: a recorded result, or an error (ITEM_TAKEN_OVER). */
  instead: { result: ItemJobResult } | { error: unknown } | undefined;

  constructor(
    private readonly claim: (call?: WriteCall) => Promise<string | ItemJobResult>,
    private readonly abort: AbortController,
  ) {}

  /** Before a plugin's run: undefined once held, else what the job comes to. */
  async takeEarly(): Promise<ItemJobResult | undefined> {
    const r = await this.claim();
    if (typeof r !== 'string') return r;
    this.token = r;
    return undefined;
  }

  /** CallOptions.beforeSend of a writing call: holds the intent, or aborts the item without calling. */
  async leave(call: WriteCall): Promise<void> {
    if (this.instead) throw this.stop();
    if (this.token === undefined) {
      let r: string | ItemJobResult;
      try {
        r = await this.claim(call);
      } catch (e) {
        if (!(e instanceof FlowError && e.code === 'ITEM_TAKEN_OVER')) throw e;
        this.instead = { error: e };
        throw this.stop();
      }
      if (typeof r !== 'string') {
        this.instead = { result: r };
        throw this.stop();
      }
      this.token = r;
    }
    this.sent = true;
  }

  /** The job's answer once `instead` is set. */
  outcome(): ItemJobResult {
    const i = this.instead!;
    if ('error' in i) throw i.error;
    return i.result;
  }

  private stop(): unknown {
    const why = new FlowError('USAGE', { reason: 'the item was taken over or recorded elsewhere; this worker does not call' });
    if (!this.abort.signal.aborted) this.abort.abort(why);
    return this.abort.signal.reason;
  }
}

export class ItemHost {
  private readonly contexts = new Map<string, Promise<StepContext | string>>();
  private readonly stops = new Map<string, { at: number; reason: Promise<string | undefined> }>();
  private flowsByName: ReadonlyMap<string, Flow>;

  constructor(private readonly d: ItemHostDeps) {
    this.flowsByName = d.flows();
  }

  /**
   * Works one item's job. Throws only when the job should be tried again (the
   * store is down). `firstTry`: the job was never taken before (no attempt,
   * no stall), so no result of it can be recorded yet and the lookup is saved.
   */
  async process(job: ItemJobData, signal?: AbortSignal, firstTry = false): Promise<ItemJobResult> {
    const records = this.d.store.kv(`run-items:${job.runId}`);
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
    const abort = new AbortController();
    const intent = ctx.writes ? new WriteIntent((call) => this.claimIntent(job, key, ctx, firstTry, call), abort) : undefined;
    // A plugin's writes may not go through the client: its intent is taken before it runs.
    if (intent && !ctx.methodWrite) {
      const early = await intent.takeEarly();
      if (early) return early;
    }
    const paused: { until?: number } = {};
    const sh = this.shared(job.runId, ctx, signal ? AbortSignal.any([signal, abort.signal]) : abort.signal, { paused, abort, intent });
    let out;
    try {
      out = await runUnit(sh, ctx.step, ctx.def, { ...ctx.scope, item: job.item, index: job.index }, job.index);
    } catch (e) {
      if (!(e instanceof StepFatalError)) throw e;
      const r = await this.record(job, key, this.fatalResult(job, e), intent?.token);
      return { ...r, fatal: errorInfo(e.fatal) } as ItemJobResult;
    }
    // The intent was held by another worker, or the item was recorded meanwhile: the call was not made here.
    if (intent?.instead) return intent.outcome();
    if (out.interrupted) return this.interrupted(job, key, ctx, intent, paused);
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
   * lost, a checkAccount pause). Its intent stays when its call had left:
   * whoever takes the job next records the outcome unknown rather than call
   * again. An intent taken before a plugin's run that made no call through
   * the client is released.
   */
  private async interrupted(
    job: ItemJobData,
    key: string,
    ctx: StepContext,
    intent: WriteIntent | undefined,
    paused: { until?: number },
  ): Promise<ItemJobResult> {
    if (intent?.token && !ctx.methodWrite && !intent.sent) await this.releaseIntent(job, key, intent.token);
    if (paused.until !== undefined) return { kind: 'paused', ms: Math.max(1, paused.until - this.d.clock.now()) };
    throw new FlowError('ENGINE_STOPPED', { reason: 'the worker is stopping; the item goes back to the queue' });
  }

  private fatalResult(job: ItemJobData, e: StepFatalError): ItemResult {
    return {
      step: job.step,
      index: job.index,
      status: 'failed',
      attempts: 1,
      finishedAt: this.d.clock.now(),
      error: errorInfo(e.fatal, job.step, job.index),
    };
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
    const done = await this.d.store.kv(`run-items:${job.runId}`).get<ItemResult>(key);
    if (!done) return token;
    await this.releaseIntent(job, key, token);
    await this.d.store.appendItems(job.runId, [done]);
    return { kind: 'recorded', result: done };
  }

  /**
   * The intent of a worker that died (or stalled) once its call had left.
   * A send (sendMessage, sendFileByUrl) is looked for at the service
   * (kit/send-lookup.ts): its message found, the item is recorded sent; in
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
      const result = 'found' in seen ? this.foundResult(job, seen.found.idMessage) : this.unknownOutcome(job, ctx);
      const r = await this.record(job, key, result, undefined);
      await this.releaseIntent(job, key, holder.token);
      return r;
    }
    const marks = this.d.store.kv(`run-items:${job.runId}`);
    const now = this.d.clock.now();
    let since = await marks.get<number>(`${key}@absent`);
    if (since === undefined) await marks.set(`${key}@absent`, (since = now));
    if (now < since + this.d.journalLagMs) return { kind: 'later', ms: since + this.d.journalLagMs - now };
    await this.releaseIntent(job, key, holder.token);
    if (await this.d.store.acquireLease(intentName(job, key), lease)) return { kind: 'later', ms: 1000 };
    this.d.logger.info(
      `item ${key}: its worker stopped before its ${call!.method} reached the service (in neither the send queue nor the chat history ${Math.round(this.d.journalLagMs / 1000)}s on): made now`,
      { runId: job.runId, step: job.step, item: job.index },
    );
    return lease.token;
  }

  private foundResult(job: ItemJobData, idMessage: string): ItemResult {
    this.d.logger.info(
      `item ${job.step}#${job.index}: its call had reached the service before its worker stopped (${idMessage}); not made again`,
      {
        runId: job.runId,
        step: job.step,
        item: job.index,
      },
    );
    return { step: job.step, index: job.index, status: 'succeeded', attempts: 1, finishedAt: this.d.clock.now(), output: { idMessage } };
  }

  private releaseIntent(job: ItemJobData, key: string, token: string): Promise<void> {
    return this.d.store.releaseLease(intentName(job, key), token);
  }

  /** Result first (the idempotence record), then the item log, then the intent (of a writing step) goes. */
  private async record(job: ItemJobData, key: string, result: ItemResult, intent: string | undefined): Promise<ItemJobResult> {
    const records = this.d.store.kv(`run-items:${job.runId}`);
    await records.set(key, result);
    await this.d.store.appendItems(job.runId, [result]);
    if (intent) await this.releaseIntent(job, key, intent);
    return { kind: 'recorded', result };
  }

  private unknownOutcome(job: ItemJobData, ctx: StepContext): ItemResult {
    const err = new FlowError('ITEM_OUTCOME_UNKNOWN', { step: job.step, item: job.index, action: ctx.step.uses });
    this.d.logger.warn(err.message, { runId: job.runId, step: job.step, item: job.index });
    return {
      step: job.step,
      index: job.index,
      status: 'failed',
      attempts: 1,
      finishedAt: this.d.clock.now(),
      error: errorInfo(err, job.step, job.index),
    };
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
    const reason = this.readStopReason(runId);
    this.stops.set(runId, { at: now, reason });
    if (this.stops.size > CACHE_SIZE) this.stops.delete(this.stops.keys().next().value!);
    reason.catch(() => this.stops.delete(runId));
    return reason;
  }

  private async readStopReason(runId: string): Promise<string | undefined> {
    const run = await this.d.store.getRun(runId);
    if (!run) return `run ${runId} no longer exists`;
    if (!RESUMABLE_STATUSES.includes(run.status)) return `run ${runId} is ${run.status}`;
    const control = await this.d.store.kv(RUN_CONTROL_NS).get<{ cancel?: boolean }>(runId);
    return control?.cancel ? `run ${runId} is being cancelled` : undefined;
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
    const { store } = this.d;
    const run = await store.getRun(runId);
    if (!run) return `run ${runId} no longer exists`;
    let flow = this.flowsByName.get(run.flow);
    if (!flow) {
      this.flowsByName = this.d.flows();
      flow = this.flowsByName.get(run.flow);
    }
    if (!flow) return `flow '${run.flow}' is not loaded by this worker (is its flowsDir the same as the run's?)`;
    const step = flow.steps.find((s) => s.id === stepId);
    const def = step && this.d.registry.get(step.uses);
    if (!step || !def) return `step '${stepId}' of flow '${flow.name}' is not known here`;
    const inputs = (await store.loadInputs(runId)) ?? {};
    const steps: ExprScope['steps'] = {};
    for (const rec of await store.getSteps(runId)) {
      if (rec.step !== stepId && rec.status !== 'running') steps[rec.step] = await restoredView(store, runId, rec);
    }
    const scope: ExprScope = {
      inputs,
      env: { ...flow.env },
      steps,
      run: { id: run.id, flow: flow.name, startedAt: run.startedAt },
      ...(this.d.localUrl === undefined ? {} : { local: { url: this.d.localUrl } }),
      // A notification-triggered run's notification, as on the local executor.
      ...(run.event === undefined ? {} : { event: run.event }),
      clock: this.d.clock,
    };
    const waits = new DurableWaits({ store, runId, clock: this.d.clock, onWaiting: () => {}, onResumed: () => {} });
    waits.load(await store.listWaits(runId));
    const methodWrite = Object.hasOwn(METHOD_SPECS, step.uses) && METHOD_SPECS[step.uses as keyof typeof METHOD_SPECS].writes;
    const writes = methodWrite || def.writes === true;
    return { flow, step, def, writes, methodWrite, dryRun: run.dryRun, inputs, scope, waits };
  }

  private shared(runId: string, ctx: StepContext, signal: AbortSignal, item: ItemControls): RunShared {
    const { flow } = ctx;
    const identity = this.d.identityFor(flow.instance);
    const ref = { runId, flow: flow.name };
    const log = this.d.logger;
    return {
      runId,
      flow,
      inputs: ctx.inputs,
      dryRun: ctx.dryRun,
      store: this.d.store,
      bus: this.d.bus,
      clock: this.d.clock,
      random: Math.random,
      signal,
      client: () => this.client(flow, identity, ctx.dryRun, item),
      instance: { name: flow.instance, identity },
      runState: this.d.store.kv(`run:${runId}`),
      waits: ctx.waits,
      baseDir: this.d.baseDir,
      defaultRateLimitWaitMs: this.d.defaultRateLimitWaitMs,
      logger: {
        debug: (m, f) => log.debug(m, { ...ref, ...f }),
        info: (m, f) => log.info(m, { ...ref, ...f }),
        warn: (m, f) => log.warn(m, { ...ref, ...f }),
        error: (m, f) => log.error(m, { ...ref, ...f }),
      },
    };
  }

  /**
   * The item's client: a dry run refuses writing methods; a writing call
   * takes the item's intent as it leaves (CallOptions.beforeSend);
   * checkAccount honours the instance's pause (kv `pauses`, as
   * checkAccount.bulk does) and raises it on rate_limit_exceeded. A paused
   * call aborts the item so that its job goes back to the queue and the queue
   * stops for every worker.
   */
  private client(flow: Flow, identity: string, dryRun: boolean, item: ItemControls): InstanceApi {
    const api = this.d.clientFor(flow.instance);
    const pauses = this.d.store.kv(`shared:${PAUSES_NAMESPACE}`);
    const { paused, abort, intent } = item;
    // Over an empty target: the client may be frozen, and a proxy must return a frozen target's own values as they are.
    return new Proxy({} as InstanceApi, {
      get: (_target, prop) => {
        const v: unknown = Reflect.get(api, prop, api);
        if (typeof prop !== 'string' || typeof v !== 'function' || !Object.hasOwn(METHOD_SPECS, prop)) return v;
        const call = (...args: unknown[]) => (v as (...a: unknown[]) => Promise<unknown>).apply(api, args);
        if (METHOD_SPECS[prop as keyof typeof METHOD_SPECS].writes) {
          if (dryRun) {
            return async () => {
              throw new FlowError('DRY_RUN_WRITE', { method: prop });
            };
          }
          if (!intent) return call;
          return (request: unknown, options: CallOptions = {}) => {
            const before = options.beforeSend;
            return call(request, { ...options, beforeSend: async () => (await before?.(), await intent.leave({ method: prop, request })) });
          };
        }
        if (prop !== 'checkAccount') return call;
        return async (...args: unknown[]) => {
          const p = await pauses.get<{ until: number }>(pauseKey(identity));
          if (p && p.until > this.d.clock.now()) return this.pauseItem(paused, abort, p.until);
          try {
            return await call(...args);
          } catch (e) {
            if (!(e instanceof RateLimitError) || e.scope !== 'checkAccount') throw e;
            const until = await this.raisePause(flow, identity, e);
            return this.pauseItem(paused, abort, until);
          }
        };
      },
    });
  }

  private pauseItem(paused: { until?: number }, abort: AbortController, until: number): never {
    paused.until = until;
    const e = new MsgflowError('USAGE', { reason: `checkAccount paused until ${new Date(until).toISOString()}` });
    abort.abort(e);
    throw e;
  }

  /** The instance-wide pause, in the one record `msgflow pauses` and checkAccount.bulk read. */
  private async raisePause(flow: Flow, identity: string, e: RateLimitError): Promise<number> {
    const pause = await raiseCheckPause(
      this.d.store.kv(`shared:${PAUSES_NAMESPACE}`),
      { name: flow.instance, identity },
      { since: this.d.clock.now(), minMs: CHECK_ACCOUNT_PAUSE_MS, retryAfterMs: e.retryAfterMs, byWorker: true },
    );
    this.d.logger.warn(pause.reason, { instance: flow.instance });
    return pause.until;
  }
}
