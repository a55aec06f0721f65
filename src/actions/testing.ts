/**
 * A test kit for actions, for msgflow's own job tests and for plugin authors:
 * an ActionContext built by the engine's own factory (engine/run/unit-context.ts)
 * from its real parts (an EngineStore, its journal, its shared namespaces,
 * durable waits that persist their wake time in the store, the client chain
 * with its dry-run refusal and instance-wide pauses), so that an action is
 * tested as the engine runs it, a "restart" is a second context over the
 * same store, and a long wait passes instantly on a ManualClock. Prefer
 * {@link runAction}: it validates `with:` and binds the action's own pause
 * rules, as the engine does.
 *
 * @example
 * import { createActionTestContext, ManualClock } from 'msgflow';
 * const store = createMemoryStore();
 * const t = createActionTestContext({ client, clock: new ManualClock(0), store, baseDir: dir });
 * const out = await myAction.run(t.ctx, myAction.input.parse({ file: 'data/leads.csv' }));
 * expect(t.progress.at(-1)).toMatchObject({ done: 3 });
 */
import type { ActionContext, ActionDefinition, ActionRunPlan, InstanceRef, Logger, ProgressCounts } from '../engine/action.js';
import { createBus } from '../engine/events.js';
import { DurableWaits } from '../engine/run/durable-waits.js';
import { declaredPauseRules, type PauseRule } from '../engine/run/pauses.js';
import { createRunScope, createUnitContext, runExprScope, type UnitWaits } from '../engine/run/unit-context.js';
import type { InstanceApi } from '../api/types.js';
import { createMemoryStore } from '../store/memory-store.js';
import type { EngineStore, WaitRecord } from '../store/types.js';
import { systemClock, type Clock } from '../util/clock.js';
import { BUILTIN_JOB_ACTIONS } from './builtins.js';
import type { Pool } from '../util/pool.js';

export interface ActionTestOptions {
  client: InstanceApi;
  /** @default systemClock (pass a ManualClock for long waits) */
  clock?: Clock;
  /** Pass the same store to a second context to simulate a restart. @default a new memory store */
  store?: EngineStore;
  /** Project directory for ctx.resolvePath. @default process.cwd() */
  baseDir?: string;
  /** @default 'run-1' */
  runId?: string;
  /** @default 'test-flow' */
  flow?: string;
  /** @default 'job' */
  step?: string;
  /** @default false */
  dryRun?: boolean;
  /** The campaign plan the run writes (with dryRun) or applies (ActionRunInfo.plan). @default none */
  plan?: ActionRunPlan;
  /** @default { name: 'default', identity: 'inst-test' } */
  instance?: InstanceRef;
  /** Other instances by config name (ctx.instanceClient, a broadcast's pool); each one's identity is `inst-<name>`. @default none */
  instances?: Record<string, InstanceApi>;
  /** config.yaml's named pools (ctx.pools: a broadcast's `pool: <name>`). @default none */
  pools?: Readonly<Record<string, Pool>>;
  /** The flow's inputs. @default {} */
  inputs?: Record<string, unknown>;
  /** forEach item index, when the action runs as one item. */
  item?: number;
  /** How often (real time) a wait with `lifted` asks it, as the engine's waitRecheckMs. @default 1000 */
  waitRecheckMs?: number;
  /**
   * Instance-wide pause rules the client honours, as the engine's registry
   * declares them (runAction adds the action's own, with its shortest pause
   * from its input). @default the built-in actions' rules
   */
  pauses?: readonly PauseRule[];
}

export interface ActionTestContext {
  ctx: ActionContext;
  store: EngineStore;
  /** Every ctx.progress update, in order. */
  progress: ProgressCounts[];
  /** Every ctx.emit, in order. */
  events: { name: string; payload: Record<string, unknown> }[];
  /** Log lines as `level message`. */
  logs: string[];
  /** Every durable wait the action entered (with its persisted wake time). */
  waits: WaitRecord[];
  /** Resolves when the action first enters a durable wait. */
  waiting: Promise<WaitRecord>;
  /** Aborts ctx.signal (a shutdown or a cancel). */
  abort(reason?: unknown): void;
}

/** How runAction tells a test context which action runs with which input (its own pause rules, as the engine binds them). */
const BIND = Symbol('bind action');
type Bindable = ActionTestContext & { [BIND]?: (action: ActionDefinition<any, any>, input: unknown) => void };

/**
 * Builds a context through the engine's own factory (engine/run/unit-context.ts)
 * on its store, journal, shared state, durable waits and client chain.
 */
/** A test context's other instances: by name, identities `inst-<name>`; an unknown name throws as the runtime does. */
function testInstances(clients: Record<string, InstanceApi>) {
  const known = (name: string) => {
    if (!Object.hasOwn(clients, name)) throw new Error(`no instance '${name}' (the test context has ${Object.keys(clients).join(', ')})`);
    return name;
  };
  return { clientFor: (name: string) => clients[known(name)]!, identityFor: (name: string) => `inst-${known(name)}` };
}

export function createActionTestContext(o: ActionTestOptions): ActionTestContext {
  const store = o.store ?? createMemoryStore();
  const clock = o.clock ?? systemClock;
  const runId = o.runId ?? 'run-1';
  const step = o.step ?? 'job';
  const flow = { name: o.flow ?? 'test-flow', instance: (o.instance ?? DEFAULT_INSTANCE).name, baseDir: o.baseDir ?? process.cwd() };
  const dryRun = o.dryRun ?? false;
  const controller = new AbortController();
  const t: Omit<ActionTestContext, 'ctx' | 'waiting'> = {
    store,
    progress: [],
    events: [],
    logs: [],
    waits: [],
    abort: (r) => controller.abort(r),
  };
  let signalWaiting!: (w: WaitRecord) => void;
  const waiting = new Promise<WaitRecord>((r) => (signalWaiting = r));
  const bus = createBus();
  bus.on('action:event', (e) => void t.events.push({ name: e.name, payload: e.payload }));
  const scope = createRunScope({
    runId,
    flow,
    inputs: o.inputs ?? {},
    dryRun,
    ...(o.plan ? { plan: o.plan } : {}),
    store,
    bus,
    clock,
    random: Math.random,
    // The lines are the test's to read (t.logs), as the action wrote them.
    logger: recordingLogger(t.logs),
    keepLog: false,
    signal: controller.signal,
    client: () => o.client,
    identity: (o.instance ?? DEFAULT_INSTANCE).identity,
    ...(o.instances ? { instances: testInstances(o.instances) } : {}),
    ...(o.pools ? { pools: o.pools } : {}),
    waits: testWaits(store, runId, flow.name, dryRun, clock, o.waitRecheckMs, (w) => (t.waits.push(w), signalWaiting(w))),
    baseDir: flow.baseDir,
    defaultRateLimitWaitMs: 1000,
    pauseRules: o.pauses ?? declaredPauseRules(BUILTIN_JOB_ACTIONS),
  });
  // The action runAction runs, with its input: its own pause rules, as the engine binds them.
  let unit: { action?: ActionDefinition<any, any>; input?: unknown } = {};
  let client: InstanceApi | undefined;
  const ctx: ActionContext = createUnitContext(scope, {
    step,
    ...(o.item === undefined ? {} : { item: o.item }),
    expr: runExprScope({ flow: { name: flow.name, env: {} }, run: { id: runId, startedAt: clock.now() }, inputs: o.inputs ?? {}, clock }),
    client: () => (client ??= scope.unitClient(unit)),
    onProgress: (u) => void t.progress.push({ ...u }),
  });
  const out: Bindable = { ...t, ctx, waiting };
  const bind = (action: ActionDefinition<any, any>, input: unknown) => {
    unit = { action, input };
    client = undefined;
  };
  Object.defineProperty(out, BIND, { value: bind });
  return out;
}

const DEFAULT_INSTANCE: InstanceRef = { name: 'default', identity: 'inst-test' };

/** Log lines as `level message`, with the line's fields when it has some. */
function recordingLogger(lines: string[]): Logger {
  const log = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    void lines.push(`${level} ${message}${fields ? ' ' + JSON.stringify(fields) : ''}`);
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
}

/**
 * The engine's durable waits, loaded on the first wait with those an earlier
 * context over the same store persisted (a restart); the run's record exists
 * first, as the engine's would.
 */
function testWaits(
  store: EngineStore,
  runId: string,
  flow: string,
  dryRun: boolean,
  clock: Clock,
  recheckMs: number | undefined,
  onWaiting: (w: WaitRecord) => void,
): UnitWaits {
  const waits = new DurableWaits({ store, runId, clock, onWaiting, onResumed: () => undefined, recheckMs });
  let loaded: Promise<void> | undefined;
  return {
    async wait(target, options, signal) {
      loaded ??= ensureRun(store, runId, flow, dryRun, clock).then(async () => waits.load(await store.listWaits(runId)));
      await loaded;
      return waits.wait(target, options, signal);
    },
    pending: (target, key) => waits.pending(target, key),
  };
}

async function ensureRun(store: EngineStore, id: string, flow: string, dryRun: boolean, clock: Clock): Promise<void> {
  if (await store.getRun(id)) return;
  const now = clock.now();
  await store.createRun({
    id,
    flow,
    status: 'running',
    trigger: 'manual',
    dryRun,
    startedAt: now,
    updatedAt: now,
    itemsDone: 0,
    itemsFailed: 0,
    resumes: 0,
  });
}

/**
 * Parses `with` through the action's input schema and runs it on a test
 * context: the same validation `msgflow validate` and the engine apply.
 */
export async function runAction<O>(def: ActionDefinition<any, O>, t: ActionTestContext, withBlock: Record<string, unknown>): Promise<O> {
  const input = def.input.parse(withBlock);
  (t as Bindable)[BIND]?.(def, input);
  return def.run(t.ctx, input);
}
