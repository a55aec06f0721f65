/**
 * What an action sees, built in one place. A {@link RunScope} (made by
 * {@link createRunScope}) is what every unit of a run shares: its store, bus,
 * clock, random, logger kept with the run, durable waits, instance, inputs,
 * and the client chain; {@link createUnitContext} makes one unit's (a single
 * step's, or a forEach item's) ActionContext from it. The local executor
 * (run-execution.ts, unit-runner.ts), the BullMQ item host, `msgflow test`
 * (through the engine) and the action test kit (actions/testing.ts) all build
 * through these two, so what an action sees cannot drift between them.
 *
 * The client a unit sees is the instance's client behind the run's
 * interceptor chain, in this order: a dry run's refusal of writing methods,
 * the run's ownership check before each write, the instance-wide pauses,
 * then what the caller adds (the BullMQ item's write intent).
 */
import { describeHolder, type ClaimResult } from './ownership.js';
import type { Pool } from '../../util/pool.js';
import { resolve } from 'node:path';
import type { InstanceApi } from '../../api/types.js';
import { interceptApi, type ApiInterceptor } from '../../client/interceptors.js';
import { prefixedState } from '../../store/prefixed-state.js';
import type { DurableState, EngineStore, RunRecord, WaitRecord } from '../../store/types.js';
import type { Clock } from '../../util/clock.js';
import type { ActionContext, ActionDefinition, ActionRunPlan, InstanceRef, Logger, ProgressCounts, WaitOptions } from '../action.js';
import type { EngineBus } from '../events.js';
import type { ExprScope } from '../expr/interpreter.js';
import { evaluateTemplate, type TemplateTable } from '../expr/template.js';
import type { Flow } from '../flow/types.js';
import { sharedState } from '../shared.js';
import { withFields } from '../../util/with-fields.js';
import type { WaitTarget } from './durable-waits.js';
import { dryRunInterceptor } from './interceptors/dry-run.js';
import { ownershipInterceptor } from './interceptors/ownership.js';
import { pauseInterceptor } from './interceptors/pauses.js';
import { unitPauseRules, type PauseRecord, type PauseRule } from './pauses.js';
import { runLogger } from './run-log.js';
import type { TraceSpan } from './tracing.js';

/** The durable waits a run's units enter (DurableWaits, or the test kit's view of them). */
export interface UnitWaits {
  wait(target: WaitTarget, options: WaitOptions, signal: AbortSignal): Promise<void>;
  /** The persisted wait under `key`, if any (a rate-limit pause to honour before calling again after a restart). */
  pending(target: WaitTarget, key: string): WaitRecord | undefined;
}

export interface RunScopeOptions {
  runId: string;
  flow: Pick<Flow, 'name' | 'instance' | 'baseDir'>;
  inputs: Readonly<Record<string, unknown>>;
  dryRun: boolean;
  /** The campaign plan the run writes or applies, with the hash of its flow file. @default none */
  plan?: ActionRunPlan;
  store: EngineStore;
  bus: EngineBus;
  clock: Clock;
  random: () => number;
  /** The process's logger: the run's lines go to it with `{ runId, flow }`. */
  logger: Logger;
  /** Lines of info and above are also kept with the run (journal `_log`). @default true */
  keepLog?: boolean;
  /** What a kept line goes through (secrets hidden). @default none */
  scrub?: (text: string) => string;
  /** Aborted when the run stops (shutdown, cancel, a lost claim). */
  signal: AbortSignal;
  /** The flow's instance's client, under the run's chain: asked once, when a unit first needs a client. */
  client(): InstanceApi;
  /** The instance's identity (ActionContext.instance). */
  identity: string;
  /**
   * Another instance of config.yaml by its name (ActionContext.instanceClient:
   * a broadcast's pool), its client and identity; absent: the run reaches only
   * its flow's instance. @default undefined
   */
  instances?: { clientFor(name: string): InstanceApi; identityFor(name: string): string };
  /** config.yaml's named pools (ActionContext.pools). @default none */
  pools?: Readonly<Record<string, Pool>>;
  waits: UnitWaits;
  /** Project root, for ctx.resolvePath when the flow has no baseDir. */
  baseDir: string;
  /** Where ctx.resolvePath leads (EngineOptions.resolvePath). @default path.resolve(base, p) */
  resolvePath?(base: string, p: string): string;
  defaultRateLimitWaitMs: number;
  /**
   * The run's owner in this process: every writing call first checks it
   * still owns the run (and every claim it took: ActionContext.claim).
   */
  owner?: { check(): Promise<void>; claim?(name: string): Promise<ClaimResult>; release?(name?: string): Promise<void> };
  /** The pause rules every unit honours (declaredPauseRules of the registry). @default [] */
  pauseRules?: readonly PauseRule[];
  /**
   * The units run on a BullMQ worker: a pause they meet goes back to the
   * caller (the job goes back to the queue, the queue paused) instead of
   * being waited out here, and a pause they raise says so. @default false
   */
  worker?: boolean;
  /** A call of the run raised (or extended) an instance-wide pause. */
  onPauseRaised?(record: PauseRecord): void;
  /** A single step's live counts (ctx.progress): the step record follows them while it runs. */
  onProgress?(step: string, counts: ProgressCounts): void;
  /** The span a unit's work goes under (a single step's, a forEach item's), when the run is traced. @default none */
  traceUnit?(step: string, index?: number): TraceSpan | undefined;
}

/** What every unit of a run shares. */
export interface RunScope {
  readonly runId: string;
  readonly flow: Pick<Flow, 'name' | 'instance' | 'baseDir'>;
  readonly inputs: Readonly<Record<string, unknown>>;
  readonly dryRun: boolean;
  readonly plan?: ActionRunPlan;
  readonly store: EngineStore;
  readonly bus: EngineBus;
  readonly clock: Clock;
  readonly random: () => number;
  /** The run's logger (run-log.ts): kept with the run. */
  readonly logger: Logger;
  readonly signal: AbortSignal;
  readonly instance: InstanceRef;
  /** The run's durable state (ctx.state is a unit's part of it). */
  readonly runState: DurableState;
  readonly waits: UnitWaits;
  readonly defaultRateLimitWaitMs: number;
  /** See RunScopeOptions.worker. */
  readonly worker: boolean;
  resolvePath(p: string): string;
  onProgress?(step: string, counts: ProgressCounts): void;
  /** See RunScopeOptions.traceUnit. */
  traceUnit?(step: string, index?: number): TraceSpan | undefined;
  /**
   * The client a unit sees: the run's chain over the instance's client, with
   * the pause rules of the unit's action (its own shortest pause from its
   * input) and `interceptors` of its own last.
   */
  unitClient(unit?: UnitClientOptions): InstanceApi;
  /** Another instance's client under the run's chain (dry run, ownership, pauses), and its ref; undefined when the run has no others. */
  instanceClient?(name: string): { client: InstanceApi; instance: InstanceRef };
  /** See RunScopeOptions.pools. */
  readonly pools?: Readonly<Record<string, Pool>>;
  /** ActionContext.claim and release, through the run's owner. */
  claim?(name: string): Promise<{ ok: true } | { ok: false; holder: string }>;
  release?(name: string): Promise<void>;
}

export interface UnitClientOptions {
  action?: Pick<ActionDefinition, 'pauses'>;
  /** The action's parsed input (PauseRule.minMsFrom reads it). */
  input?: unknown;
  interceptors?: readonly ApiInterceptor[];
}

/** An action's claims (ActionContext.claim) as leases of the run's owner, named apart from the engine's own. */
function claims(owner: Required<NonNullable<RunScopeOptions['owner']>>): Pick<RunScope, 'claim' | 'release'> {
  return {
    async claim(name) {
      const r = await owner.claim(`claim:${name}`);
      return r.ok ? r : { ok: false, holder: `${r.holder.label ?? 'another run'} (${describeHolder(r.holder)})` };
    },
    release: (name) => owner.release(`claim:${name}`),
  };
}

/** The one place a run's scope is made. */
export function createRunScope(o: RunScopeOptions): RunScope {
  const flowInstance: InstanceRef = { name: o.flow.instance, identity: o.identity };
  const instance = flowInstance;
  const logger =
    o.keepLog === false
      ? o.logger
      : runLogger({ store: o.store, clock: o.clock, logger: o.logger, runId: o.runId, flow: o.flow.name, scrub: o.scrub });
  let base: InstanceApi | undefined;
  const declared = o.pauseRules ?? [];
  const worker = o.worker ?? false;
  const chain = (
    rules: readonly PauseRule[],
    extra: readonly ApiInterceptor[],
    target: () => InstanceApi = () => (base ??= o.client()),
    instance = flowInstance,
  ): InstanceApi =>
    interceptApi(target, [
      ...(o.dryRun ? [dryRunInterceptor] : []),
      ...(o.owner ? [ownershipInterceptor(o.owner)] : []),
      ...(rules.length > 0
        ? [pauseInterceptor({ store: o.store, clock: o.clock, instance, rules, byWorker: worker, onRaised: o.onPauseRaised })]
        : []),
      ...extra,
    ]);
  let shared: InstanceApi | undefined;
  const resolvePath = o.resolvePath ?? resolve;
  // One client per other instance a unit asks for (a pool's members): made on first use.
  const others = new Map<string, { client: InstanceApi; instance: InstanceRef }>();
  const instanceClient = (name: string) => {
    if (name === o.flow.instance) return { client: (shared ??= chain(declared, [])), instance };
    let got = others.get(name);
    if (!got) {
      const ref: InstanceRef = { name, identity: o.instances!.identityFor(name) };
      let target: InstanceApi | undefined;
      got = { client: chain(declared, [], () => (target ??= o.instances!.clientFor(name)), ref), instance: ref };
      others.set(name, got);
    }
    return got;
  };
  return {
    runId: o.runId,
    flow: o.flow,
    inputs: o.inputs,
    dryRun: o.dryRun,
    ...(o.plan ? { plan: o.plan } : {}),
    store: o.store,
    bus: o.bus,
    clock: o.clock,
    random: o.random,
    logger,
    signal: o.signal,
    instance,
    runState: o.store.kv(`run:${o.runId}`),
    waits: o.waits,
    defaultRateLimitWaitMs: o.defaultRateLimitWaitMs,
    worker,
    resolvePath: (p) => resolvePath(o.flow.baseDir || o.baseDir, p),
    ...(o.onProgress ? { onProgress: o.onProgress } : {}),
    ...(o.instances ? { instanceClient } : {}),
    ...(o.pools ? { pools: o.pools } : {}),
    ...(o.owner?.claim ? claims(o.owner as Required<NonNullable<RunScopeOptions['owner']>>) : {}),
    ...(o.traceUnit ? { traceUnit: o.traceUnit } : {}),
    unitClient(unit = {}) {
      const rules = unitPauseRules(declared, unit.action, unit.input);
      const extra = unit.interceptors ?? [];
      // Most units share one client: only an action that declares a pause, or an item with interceptors of its own, needs its own.
      if (rules === declared && extra.length === 0) return (shared ??= chain(declared, []));
      return chain(rules, extra);
    },
  };
}

/**
 * The scope of one item worked apart from its run's process (a BullMQ job):
 * its own signal, and interceptors of its own after the run's.
 */
export function itemScope(
  scope: RunScope,
  o: { signal: AbortSignal; interceptors?: readonly ApiInterceptor[]; traceUnit?: RunScope['traceUnit'] },
): RunScope {
  const extra = o.interceptors ?? [];
  return {
    ...scope,
    signal: o.signal,
    ...(o.traceUnit ? { traceUnit: o.traceUnit } : {}),
    unitClient: (unit = {}) => scope.unitClient({ ...unit, interceptors: [...(unit.interceptors ?? []), ...extra] }),
  };
}

/**
 * A run's expression scope (what its templates, `if:` and ctx.render read),
 * made in one place for the process that drives the run and for a worker
 * working its items: inputs, the flow's env, the finished steps, the run, the
 * local service's URL, the notification that started it.
 */
export function runExprScope(o: {
  flow: Pick<Flow, 'name' | 'env'> & Partial<Pick<Flow, 'secrets'>>;
  run: Pick<RunRecord, 'id' | 'startedAt' | 'event' | 'slot'>;
  inputs: Record<string, unknown>;
  clock: Clock;
  localUrl?: string;
  /** What expressions see of the finished steps (`steps.<id>`). @default {} */
  steps?: ExprScope['steps'];
  /** The value of a secret (EngineOptions.secret): the flow's secrets (Flow.secrets) are resolved with it. */
  secret?(name: string): string | undefined;
}): ExprScope {
  const names = o.flow.secrets ?? [];
  return {
    inputs: o.inputs,
    env: { ...o.flow.env },
    steps: o.steps ?? {},
    run: { id: o.run.id, flow: o.flow.name, startedAt: o.run.startedAt, ...(o.run.slot === undefined ? {} : { slot: o.run.slot }) },
    ...(o.localUrl === undefined ? {} : { local: { url: o.localUrl } }),
    ...(o.run.event === undefined ? {} : { event: o.run.event }),
    ...(names.length === 0 ? {} : { secrets: Object.fromEntries(names.map((n) => [n, o.secret?.(n)])) }),
    clock: o.clock,
  };
}

/**
 * A unit's counts (ctx.progress), told to the run: a single step's record
 * follows them (RunScope.onProgress) and `step:progress` carries them to the
 * progress bars. Also where the counts of a step worked on a BullMQ worker
 * arrive in the process that drives the run.
 */
export function announceProgress(scope: RunScope, step: string, counts: ProgressCounts, item?: number): void {
  if (item === undefined) scope.onProgress?.(step, counts);
  scope.bus.emit('step:progress', { runId: scope.runId, flow: scope.flow.name, step, ...counts });
}

/** One unit: a single step, or one forEach item (the same for each of its attempts). */
export interface UnitOptions {
  step: string;
  /** forEach item index; undefined for a single step. */
  item?: number;
  /** The unit's expression scope (a forEach item's has `item` and `index`): what ctx.render evaluates against. */
  expr: ExprScope;
  /** The step's templates as loaded, with their flow positions: an error in one ctx.render evaluates names its place. */
  templates?: TemplateTable;
  /** The unit's client. @default scope.unitClient() */
  client?: () => InstanceApi;
  /** Every ctx.progress of the unit. */
  onProgress?(counts: ProgressCounts): void;
}

/** One attempt of a unit. */
export interface AttemptOptions {
  /** 1-based. */
  attempt: number;
  /** The attempt's signal (its timeout). */
  signal: AbortSignal;
  /** Told around each durable wait: an attempt's timeout does not run while the action waits. */
  waiting?: { pause(): void; resume(): void };
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The one place an ActionContext is made. Made for every attempt of every
 * item: what an action may not use (its state, the wait target) is made when
 * it first asks.
 */
export function createUnitContext(scope: RunScope, u: UnitOptions, a?: AttemptOptions): ActionContext {
  const stream = `${u.step}/${u.item ?? '-'}`;
  const signal = a?.signal ?? scope.signal;
  const client = u.client ?? (() => scope.unitClient());
  const { expr } = u;
  let state: DurableState | undefined;
  return {
    get client() {
      return client();
    },
    instanceName: scope.instance.name,
    instance: scope.instance,
    logger: scope.logger,
    run: {
      id: scope.runId,
      flow: scope.flow.name,
      step: u.step,
      attempt: a?.attempt ?? 1,
      ...(u.item === undefined ? {} : { item: { index: u.item, value: expr.item } }),
      dryRun: scope.dryRun,
      ...(scope.plan ? { plan: scope.plan } : {}),
      inputs: scope.inputs,
      ...(isRecord(expr.event) ? { event: expr.event } : {}),
      ...(u.templates ? { templates: u.templates } : {}),
    },
    signal,
    clock: scope.clock,
    get state() {
      return (state ??= prefixedState(scope.runState, `${stream}/`));
    },
    shared: (ns) => sharedState(scope.store, ns),
    journal: {
      append: (...entries) => scope.store.appendJournal(scope.runId, stream, entries),
      replay: <T>() => scope.store.readJournal<T>(scope.runId, stream),
    },
    wait: async (options) => {
      const target: WaitTarget = u.item === undefined ? { step: u.step } : { step: u.step, item: u.item };
      a?.waiting?.pause();
      try {
        await scope.waits.wait(target, options, signal);
      } finally {
        a?.waiting?.resume();
      }
    },
    progress: (counts) => {
      u.onProgress?.(counts);
      announceProgress(scope, u.step, counts, u.item);
    },
    emit: (name, payload = {}) =>
      scope.bus.emit('action:event', { runId: scope.runId, flow: scope.flow.name, step: u.step, name, payload }),
    resolvePath: (p) => scope.resolvePath(p),
    ...(scope.instanceClient ? { instanceClient: scope.instanceClient } : {}),
    ...(scope.pools ? { pools: scope.pools } : {}),
    ...(scope.claim && scope.release ? { claim: scope.claim, release: scope.release } : {}),
    render: (value, extra) => evaluateTemplate(value, extra ? withFields(expr, extra) : expr, u.templates),
  };
}
