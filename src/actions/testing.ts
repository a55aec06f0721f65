/**
 * A test kit for actions, for msgflow's own job tests and for plugin authors:
 * an ActionContext built from the engine's real parts (an EngineStore, its
 * journal, its shared namespaces, durable waits that persist their wake time
 * in the store), so that an action is tested as the engine runs it, a
 * "restart" is a second context over the same store, and a long wait passes
 * instantly on a ManualClock.
 *
 * @example
 * import { createActionTestContext, ManualClock } from 'msgflow';
 * const store = createMemoryStore();
 * const t = createActionTestContext({ client, clock: new ManualClock(0), store, baseDir: dir });
 * const out = await myAction.run(t.ctx, myAction.input.parse({ file: 'data/leads.csv' }));
 * expect(t.progress.at(-1)).toMatchObject({ done: 3 });
 */
import { resolve } from 'node:path';
import type { ActionContext, ActionDefinition, InstanceRef, Logger, ProgressCounts } from '../engine/action.js';
import { DurableWaits } from '../engine/run/durable-waits.js';
import type { InstanceApi } from '../api/types.js';
import { createMemoryStore } from '../store/memory-store.js';
import { prefixedState } from '../store/prefixed-state.js';
import type { EngineStore, WaitRecord } from '../store/types.js';
import { systemClock, type Clock } from '../util/clock.js';

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
  /** @default { name: 'default', identity: 'inst-test' } */
  instance?: InstanceRef;
  /** The flow's inputs. @default {} */
  inputs?: Record<string, unknown>;
  /** forEach item index, when the action runs as one item. */
  item?: number;
  /** How often (real time) a wait with `lifted` asks it, as the engine's waitRecheckMs. @default 1000 */
  waitRecheckMs?: number;
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

/** Builds a context on the engine's store, journal, shared state and durable waits. */
export function createActionTestContext(o: ActionTestOptions): ActionTestContext {
  const store = o.store ?? createMemoryStore();
  const clock = o.clock ?? systemClock;
  const runId = o.runId ?? 'run-1';
  const step = o.step ?? 'job';
  const itemKey = o.item === undefined ? '-' : String(o.item);
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
  const waits = new DurableWaits({
    store,
    runId,
    clock,
    onWaiting: (w) => {
      t.waits.push(w);
      signalWaiting(w);
    },
    onResumed: () => undefined,
    recheckMs: o.waitRecheckMs,
  });
  let loaded: Promise<void> | undefined;
  const log = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    void t.logs.push(`${level} ${message}${fields ? ' ' + JSON.stringify(fields) : ''}`);
  const logger: Logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
  const instance = o.instance ?? { name: 'default', identity: 'inst-test' };
  const stream = `${step}/${itemKey}`;
  const ctx: ActionContext = {
    client: o.client,
    instanceName: instance.name,
    instance,
    logger,
    run: { id: runId, flow: o.flow ?? 'test-flow', step, attempt: 1, dryRun: o.dryRun ?? false, inputs: o.inputs ?? {} },
    signal: controller.signal,
    clock,
    state: prefixedState(store.kv(`run:${runId}`), `${stream}/`),
    shared: (ns) => store.kv(`shared:${ns}`),
    journal: {
      append: (...entries) => store.appendJournal(runId, stream, entries),
      replay: <T>() => store.readJournal<T>(runId, stream),
    },
    async wait(options) {
      // Waits persisted by an earlier context over the same store (a restart);
      // the run's record exists first, as the engine's would.
      loaded ??= ensureRun(store, runId, ctx.run.flow, ctx.run.dryRun, clock).then(async () => waits.load(await store.listWaits(runId)));
      await loaded;
      await waits.wait({ step, ...(o.item === undefined ? {} : { item: o.item }) }, options, controller.signal);
    },
    progress: (u) => void t.progress.push({ ...u }),
    emit: (name, payload = {}) => void t.events.push({ name, payload }),
    resolvePath: (p) => resolve(o.baseDir ?? process.cwd(), p),
  };
  return { ...t, ctx, waiting };
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
  return def.run(t.ctx, def.input.parse(withBlock));
}
