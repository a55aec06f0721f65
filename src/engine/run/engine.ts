/**
 * The engine: starts runs, resumes the ones a crash or a stop left behind,
 * answers history queries and stops gracefully.
 *
 * Ownership: a run executes only in the process holding its lease
 * (`run:<id>`) in the store, renewed by heartbeat; a flow with a writing step
 * also holds one of its concurrency group's slots (`group:<group>#<i>`, per
 * key value with `concurrency.key`: concurrency.ts). See ownership.ts for
 * when a holder counts as dead.
 */
import { shortHash } from '../../util/short-hash.js';
import { readFileSync } from 'node:fs';
import { FlowError } from '../../api/errors.js';
import { METHOD_SPECS } from '../../api/methods.js';
import { RESUMABLE_STATUSES, type EngineStore, type Lease, type RunRecord, type StepRecord } from '../../store/types.js';
import { type Clock, systemClock } from '../../util/clock.js';
import type { Logger } from '../action.js';
import type { EngineBus } from '../events.js';
import { allSteps, type Flow } from '../flow/types.js';
import { dataInputsOf, inputsFromValues, resolveInputs as defaultResolveInputs } from '../flow/inputs.js';
import type { ActionRegistry } from '../registry/registry.js';
import { errorInfo } from './errors.js';
import { pruneRuns, type PruneResult } from './retention.js';
import { recordAlertIntent } from '../alerts/records.js';
import { concurrencyGroup, evaluateConcurrencyKey, slotLeaseName } from './concurrency.js';
import { type ClaimResult, LeaseOwner, defaultHostId, defaultLeaseTtlMs, describeHolder, holderDead } from './ownership.js';
import { newRunId } from './run-id.js';
import { localExecutor } from './executor.js';
import { type ExecutionDeps, RUN_CONTROL_NS, RunExecution } from './run-execution.js';
import { type OutageResumeResult, OutageResumes } from './outage-resume.js';
import { SUBFLOW_RUNS_NS } from './subflow.js';
import type { CancelResult, Engine, EngineOptions, RunFingerprint, RunHandle, StartOptions } from './types.js';

export { RUN_CONTROL_NS };

/** A logger that emits `log` events on the bus (the log subscriber prints them). */
export function busLogger(bus: EngineBus): Logger {
  const at = (level: 'debug' | 'info' | 'warn' | 'error') => (message: string, fields?: Record<string, unknown>) =>
    bus.emit('log', { level, message, ...(fields ? { fields } : {}) });
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** JSON with sorted keys: the same value always hashes the same. */
function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/**
 * Hash of the flow file's text as loaded ({@link Flow.sourceHash}; a dialog message starts a run,
 * and each start read the file again); of the file's bytes, else of the flow itself, for a flow
 * built in code.
 */
export function flowHash(flow: Flow): string {
  if (flow.sourceHash !== undefined) return flow.sourceHash;
  try {
    return shortHash(readFileSync(flow.file));
  } catch {
    return shortHash(stableJson({ steps: flow.steps, inputs: flow.inputs }));
  }
}

export function inputsHash(inputs: Record<string, unknown>): string {
  return shortHash(stableJson(inputs));
}

/** Whether a step of the flow changes something outside msgflow. */
export function flowWrites(flow: Flow, registry: ActionRegistry): boolean {
  return allSteps(flow).some((s) => {
    if (Object.hasOwn(METHOD_SPECS, s.uses) && METHOD_SPECS[s.uses as keyof typeof METHOD_SPECS].writes) return true;
    return registry.get(s.uses)?.writes === true;
  });
}

/**
 * @example
 * const engine = createEngine({ store, registry, bus, clientFor: (name) => clients[name], baseDir: process.cwd() });
 * const { done } = await engine.start(flow, { inputs: { limit: '10' } });
 * const run = await done; // run.status: 'succeeded' | 'failed' | 'interrupted' | 'cancelled'
 */
export function createEngine(opts: EngineOptions): Engine {
  const e = new EngineCore(opts);
  return {
    hostId: e.hostId,
    fingerprint: (flow, overrides) => e.fingerprint(flow, overrides),
    start: (flow, startOpts) => e.start(flow, startOpts),
    resumeUnfinished: (flows) => e.resumeUnfinished(flows),
    resumeAfterOutages: (flows) => e.resumeAfterOutages(flows),
    resume: (runId, flow) => e.resume(runId, flow),
    retry: (runId, flow) => e.retry(runId, flow),
    liveOwner: (runId) => e.liveHolder(runId),
    unfinished: (flowName) => e.unfinished(flowName),
    cancel: (runId) => e.cancel(runId),
    listRuns: async (query = {}) => Promise.all((await opts.store.listRuns(query)).map((r) => e.displayed(r))),
    getRun: (id) => e.getRun(id),
    pruneRuns: (o) => e.pruneRuns(o),
    getSteps: (id) => e.getSteps(id),
    activeRuns: () => [...e.active.values()].map((a) => a.exec.snapshot()),
    shutdown: (reason) => e.shutdown(reason),
  };
}

type ActiveRun = { exec: RunExecution; done: Promise<RunRecord> };

/** The engine's state and operations; createEngine exposes them as an Engine. */
class EngineCore {
  readonly hostId: string;
  readonly active = new Map<string, ActiveRun>();
  private readonly clock: Clock;
  private readonly resolveInputs: NonNullable<EngineOptions['resolveInputs']>;
  private readonly ownerOpts: { store: EngineStore; hostId: string; ttlMs: number };
  private readonly maxCrashes: number;
  private readonly deps: ExecutionDeps;
  private stopping: string | undefined;
  /** Set by resumeAfterOutages (the daemon): runs a store outage interrupted, resumed when it is over. */
  private outages: { resumes: OutageResumes; flows: () => readonly Flow[] } | undefined;

  constructor(private readonly opts: EngineOptions) {
    this.clock = opts.clock ?? systemClock;
    this.resolveInputs = opts.resolveInputs ?? defaultResolveInputs;
    this.hostId = opts.hostId ?? defaultHostId();
    this.ownerOpts = { store: opts.store, hostId: this.hostId, ttlMs: opts.leaseTtlMs ?? defaultLeaseTtlMs() };
    this.maxCrashes = opts.maxCrashes ?? 3;
    this.deps = {
      store: opts.store,
      bus: opts.bus,
      clock: this.clock,
      registry: opts.registry,
      logger: opts.logger ?? busLogger(opts.bus),
      random: opts.random ?? Math.random,
      clientFor: opts.clientFor,
      identityFor: opts.identityFor ?? ((name) => name),
      localUrl: opts.localUrl,
      baseDir: opts.baseDir,
      ...(opts.pools ? { pools: opts.pools } : {}),
      ...(opts.resolvePath ? { resolvePath: opts.resolvePath } : {}),
      defaultRateLimitWaitMs: opts.defaultRateLimitWaitMs ?? 1000,
      progressSaveIntervalMs: opts.progressSaveIntervalMs ?? 1000,
      waitRecheckMs: opts.waitRecheckMs,
      executor: opts.executor ?? localExecutor,
      ...(opts.tracer ? { tracer: opts.tracer } : {}),
      subflows: {
        store: opts.store,
        now: () => this.clock.now(),
        flowFor: (name) => opts.flowFor?.(name),
        start: (flow, o) => this.start(flow, o),
        resume: (runId, flow) => this.resume(runId, flow),
        activeDone: (runId) => this.active.get(runId)?.done,
        pollMs: opts.subflowPollMs ?? 500,
      },
      ...(opts.secret ? { secret: opts.secret } : {}),
      ...(opts.redactor ? { redactor: opts.redactor } : {}),
    };
  }

  /** Retention (retention.ts) on the engine's clock, told on its bus. */
  pruneRuns(o: { olderThanMs: number; flow?: string; dryRun?: boolean }): Promise<PruneResult> {
    return pruneRuns(this.store, { ...o, now: this.clock.now(), bus: this.deps.bus });
  }

  private get store(): EngineStore {
    return this.opts.store;
  }

  private notStopping(): void {
    if (this.stopping) throw new FlowError('ENGINE_STOPPED', { reason: this.stopping });
  }

  private launch(exec: RunExecution): RunHandle {
    const done = exec
      .execute()
      .finally(() => this.active.delete(exec.id))
      .then((r) => {
        this.afterRun(exec, r);
        return r;
      });
    this.active.set(exec.id, { exec, done });
    return { runId: exec.id, done };
  }

  /** A run the store interrupted (it stopped answering, or the run's claim lapsed meanwhile) waits for the store. */
  private afterRun(exec: RunExecution, r: RunRecord): void {
    if (!this.outages || this.stopping || r.status !== 'interrupted') return;
    if (r.error?.code === 'STORE_UNAVAILABLE' || r.error?.code === 'RUN_OWNERSHIP_LOST') this.outages.resumes.add(r.id, exec.claims);
  }

  resumeAfterOutages(flows: () => readonly Flow[]): () => void {
    this.outages?.resumes.stop();
    const resumes = new OutageResumes({
      connection: this.store.connection,
      resume: (runId, owner) => this.resumeAfterOutage(runId, owner),
      logger: this.deps.logger,
      retryMs: this.opts.outageRetryMs,
    });
    const outages = { resumes, flows };
    this.outages = outages;
    return () => {
      resumes.stop();
      if (this.outages === outages) this.outages = undefined;
    };
  }

  /**
   * One run an outage interrupted, with the claims of its execution (same
   * token: what the outage left of them is still theirs, a lapsed one is
   * taken again). Not a crash: its process is this one, alive.
   */
  private async resumeAfterOutage(runId: string, owner: LeaseOwner): Promise<OutageResumeResult> {
    if (this.stopping || this.active.has(runId) || !this.outages) return 'gone';
    const r = await this.store.getRun(runId);
    if (!r || !RESUMABLE_STATUSES.includes(r.status)) return 'gone';
    const holder = await this.liveHolder(runId);
    // Another process resumed it meanwhile: it is theirs. A claim of this process not freed yet only delays.
    if (holder && holder.token !== owner.token && !(holder.pid === process.pid && holder.host === this.hostId)) return 'gone';
    const flow = this.outages.flows().find((f) => f.name === r.flow);
    if (!flow) {
      this.deps.logger.warn(`run ${runId} of flow '${r.flow}' cannot resume after the store outage: the flow is not loaded`, {
        runId,
        flow: r.flow,
      });
      return 'gone';
    }
    const h = await this.resumeOne(r, flow, false, { owner: owner.lost ? undefined : owner, afterOutage: true });
    if (!h) return 'later';
    this.deps.logger.info(`run ${runId} of ${flow.name} resumes from its checkpoint: the store answers again`, { runId, flow: flow.name });
    return 'resumed';
  }

  private concurrencyOf(flow: Flow): { group: string; max: number } {
    const group = concurrencyGroup(flow);
    const max = flow.concurrency?.max ?? (flowWrites(flow, this.opts.registry) ? 1 : Number.POSITIVE_INFINITY);
    return { group, max };
  }

  /** One of the flow's concurrency slots (of the run's key value, when it has one), when it has a limit. */
  private async claimSlot(owner: LeaseOwner, flow: Flow, key: string | undefined): Promise<ClaimResult> {
    const { group, max } = this.concurrencyOf(flow);
    if (!Number.isFinite(max)) return { ok: true };
    let first: Lease | undefined;
    for (let i = 0; i < max; i++) {
      const r = await owner.claim(slotLeaseName(group, key, i));
      if (r.ok) return r;
      first ??= r.holder;
    }
    return { ok: false, holder: first! };
  }

  private busy(flow: Flow, holder: Lease, key?: string): FlowError {
    const { group } = this.concurrencyOf(flow);
    const of = `${group === flow.name ? flow.name : `concurrency group '${group}'`}${key === undefined ? '' : ` (key ${key})`}`;
    const what = holder.runId ? `run ${holder.runId} of ${of}` : `a run of ${of}`;
    return new FlowError('RUN_LIVE', { what, holder: describeHolder(holder), runId: holder.runId ?? 'ID' });
  }

  private owner(runId: string, label = `run ${runId}`): LeaseOwner {
    return new LeaseOwner(this.ownerOpts, { runId, label });
  }

  async liveHolder(runId: string): Promise<Lease | undefined> {
    const lease = await this.store.getLease(`run:${runId}`);
    return lease && !holderDead(lease, this.hostId) ? lease : undefined;
  }

  /** A run left running/waiting by a process that is gone is shown `interrupted`. */
  async displayed(r: RunRecord): Promise<RunRecord> {
    const a = this.active.get(r.id);
    if (a) return a.exec.snapshot();
    if ((r.status === 'running' || r.status === 'waiting') && !(await this.liveHolder(r.id))) {
      return { ...r, status: 'interrupted', waitingUntil: undefined, waitReason: undefined };
    }
    return r;
  }

  /** A run's final patch: status, finish time and no wait left. */
  private ended(r: RunRecord, status: 'failed' | 'cancelled'): Partial<RunRecord> {
    const now = this.clock.now();
    return { status, finishedAt: now, durationMs: now - r.startedAt, updatedAt: now, waitingUntil: undefined, waitReason: undefined };
  }

  /**
   * Resumes one run when nobody live owns it. Undefined when it is owned
   * elsewhere, its slot is busy, or it crashed too often (then marked failed).
   * `explicit` throws the reason instead.
   */
  private async resumeOne(
    r: RunRecord,
    flow: Flow,
    explicit = false,
    o: { owner?: LeaseOwner; afterOutage?: boolean } = {},
  ): Promise<RunHandle | undefined> {
    const a = this.active.get(r.id);
    if (a) return explicit ? { runId: r.id, done: a.done } : undefined;
    const owner = o.owner ?? this.owner(r.id, `run ${r.id} of ${flow.name}`);
    const claim = await owner.claim(`run:${r.id}`);
    if (!claim.ok) {
      if (explicit) throw this.busy(flow, claim.holder);
      return undefined;
    }
    try {
      const h = await this.resumeClaimed(r, flow, owner, explicit, o.afterOutage === true);
      if (!h) await owner.release();
      return h;
    } catch (e) {
      await owner.release();
      throw e;
    }
  }

  /** resumeOne once the run's lease is held: undefined (the caller releases) when it is not to run now. */
  private async resumeClaimed(
    r: RunRecord,
    flow: Flow,
    owner: LeaseOwner,
    explicit: boolean,
    afterOutage: boolean,
  ): Promise<RunHandle | undefined> {
    // Re-read under the claim: another process may have finished it meanwhile.
    const cur = (await this.store.getRun(r.id)) ?? r;
    if (!RESUMABLE_STATUSES.includes(cur.status)) return undefined;
    const control = await this.store.kv(RUN_CONTROL_NS).get<{ cancel?: boolean }>(r.id);
    if (control?.cancel || cur.cancelRequested) {
      await this.store.updateRun(r.id, { ...this.ended(cur, 'cancelled'), cancelRequested: true });
      await this.store.kv(RUN_CONTROL_NS).delete(r.id);
      return undefined;
    }
    // A run an outage interrupted may still read `running` (the store refused that last write too): no crash.
    if (!afterOutage && !(await this.countCrash(cur, flow))) return undefined;
    if (!cur.dryRun) {
      const slot = await this.claimSlot(owner, flow, cur.concurrencyKey);
      if (!slot.ok) {
        if (explicit) throw this.busy(flow, slot.holder, cur.concurrencyKey);
        this.deps.logger.info(`run ${r.id} of ${flow.name} waits: ${this.busy(flow, slot.holder, cur.concurrencyKey).message}`, {
          runId: r.id,
          flow: flow.name,
        });
        return undefined;
      }
    }
    const inputs = (await this.store.loadInputs(r.id)) ?? (await this.resolveInputs(flow, {}));
    const [steps, waits] = await Promise.all([this.store.getSteps(r.id), this.store.listWaits(r.id)]);
    const run = await this.store.updateRun(r.id, {
      status: 'running',
      resumes: (cur.resumes ?? 0) + 1,
      owner: { pid: process.pid, host: this.hostId },
      updatedAt: this.clock.now(),
      itemsDone: 0,
      itemsFailed: 0,
      itemsInvalid: 0,
      itemsDuplicate: 0,
      itemsSkipped: 0,
      waitingUntil: undefined,
      waitReason: undefined,
      // What interrupted it (the store) is over.
      error: undefined,
    });
    return this.launch(new RunExecution(this.deps, flow, run, inputs, owner, { steps, waits }));
  }

  /**
   * A run left running or waiting: its process died without a graceful stop.
   * Counts the crash; false when it crashed too often (then marked failed).
   */
  private async countCrash(cur: RunRecord, flow: Flow): Promise<boolean> {
    if (cur.status === 'interrupted') return true;
    const crashes = (cur.crashes ?? 0) + 1;
    const who = cur.owner ? `pid ${cur.owner.pid} on host ${cur.owner.host}` : 'its process';
    const lastCrash = `${who} died during step ${cur.currentStep ?? '(none)'} at ${new Date(cur.updatedAt).toISOString()}`;
    if (crashes >= this.maxCrashes) {
      const err = new FlowError('RUN_CRASHED', { count: crashes, last: lastCrash });
      const at = this.clock.now();
      await recordAlertIntent(this.store, {
        key: `run-failed:${cur.id}`,
        kind: 'run-failed',
        subject: flow.name,
        message: `run ${cur.id} of ${flow.name} crashed: ${err.message}`,
        at,
        flow: flow.name,
        runId: cur.id,
        code: 'RUN_CRASHED',
        counts: { done: cur.itemsDone, failed: cur.itemsFailed },
        trigger: cur.trigger,
      });
      await this.store.updateRun(cur.id, { ...this.ended(cur, 'failed'), error: errorInfo(err), crashes, lastCrash });
      this.deps.logger.error(`run ${cur.id} of ${flow.name} is not resumed: ${err.message}`, { runId: cur.id, flow: flow.name });
      return false;
    }
    // Recorded before resuming: if this attempt crashes too, the next one counts it.
    await this.store.updateRun(cur.id, { crashes, lastCrash, updatedAt: this.clock.now() });
    return true;
  }

  async fingerprint(flow: Flow, overrides: Record<string, string> = {}): Promise<RunFingerprint> {
    const inputs = await this.resolveInputs(flow, overrides);
    return { inputsHash: inputsHash(inputs), flowHash: flowHash(flow) };
  }

  /** A new run record, owned by this process. */
  private newRun(flow: Flow, id: string, now: number, inputs: Record<string, unknown>, extra: Partial<RunRecord>): RunRecord {
    return {
      id,
      flow: flow.name,
      file: flow.file,
      status: 'running',
      trigger: 'manual',
      dryRun: false,
      startedAt: now,
      updatedAt: now,
      itemsDone: 0,
      itemsFailed: 0,
      itemsInvalid: 0,
      itemsDuplicate: 0,
      itemsSkipped: 0,
      resumes: 0,
      owner: { pid: process.pid, host: this.hostId },
      inputsHash: inputsHash(inputs),
      flowHash: flowHash(flow),
      group: this.concurrencyOf(flow).group,
      ...extra,
    };
  }

  /**
   * Claims a new run's slot (unless a dry run: it writes nothing, needs no
   * slot, and never blocks a real run) and lease, records it, then `prepare`
   * (e.g. carry over a retried run's results) before it is launched.
   */
  private async begin(
    flow: Flow,
    inputs: Record<string, unknown>,
    extra: Partial<RunRecord>,
    prepare?: (run: RunRecord, owner: LeaseOwner) => Promise<RunExecution>,
    runId?: string,
  ): Promise<RunHandle> {
    const now = this.clock.now();
    // A caller-chosen id (a notification's run: the same notification names the same run).
    const id = runId ?? newRunId(flow.name, now);
    const key = Object.hasOwn(extra, 'concurrencyKey')
      ? extra.concurrencyKey
      : evaluateConcurrencyKey(flow, {
          inputs,
          run: { id, flow: flow.name, startedAt: now },
          ...(extra.event ? { event: extra.event } : {}),
        });
    const owner = this.owner(id, `run ${id} of ${flow.name}`);
    if (!extra.dryRun) {
      const slot = await this.claimSlot(owner, flow, key);
      if (!slot.ok) throw this.busy(flow, slot.holder, key);
    }
    try {
      const claim = await owner.claim(`run:${id}`);
      if (!claim.ok) throw this.busy(flow, claim.holder, key);
      // A caller-chosen id another process started meanwhile (two daemons deciding one notification): never twice.
      const existing = runId === undefined ? undefined : await this.store.getRun(id);
      if (existing) throw new FlowError('RUN_FINISHED', { runId: id, status: existing.status });
      const run = this.newRun(flow, id, now, inputs, { ...extra, ...(key === undefined ? {} : { concurrencyKey: key }) });
      await this.store.createRun(run);
      await this.store.saveInputs(id, inputs);
      const exec = prepare ? await prepare(run, owner) : new RunExecution(this.deps, flow, run, inputs, owner);
      return this.launch(exec);
    } catch (e) {
      await owner.release();
      throw e;
    }
  }

  async start(flow: Flow, startOpts: StartOptions = {}): Promise<RunHandle> {
    this.notStopping();
    const inputs = startOpts.values
      ? await inputsFromValues(flow, startOpts.values, (f) => this.resolveInputs(f, {}))
      : await this.resolveInputs(flow, startOpts.inputs ?? {});
    const extra: Partial<RunRecord> = { trigger: startOpts.trigger ?? 'manual', dryRun: startOpts.dryRun ?? false };
    if (startOpts.event !== undefined) extra.event = startOpts.event;
    if (startOpts.plan !== undefined) extra.plan = startOpts.plan;
    if (Object.hasOwn(startOpts, 'concurrencyKey')) extra.concurrencyKey = startOpts.concurrencyKey;
    if (startOpts.parent !== undefined) extra.parent = startOpts.parent;
    if (startOpts.slot !== undefined) extra.slot = startOpts.slot;
    const dataInputs = await dataInputsOf(flow, startOpts.inputs ?? {});
    if (dataInputs) extra.dataInputs = dataInputs;
    return this.begin(flow, inputs, extra, undefined, startOpts.runId);
  }

  async resumeUnfinished(flows: readonly Flow[]): Promise<RunHandle[]> {
    this.notStopping();
    const byName = new Map(flows.map((f) => [f.name, f]));
    const handles: RunHandle[] = [];
    // Oldest first: they were started first.
    const runs = (await this.store.listRuns({ status: RESUMABLE_STATUSES })).reverse();
    for (const r of runs) {
      const flow = byName.get(r.flow);
      if (!flow) {
        if (!this.active.has(r.id) && !(await this.liveHolder(r.id))) {
          this.deps.logger.warn(`run ${r.id} of flow '${r.flow}' cannot resume: the flow is not loaded`, { runId: r.id, flow: r.flow });
        }
        continue;
      }
      const h = await this.resumeOne(r, flow);
      if (h) handles.push(h);
    }
    return handles;
  }

  async resume(runId: string, flow: Flow): Promise<RunHandle> {
    this.notStopping();
    const r = await this.store.getRun(runId);
    if (!r || r.flow !== flow.name) throw new FlowError('RUN_NOT_FOUND', { runId });
    if (!RESUMABLE_STATUSES.includes(r.status)) {
      throw new FlowError('RUN_FINISHED', { runId, status: r.status });
    }
    const h = await this.resumeOne(r, flow, true);
    if (!h) throw new FlowError('RUN_NOT_RESUMABLE', { runId });
    return h;
  }

  async retry(runId: string, flow: Flow): Promise<RunHandle> {
    this.notStopping();
    const old = await this.store.getRun(runId);
    if (!old || old.flow !== flow.name) throw new FlowError('RUN_NOT_FOUND', { runId });
    if (RESUMABLE_STATUSES.includes(old.status)) {
      throw new FlowError('RUN_UNFINISHED', { runId, status: (await this.displayed(old)).status, flow: flow.name });
    }
    // Every step of a succeeded run is carried over: a "retry" would redo nothing, or run the flow again unasked.
    if (old.status === 'succeeded') throw new FlowError('NOTHING_TO_RETRY', { runId, flow: flow.name });
    const inputs = (await this.store.loadInputs(runId)) ?? {};
    return this.begin(
      flow,
      inputs,
      {
        dryRun: old.dryRun,
        retryOf: runId,
        ...(old.plan === undefined ? {} : { plan: old.plan }),
        ...(old.event === undefined ? {} : { event: old.event }),
        concurrencyKey: old.concurrencyKey,
        // The same inputs, so the same files: as shown (or not) as the run retried.
        ...(old.dataInputs === undefined ? {} : { dataInputs: old.dataInputs }),
      },
      async (run, owner) => {
        await this.carryOver(runId, run.id);
        const steps = await this.store.getSteps(run.id);
        return new RunExecution(this.deps, flow, run, inputs, owner, { steps, waits: [] });
      },
    );
  }

  /**
   * Carries over what succeeded: finished steps keep their outputs; a failed
   * forEach step keeps its succeeded items and redoes only the failed ones;
   * a failed single step, and steps never reached, run again.
   */
  private async carryOver(from: string, to: string): Promise<void> {
    for (const s of await this.store.getSteps(from)) {
      if (s.status === 'succeeded' || s.status === 'skipped') {
        await this.store.saveStep({ ...s, runId: to });
      } else if (s.forEach && s.status === 'failed') {
        const ok = [...(await this.store.getItems(from, s.step)).values()].filter((i) => i.status !== 'failed');
        await this.store.appendItems(to, ok);
        const { error: _e, finishedAt: _f, ...rest } = s;
        await this.store.saveStep({ ...rest, runId: to, status: 'running', done: 0, failed: 0 });
      }
    }
  }

  async unfinished(flowName: string): Promise<RunRecord[]> {
    const runs = await this.store.listRuns({ flow: flowName, status: RESUMABLE_STATUSES });
    return Promise.all(runs.map((r) => this.displayed(r)));
  }

  /** Cancels a run and, first, the sub-flow runs it started (theirs too): cancelling a parent leaves no child working. */
  async cancel(runId: string): Promise<CancelResult> {
    for (const [key] of await this.store.kv(SUBFLOW_RUNS_NS).entries(`${runId}/`)) {
      const child = key.slice(runId.length + 1);
      const c = await this.store.getRun(child);
      if (c && RESUMABLE_STATUSES.includes(c.status)) await this.cancel(child);
    }
    return this.cancelOne(runId);
  }

  private async cancelOne(runId: string): Promise<CancelResult> {
    const r = await this.store.getRun(runId);
    if (!r) throw new FlowError('RUN_NOT_FOUND', { runId });
    if (!RESUMABLE_STATUSES.includes(r.status)) return { run: r, pending: false };
    const a = this.active.get(runId);
    if (a) {
      a.exec.cancel();
      return { run: a.exec.snapshot(), pending: true };
    }
    // Claim it: either nobody runs it (cancel now) or its owner is told through the store.
    const owner = this.owner(runId, `cancel of ${runId}`);
    const claim = await owner.claim(`run:${runId}`);
    if (!claim.ok) {
      await this.store.kv(RUN_CONTROL_NS).set(runId, { cancel: true, at: this.clock.now() });
      return { run: r, pending: true, holder: claim.holder };
    }
    try {
      const run = await this.store.updateRun(runId, { ...this.ended(r, 'cancelled'), cancelRequested: true });
      return { run, pending: false };
    } finally {
      await owner.release();
    }
  }

  async getRun(id: string): Promise<RunRecord | undefined> {
    const r = await this.store.getRun(id);
    return r ? this.displayed(r) : this.active.get(id)?.exec.snapshot();
  }

  async getSteps(id: string): Promise<StepRecord[]> {
    const a = this.active.get(id);
    if (a) return a.exec.stepSnapshots();
    return this.store.getSteps(id);
  }

  async shutdown(reason = 'shutdown'): Promise<void> {
    this.stopping ??= reason;
    this.outages?.resumes.stop();
    const runs = [...this.active.values()];
    for (const a of runs) a.exec.interrupt(reason);
    const grace = this.opts.shutdownGraceMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    // Real time on purpose: the grace is for the process, not for flow time (a ManualClock must not hang it).
    const expired = new Promise<'expired'>((r) => {
      timer = setTimeout(() => r('expired'), grace);
      timer.unref?.();
    });
    const settled = await Promise.race([Promise.all(runs.map((a) => a.done)).then(() => 'settled' as const), expired]);
    clearTimeout(timer);
    if (settled !== 'expired') return;
    // Items still running past the grace: mark the runs resumable anyway; their results, if they come, are still recorded.
    for (const a of runs) {
      if (!this.active.has(a.exec.id)) continue;
      await this.store.updateRun(a.exec.id, { status: 'interrupted', updatedAt: this.clock.now() }).catch(() => {});
      await a.exec.releaseClaims();
    }
  }
}
