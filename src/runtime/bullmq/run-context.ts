/**
 * What a worker rebuilds of a run to work one of its units (a forEach item's
 * job, a single step's job): the flow and step by name, the action, the
 * run's expression scope (inputs, the earlier steps' results) and its
 * RunScope, made by the engine's own unit-context.ts as in the process that
 * drives the run. One place for the item host and the step host.
 */
import type { InstanceApi } from '../../api/types.js';
import type { Logger } from '../../engine/action.js';
import type { EngineBus } from '../../engine/events.js';
import type { ExprScope } from '../../engine/expr/interpreter.js';
import { allSteps, type Flow, type FlowStep } from '../../engine/flow/types.js';
import type { ActionRegistry, RegisteredAction } from '../../engine/registry/registry.js';
import { DurableWaits } from '../../engine/run/durable-waits.js';
import { declaredPauseRules } from '../../engine/run/pauses.js';
import { RUN_CONTROL_NS, restoredView } from '../../engine/run/run-execution.js';
import { createRunScope, runExprScope, type RunScope, type RunScopeOptions } from '../../engine/run/unit-context.js';
import type { EngineTracer } from '../../engine/run/tracing.js';
import type { EngineRedactor } from '../../engine/run/types.js';
import { RESUMABLE_STATUSES, type EngineStore, type RunRecord, type WaitRecord } from '../../store/types.js';
import type { Clock } from '../../util/clock.js';

/** What a worker process works with (the item host's and the step host's dependencies). */
export interface WorkerDeps {
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
  /** @see EngineOptions.secret */
  secret?(name: string): string | undefined;
  baseDir: string;
  defaultRateLimitWaitMs: number;
  /** How long a message the service sent may take to appear in its chat history (config.yaml executor.journalLagMs). @default 120000 */
  journalLagMs: number;
  /** executor.lockDurationMs: a step's claim (its lease) lapses this long after its worker stopped renewing it. @default 30000 */
  lockDurationMs?: number;
  /** Jitter source of the steps' retry backoff (tests make it deterministic). @default Math.random */
  random?: () => number;
  /** This worker's tracer (config.yaml telemetry:): a job carrying a trace context works its unit in a span of the run's trace. */
  tracer?: EngineTracer;
  /** What the lines a unit keeps with its run go through (the tokens and secrets hidden). @default none */
  redactor?: EngineRedactor;
}

/** A run's step as a worker sees it. */
export interface RunUnitContext {
  run: RunRecord;
  flow: Flow;
  step: FlowStep;
  def: RegisteredAction;
  inputs: Record<string, unknown>;
  /** The expression scope of the step (a forEach item adds its item and index). */
  expr: ExprScope;
}

/** The flows a worker knows, reloaded once when a run names one it does not. */
export class WorkerFlows {
  private byName: ReadonlyMap<string, Flow>;

  constructor(private readonly load: () => ReadonlyMap<string, Flow>) {
    this.byName = load();
  }

  get(name: string): Flow | undefined {
    if (!this.byName.has(name)) this.byName = this.load();
    return this.byName.get(name);
  }
}

/** The step's context, or why it cannot be worked here (this worker's flows differ from the run's). */
export async function loadUnitContext(d: WorkerDeps, flows: WorkerFlows, runId: string, stepId: string): Promise<RunUnitContext | string> {
  const { store } = d;
  const run = await store.getRun(runId);
  if (!run) return `run ${runId} no longer exists`;
  const flow = flows.get(run.flow);
  if (!flow) return `flow '${run.flow}' is not loaded by this worker (is its flowsDir the same as the run's?)`;
  const step = allSteps(flow).find((s) => s.id === stepId);
  const def = step && d.registry.get(step.uses);
  if (!step || !def) return `step '${stepId}' of flow '${flow.name}' is not known here`;
  const inputs = (await store.loadInputs(runId)) ?? {};
  const steps: ExprScope['steps'] = {};
  for (const rec of await store.getSteps(runId)) {
    if (rec.step !== stepId && rec.status !== 'running') steps[rec.step] = await restoredView(store, runId, rec);
  }
  const expr = runExprScope({ flow, run, inputs, clock: d.clock, localUrl: d.localUrl, steps, secret: d.secret });
  return { run, flow, step, def, inputs, expr };
}

/** The run's durable waits on this worker, loaded from the store; `on` hears a unit entering and leaving one. */
export async function workerWaits(
  d: WorkerDeps,
  runId: string,
  on: { waiting(w: WaitRecord): void; resumed(w: WaitRecord): void } = { waiting: () => {}, resumed: () => {} },
): Promise<DurableWaits> {
  const waits = new DurableWaits({ store: d.store, runId, clock: d.clock, onWaiting: on.waiting, onResumed: on.resumed });
  waits.load(await d.store.listWaits(runId));
  return waits;
}

/** What the units of a run share on this worker (unit-context.ts), with `over` for what a step's job adds (its owner, its progress). */
export function workerRunScope(
  d: WorkerDeps,
  u: Pick<RunUnitContext, 'run' | 'flow' | 'inputs'>,
  waits: DurableWaits,
  over: Partial<RunScopeOptions> = {},
): RunScope {
  const { flow } = u;
  const scope: RunScope = createRunScope({
    runId: u.run.id,
    flow,
    inputs: u.inputs,
    dryRun: u.run.dryRun,
    ...(u.run.plan ? { plan: { ...u.run.plan, flowHash: u.run.flowHash ?? '' } } : {}),
    store: d.store,
    bus: d.bus,
    clock: d.clock,
    random: d.random ?? Math.random,
    logger: d.logger,
    ...(d.redactor ? { scrub: (text: string) => d.redactor!.scrub(text) } : {}),
    // Replaced by each unit's (itemScope), or the step job's own.
    signal: new AbortController().signal,
    client: () => d.clientFor(flow.instance),
    identity: d.identityFor(flow.instance),
    instances: { clientFor: d.clientFor, identityFor: d.identityFor },
    waits,
    baseDir: d.baseDir,
    defaultRateLimitWaitMs: d.defaultRateLimitWaitMs,
    pauseRules: declaredPauseRules(d.registry.list()),
    // A pause an item meets sends its job back to the queue, and pauses the queue for every worker.
    worker: true,
    onPauseRaised: (p) => scope.logger.warn(p.reason, { instance: flow.instance }),
    ...over,
  });
  return scope;
}

/** Why the units of a run are no longer worked (it finished, it is being cancelled), if so. */
export async function runStopReason(store: EngineStore, runId: string): Promise<string | undefined> {
  const run = await store.getRun(runId);
  if (!run) return `run ${runId} no longer exists`;
  if (!RESUMABLE_STATUSES.includes(run.status)) return `run ${runId} is ${run.status}`;
  const control = await store.kv(RUN_CONTROL_NS).get<{ cancel?: boolean }>(runId);
  return control?.cancel ? `run ${runId} is being cancelled` : undefined;
}
