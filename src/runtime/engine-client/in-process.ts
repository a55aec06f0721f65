/**
 * The EngineClient over a runtime in this process: runs start in its engine,
 * their events are its bus's, and what it answers is read from its engine
 * and store, shaped as the dashboard API shapes it.
 */
import { FlowError, MsgflowError } from '../../api/errors.js';
import { identityOf } from '../../config/identity.js';
import { displayPath } from '../../engine/flow/load.js';
import type { Flow } from '../../engine/flow/types.js';
import { LOGGED_EVENTS } from '../../engine/progress/log-subscriber.js';
import type { RunHandle } from '../../engine/run/types.js';
import { planBackfill, runBackfill } from '../../engine/schedule/backfill.js';
import { RESUMABLE_STATUSES, type RunRecord } from '../../store/types.js';
import { toRunSummary, toStepDetail } from '../../ui/views.js';
import { activePauses, liftPausesOf, toInstancePause } from '../pauses.js';
import { flowSource } from '../project-engine.js';
import type { Runtime } from '../runtime.js';
import { EndWatch, endedRun, isLive, RunEvents } from './follow.js';
import type * as C from './types.js';

export interface InProcessEngineClientOptions {
  /** The flows runs start from and retries find. @default the runtime's flows, read from the flows directory at each call */
  flows?: () => readonly Flow[];
  /** How often a followed run that this engine does not execute is looked at (real time). @default 1000 */
  pollMs?: number;
}

/** A run this process's engine executes: besides its view, the engine's own record as it ended. */
export interface LocalRun extends C.FollowedRun {
  /**
   * The run's record as the engine ended it (never rejects): all of it, and
   * known even when the store stopped answering (then `interrupted` with
   * STORE_UNAVAILABLE), where `done` reads nothing more.
   */
  readonly record: Promise<RunRecord>;
}

/** The in-process client, plus what only this process can do: run a Flow object as loaded, resume a run here. */
export interface InProcessEngineClient extends C.EngineClient {
  start(flow: string, opts?: C.StartRunOptions): Promise<LocalRun>;
  retry(runId: string, opts?: C.FollowOptions): Promise<LocalRun>;
  /** Starts `flow` as given (e.g. a flow file outside the flows directory) and follows it. */
  startFlow(flow: Flow, opts?: C.StartRunOptions): Promise<LocalRun>;
  /** backfill() of a flow as given, in this process: also `done`, the runs it started as they ended (the slots' runs of `msgflow backfill`). */
  backfillHere(
    flow: Flow,
    range: { from: number; to: number },
    onStart?: (s: C.BackfillSlot) => void,
  ): Promise<{ slots: C.BackfillSlot[]; done: Promise<RunRecord[]> }>;
  /** Resumes an unfinished run of `flow` in this process (RUN_LIVE when a live process owns it) and follows it. */
  resume(flow: Flow, runId: string, opts?: C.FollowOptions): Promise<LocalRun>;
}

type Parts = Pick<Runtime, 'engine' | 'bus' | 'store' | 'config' | 'registry' | 'clock' | 'flows'>;

/** @example const client = createInProcessEngineClient(runtime); const run = await client.start('check-leads'); await run.done; */
export function createInProcessEngineClient(runtime: Parts, opts: InProcessEngineClientOptions = {}): InProcessEngineClient {
  return new InProcessClient(runtime, opts.flows ?? (() => runtime.flows().flows), opts.pollMs ?? 1000);
}

class InProcessClient implements InProcessEngineClient {
  readonly target = 'in-process';
  /** How each run followed now stops being followed. */
  private readonly open = new Set<() => void>();

  constructor(
    private readonly runtime: Parts,
    private readonly flows: () => readonly Flow[],
    private readonly pollMs: number,
  ) {}

  /** Listens to the bus for one run's events; the returned detach stops it. */
  private listen(events: RunEvents): () => void {
    const { bus } = this.runtime;
    const off = LOGGED_EVENTS.map((name) => {
      const fn = (event: unknown) => events.accept({ name, event } as C.FollowedEvent);
      bus.on(name, fn as never);
      return () => bus.off(name, fn as never);
    });
    const detach = () => {
      events.detach();
      for (const f of off) f();
      this.open.delete(detach);
    };
    this.open.add(detach);
    return detach;
  }

  /** Follows a run this engine starts: its handle says when it ends. */
  private async launched(f: C.FollowOptions, begin: () => Promise<RunHandle>, flow: string): Promise<LocalRun> {
    const events = new RunEvents(f.onEvent);
    const detach = f.onEvent ? this.listen(events) : () => {};
    let handle: RunHandle;
    try {
      handle = await begin();
    } catch (e) {
      detach();
      throw e;
    }
    events.bind(handle.runId);
    const done = handle.done.then(toRunSummary);
    void done.finally(detach);
    return { runId: handle.runId, flow, done, record: handle.done, detach };
  }

  private flowNamed(name: string): Flow {
    const flow = this.flows().find((f) => f.name === name);
    if (flow) return flow;
    const { config, registry } = this.runtime;
    throw new FlowError('FLOW_NOT_FOUND', { name, dir: displayPath(flowSource(config, registry).dir, config.cwd) });
  }

  startFlow(flow: Flow, o: C.StartRunOptions = {}): Promise<LocalRun> {
    const opts = {
      inputs: o.inputs ?? {},
      dryRun: o.dryRun === true,
      trigger: 'manual' as const,
      ...(o.event ? { event: o.event } : {}),
      ...(o.plan ? { plan: o.plan } : {}),
    };
    return this.launched(o, () => this.runtime.engine.start(flow, opts), flow.name);
  }

  async start(name: string, o?: C.StartRunOptions): Promise<LocalRun> {
    return this.startFlow(this.flowNamed(name), o);
  }

  resume(flow: Flow, runId: string, o: C.FollowOptions = {}): Promise<LocalRun> {
    return this.launched(o, () => this.runtime.engine.resume(runId, flow), flow.name);
  }

  async follow(runId: string, o: C.FollowOptions = {}): Promise<C.FollowedRun> {
    const run = await this.getRun(runId);
    if (!run) throw new FlowError('RUN_NOT_FOUND', { runId });
    if (!isLive(run)) return endedRun(run);
    const watch = new EndWatch({ read: () => this.getRun(runId), pollMs: this.pollMs });
    const events = new RunEvents(o.onEvent);
    events.onEnding = () => watch.check();
    const stopListening = this.listen(events);
    events.bind(runId);
    // It may have ended between the first look and the listening.
    watch.check();
    const detach = () => {
      stopListening();
      watch.stop();
    };
    void watch.done.finally(detach).catch(() => {});
    return { runId, flow: run.flow, done: watch.done, detach };
  }

  async getRun(id: string): Promise<C.RunView | undefined> {
    const r = await this.runtime.engine.getRun(id);
    return r && toRunSummary(r);
  }

  async getSteps(id: string): Promise<C.StepView[]> {
    const now = this.runtime.clock.now();
    return (await this.runtime.engine.getSteps(id)).map((s) => toStepDetail(id, s, now));
  }

  async listRuns(q: C.RunListQuery = {}): Promise<C.RunView[]> {
    const runs = await this.runtime.engine.listRuns({ flow: q.flow, limit: q.limit ?? 50, ...(q.status ? { status: q.status } : {}) });
    // A run whose owner is gone is shown interrupted: the status asked for is the one shown.
    return runs.filter((r) => !q.status || q.status.includes(r.status)).map(toRunSummary);
  }

  async cancel(runId: string): Promise<C.CancelOutcome> {
    const { engine } = this.runtime;
    const before = await engine.getRun(runId);
    if (!before) throw new FlowError('RUN_NOT_FOUND', { runId });
    const res = await engine.cancel(runId);
    const ended = !RESUMABLE_STATUSES.includes(before.status);
    const owner = res.holder ? { pid: res.holder.pid, host: res.holder.host } : undefined;
    return { runId, status: res.run.status, pending: res.pending, ended, ...(owner ? { owner } : {}) };
  }

  async retry(runId: string, o: C.FollowOptions = {}): Promise<LocalRun> {
    const old = await this.runtime.engine.getRun(runId);
    if (!old) throw new FlowError('RUN_NOT_FOUND', { runId });
    const flow = this.flowNamed(old.flow);
    return this.launched(o, () => this.runtime.engine.retry(runId, flow), flow.name);
  }

  async backfill(name: string, range: { from: number; to: number }): Promise<C.BackfillOutcome> {
    const { slots } = await this.backfillHere(this.flowNamed(name), range);
    return { flow: name, slots };
  }

  async backfillHere(flow: Flow, range: { from: number; to: number }, onStart?: (s: C.BackfillSlot) => void) {
    const { engine, store, clock } = this.runtime;
    const slots = await planBackfill(store, clock, flow, range.from, range.to);
    const done = runBackfill(engine, flow, slots, onStart ? { onStart } : {});
    // Failures of a run are its own record's; a start that fails (the store went away) is logged by the caller awaiting it.
    void done.catch(() => {});
    return { slots, done };
  }

  async pauses(): Promise<C.InstancePause[]> {
    return (await activePauses(this.runtime.store, this.runtime.clock.now())).map(toInstancePause);
  }

  async liftPauses(instance: string): Promise<number> {
    const { config, store } = this.runtime;
    if (!Object.hasOwn(config.instances, instance))
      throw new MsgflowError('USAGE', { reason: `instance '${instance}' is not in ${config.file}` });
    return (await liftPausesOf(store, identityOf(config, instance), this.runtime.clock.now())).length;
  }

  async close(): Promise<void> {
    for (const detach of [...this.open]) detach();
  }
}
