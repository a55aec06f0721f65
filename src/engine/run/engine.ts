/**
 * The engine: starts runs, resumes the ones a crash or a stop left behind,
 * answers history queries and stops gracefully.
 *
 * Ownership: a run executes only in the process holding its lease
 * (`run:<id>`) in the store, renewed by heartbeat; a flow with a writing step
 * also holds one of its concurrency group's slots (`group:<group>#<i>`). See
 * ownership.ts for when a holder counts as dead.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { FlowError } from '../../api/errors.js';
import { METHOD_SPECS } from '../../api/methods.js';
import { RESUMABLE_STATUSES, type Lease, type RunRecord, type StepRecord } from '../../store/types.js';
import { systemClock } from '../../util/clock.js';
import type { Logger } from '../action.js';
import type { EngineBus } from '../events.js';
import type { Flow } from '../flow-types.js';
import { resolveInputs as defaultResolveInputs } from '../flow/index.js';
import type { ActionRegistry } from '../registry/index.js';
import { errorInfo } from './errors.js';
import { type ClaimResult, LeaseOwner, defaultHostId, defaultLeaseTtlMs, describeHolder, holderDead } from './ownership.js';
import { newRunId } from './run-id.js';
import { type ExecutionDeps, RUN_CONTROL_NS, RunExecution } from './run-execution.js';
import type { Engine, EngineOptions, RunFingerprint, RunHandle } from './types.js';

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
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${stableJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex').slice(0, 16);

/** Hash of the flow file's bytes (of the loaded flow when the file cannot be read, e.g. flows built in code). */
export function flowHash(flow: Flow): string {
  try {
    return sha(readFileSync(flow.file));
  } catch {
    return sha(stableJson({ steps: flow.steps, inputs: flow.inputs }));
  }
}

export function inputsHash(inputs: Record<string, unknown>): string {
  return sha(stableJson(inputs));
}

/** Whether a step of the flow changes something outside msgflow. */
export function flowWrites(flow: Flow, registry: ActionRegistry): boolean {
  return flow.steps.some((s) => {
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
  const clock = opts.clock ?? systemClock;
  const resolveInputs = opts.resolveInputs ?? defaultResolveInputs;
  const hostId = opts.hostId ?? defaultHostId();
  const ownerOpts = { store: opts.store, hostId, ttlMs: opts.leaseTtlMs ?? defaultLeaseTtlMs() };
  const maxCrashes = opts.maxCrashes ?? 3;
  const deps: ExecutionDeps = {
    store: opts.store,
    bus: opts.bus,
    clock,
    registry: opts.registry,
    logger: opts.logger ?? busLogger(opts.bus),
    random: opts.random ?? Math.random,
    clientFor: opts.clientFor,
    identityFor: opts.identityFor ?? ((name) => name),
    localUrl: opts.localUrl,
    baseDir: opts.baseDir,
    defaultRateLimitWaitMs: opts.defaultRateLimitWaitMs ?? 1000,
    progressSaveIntervalMs: opts.progressSaveIntervalMs ?? 1000,
  };
  const active = new Map<string, { exec: RunExecution; done: Promise<RunRecord> }>();
  let stopping: string | undefined;

  function launch(exec: RunExecution): RunHandle {
    const done = exec.execute().finally(() => active.delete(exec.id));
    active.set(exec.id, { exec, done });
    return { runId: exec.id, done };
  }

  function concurrencyOf(flow: Flow): { group: string; max: number } {
    const group = flow.concurrency?.group ?? flow.name;
    const max = flow.concurrency?.max ?? (flowWrites(flow, opts.registry) ? 1 : Number.POSITIVE_INFINITY);
    return { group, max };
  }

  /** One of the flow's concurrency slots, when it has a limit. */
  async function claimSlot(owner: LeaseOwner, flow: Flow): Promise<ClaimResult> {
    const { group, max } = concurrencyOf(flow);
    if (!Number.isFinite(max)) return { ok: true };
    let first: Lease | undefined;
    for (let i = 0; i < max; i++) {
      const r = await owner.claim(`group:${group}#${i}`);
      if (r.ok) return r;
      first ??= r.holder;
    }
    return { ok: false, holder: first! };
  }

  function busy(flow: Flow, holder: Lease): FlowError {
    const { group } = concurrencyOf(flow);
    const what = holder.runId ? `run ${holder.runId} of ${group === flow.name ? flow.name : `concurrency group '${group}'`}` : `a run of ${flow.name}`;
    return new FlowError('RUN_LIVE', { what, holder: describeHolder(holder), runId: holder.runId ?? 'ID' });
  }

  async function liveHolder(runId: string): Promise<Lease | undefined> {
    const lease = await opts.store.getLease(`run:${runId}`);
    return lease && !holderDead(lease, hostId) ? lease : undefined;
  }

  /** A run left running/waiting by a process that is gone is shown `interrupted`. */
  async function displayed(r: RunRecord): Promise<RunRecord> {
    const a = active.get(r.id);
    if (a) return a.exec.snapshot();
    if ((r.status === 'running' || r.status === 'waiting') && !(await liveHolder(r.id))) {
      return { ...r, status: 'interrupted', waitingUntil: undefined, waitReason: undefined };
    }
    return r;
  }

  async function markFailed(r: RunRecord, err: FlowError, patch: Partial<RunRecord>): Promise<void> {
    const now = clock.now();
    await opts.store.updateRun(r.id, {
      ...patch,
      status: 'failed',
      error: errorInfo(err),
      finishedAt: now,
      durationMs: now - r.startedAt,
      updatedAt: now,
      waitingUntil: undefined,
      waitReason: undefined,
    });
  }

  /**
   * Resumes one run when nobody live owns it. Undefined when it is owned
   * elsewhere, its slot is busy, or it crashed too often (then marked failed).
   * `explicit` throws the reason instead.
   */
  async function resumeOne(r: RunRecord, flow: Flow, explicit = false): Promise<RunHandle | undefined> {
    if (active.has(r.id)) return explicit ? { runId: r.id, done: active.get(r.id)!.done } : undefined;
    const owner = new LeaseOwner(ownerOpts, { runId: r.id, label: `run ${r.id} of ${flow.name}` });
    const claim = await owner.claim(`run:${r.id}`);
    if (!claim.ok) {
      if (explicit) throw busy(flow, claim.holder);
      return undefined;
    }
    try {
      // Re-read under the claim: another process may have finished it meanwhile.
      const cur = (await opts.store.getRun(r.id)) ?? r;
      if (!RESUMABLE_STATUSES.includes(cur.status)) {
        await owner.release();
        return undefined;
      }
      const control = await opts.store.kv(RUN_CONTROL_NS).get<{ cancel?: boolean }>(r.id);
      if (control?.cancel || cur.cancelRequested) {
        const now = clock.now();
        await opts.store.updateRun(r.id, { status: 'cancelled', cancelRequested: true, finishedAt: now, durationMs: now - cur.startedAt, updatedAt: now, waitingUntil: undefined, waitReason: undefined });
        await opts.store.kv(RUN_CONTROL_NS).delete(r.id);
        await owner.release();
        return undefined;
      }
      // Left running or waiting: its process died without a graceful stop.
      let { crashes = 0, lastCrash } = cur;
      if (cur.status !== 'interrupted') {
        crashes++;
        const who = cur.owner ? `pid ${cur.owner.pid} on host ${cur.owner.host}` : 'its process';
        lastCrash = `${who} died during step ${cur.currentStep ?? '(none)'} at ${new Date(cur.updatedAt).toISOString()}`;
        if (crashes >= maxCrashes) {
          const err = new FlowError('RUN_CRASHED', { count: crashes, last: lastCrash });
          await markFailed(cur, err, { crashes, lastCrash });
          deps.logger.error(`run ${r.id} of ${flow.name} is not resumed: ${err.message}`, { runId: r.id, flow: flow.name });
          await owner.release();
          return undefined;
        }
        // Recorded before resuming: if this attempt crashes too, the next one counts it.
        await opts.store.updateRun(r.id, { crashes, lastCrash, updatedAt: clock.now() });
      }
      if (!cur.dryRun) {
        const slot = await claimSlot(owner, flow);
        if (!slot.ok) {
          await owner.release();
          if (explicit) throw busy(flow, slot.holder);
          deps.logger.info(`run ${r.id} of ${flow.name} waits: ${busy(flow, slot.holder).message}`, { runId: r.id, flow: flow.name });
          return undefined;
        }
      }
      const inputs = (await opts.store.loadInputs(r.id)) ?? (await resolveInputs(flow, {}));
      const [steps, waits] = await Promise.all([opts.store.getSteps(r.id), opts.store.listWaits(r.id)]);
      const run = await opts.store.updateRun(r.id, {
        status: 'running',
        resumes: (cur.resumes ?? 0) + 1,
        owner: { pid: process.pid, host: hostId },
        updatedAt: clock.now(),
        itemsDone: 0,
        itemsFailed: 0,
        waitingUntil: undefined,
        waitReason: undefined,
      });
      return launch(new RunExecution(deps, flow, run, inputs, owner, { steps, waits }));
    } catch (e) {
      await owner.release();
      throw e;
    }
  }

  return {
    hostId,

    async fingerprint(flow, overrides = {}): Promise<RunFingerprint> {
      const inputs = await resolveInputs(flow, overrides);
      return { inputsHash: inputsHash(inputs), flowHash: flowHash(flow) };
    },

    async start(flow, startOpts = {}) {
      if (stopping) throw new FlowError('ENGINE_STOPPED', { reason: stopping });
      const inputs = await resolveInputs(flow, startOpts.inputs ?? {});
      const now = clock.now();
      const id = startOpts.runId ?? newRunId(flow.name, now);
      const dryRun = startOpts.dryRun ?? false;
      const owner = new LeaseOwner(ownerOpts, { runId: id, label: `run ${id} of ${flow.name}` });
      // A dry run writes nothing: it needs no slot, and never blocks a real run.
      if (!dryRun) {
        const slot = await claimSlot(owner, flow);
        if (!slot.ok) throw busy(flow, slot.holder);
      }
      try {
        await owner.claim(`run:${id}`);
        const run: RunRecord = {
          id,
          flow: flow.name,
          file: flow.file,
          status: 'running',
          trigger: startOpts.trigger ?? 'manual',
          dryRun,
          startedAt: now,
          updatedAt: now,
          itemsDone: 0,
          itemsFailed: 0,
          resumes: 0,
          owner: { pid: process.pid, host: hostId },
          inputsHash: inputsHash(inputs),
          flowHash: flowHash(flow),
          group: concurrencyOf(flow).group,
          ...(startOpts.event === undefined ? {} : { event: startOpts.event }),
        };
        await opts.store.createRun(run);
        await opts.store.saveInputs(run.id, inputs);
        return launch(new RunExecution(deps, flow, run, inputs, owner));
      } catch (e) {
        await owner.release();
        throw e;
      }
    },

    async resumeUnfinished(flows) {
      if (stopping) throw new FlowError('ENGINE_STOPPED', { reason: stopping });
      const byName = new Map(flows.map((f) => [f.name, f]));
      const handles: RunHandle[] = [];
      // Oldest first: they were started first.
      const runs = (await opts.store.listRuns({ status: RESUMABLE_STATUSES })).reverse();
      for (const r of runs) {
        const flow = byName.get(r.flow);
        if (!flow) {
          if (!active.has(r.id) && !(await liveHolder(r.id))) {
            deps.logger.warn(`run ${r.id} of flow '${r.flow}' cannot resume: the flow is not loaded`, { runId: r.id, flow: r.flow });
          }
          continue;
        }
        const h = await resumeOne(r, flow);
        if (h) handles.push(h);
      }
      return handles;
    },

    async resume(runId, flow) {
      if (stopping) throw new FlowError('ENGINE_STOPPED', { reason: stopping });
      const r = await opts.store.getRun(runId);
      if (!r || r.flow !== flow.name) throw new FlowError('RUN_NOT_FOUND', { runId });
      if (!RESUMABLE_STATUSES.includes(r.status)) {
        throw new FlowError('USAGE', { reason: `run ${runId} is ${r.status}: only an unfinished run can be resumed (msgflow runs retry ${runId} redoes its failed items)` });
      }
      const h = await resumeOne(r, flow, true);
      if (!h) throw new FlowError('USAGE', { reason: `run ${runId} cannot be resumed (see msgflow runs show ${runId})` });
      return h;
    },

    async retry(runId, flow) {
      if (stopping) throw new FlowError('ENGINE_STOPPED', { reason: stopping });
      const old = await opts.store.getRun(runId);
      if (!old || old.flow !== flow.name) throw new FlowError('RUN_NOT_FOUND', { runId });
      if (RESUMABLE_STATUSES.includes(old.status)) {
        throw new FlowError('USAGE', { reason: `run ${runId} is unfinished (${(await displayed(old)).status}): resume it with 'msgflow run ${flow.name} --resume ${runId}'` });
      }
      const inputs = (await opts.store.loadInputs(runId)) ?? {};
      const now = clock.now();
      const id = newRunId(flow.name, now);
      const owner = new LeaseOwner(ownerOpts, { runId: id, label: `run ${id} of ${flow.name}` });
      if (!old.dryRun) {
        const slot = await claimSlot(owner, flow);
        if (!slot.ok) throw busy(flow, slot.holder);
      }
      try {
        await owner.claim(`run:${id}`);
        const run: RunRecord = {
          id, flow: flow.name, file: flow.file, status: 'running', trigger: 'manual', dryRun: old.dryRun,
          startedAt: now, updatedAt: now, itemsDone: 0, itemsFailed: 0, resumes: 0,
          owner: { pid: process.pid, host: hostId },
          inputsHash: inputsHash(inputs), flowHash: flowHash(flow), group: concurrencyOf(flow).group, retryOf: runId,
          ...(old.event === undefined ? {} : { event: old.event }),
        };
        await opts.store.createRun(run);
        await opts.store.saveInputs(id, inputs);
        // Carry over what succeeded: finished steps keep their outputs; a failed
        // forEach step keeps its succeeded items and redoes only the failed ones;
        // a failed single step, and steps never reached, run again.
        for (const s of await opts.store.getSteps(runId)) {
          if (s.status === 'succeeded' || s.status === 'skipped') {
            await opts.store.saveStep({ ...s, runId: id });
          } else if (s.forEach && s.status === 'failed') {
            const ok = [...(await opts.store.getItems(runId, s.step)).values()].filter((i) => i.status !== 'failed');
            await opts.store.appendItems(id, ok);
            const { error: _e, finishedAt: _f, ...rest } = s;
            await opts.store.saveStep({ ...rest, runId: id, status: 'running', done: 0, failed: 0 });
          }
        }
        const steps = await opts.store.getSteps(id);
        return launch(new RunExecution(deps, flow, run, inputs, owner, { steps, waits: [] }));
      } catch (e) {
        await owner.release();
        throw e;
      }
    },

    liveOwner: liveHolder,

    async unfinished(flowName) {
      const runs = await opts.store.listRuns({ flow: flowName, status: RESUMABLE_STATUSES });
      return Promise.all(runs.map(displayed));
    },

    async cancel(runId) {
      const r = await opts.store.getRun(runId);
      if (!r) throw new FlowError('RUN_NOT_FOUND', { runId });
      if (!RESUMABLE_STATUSES.includes(r.status)) return { run: r, pending: false };
      const a = active.get(runId);
      if (a) {
        a.exec.cancel();
        return { run: a.exec.snapshot(), pending: true };
      }
      // Claim it: either nobody runs it (cancel now) or its owner is told through the store.
      const owner = new LeaseOwner(ownerOpts, { runId, label: `cancel of ${runId}` });
      const claim = await owner.claim(`run:${runId}`);
      if (!claim.ok) {
        await opts.store.kv(RUN_CONTROL_NS).set(runId, { cancel: true, at: clock.now() });
        return { run: r, pending: true, holder: claim.holder };
      }
      try {
        const now = clock.now();
        const run = await opts.store.updateRun(runId, {
          status: 'cancelled', cancelRequested: true, finishedAt: now, durationMs: now - r.startedAt, updatedAt: now, waitingUntil: undefined, waitReason: undefined,
        });
        return { run, pending: false };
      } finally {
        await owner.release();
      }
    },

    async listRuns(query = {}) {
      return Promise.all((await opts.store.listRuns(query)).map(displayed));
    },

    async getRun(id) {
      const r = await opts.store.getRun(id);
      return r ? displayed(r) : active.get(id)?.exec.snapshot();
    },

    async getSteps(id): Promise<StepRecord[]> {
      const a = active.get(id);
      if (a) return a.exec.stepSnapshots();
      return opts.store.getSteps(id);
    },

    activeRuns() {
      return [...active.values()].map((a) => a.exec.snapshot());
    },

    async shutdown(reason = 'shutdown') {
      stopping ??= reason;
      const runs = [...active.values()];
      for (const a of runs) a.exec.interrupt(reason);
      const grace = opts.shutdownGraceMs ?? 10_000;
      let timer: NodeJS.Timeout | undefined;
      // Real time on purpose: the grace is for the process, not for flow time (a ManualClock must not hang it).
      const expired = new Promise<'expired'>((r) => {
        timer = setTimeout(() => r('expired'), grace);
        timer.unref?.();
      });
      const settled = await Promise.race([Promise.all(runs.map((a) => a.done)).then(() => 'settled' as const), expired]);
      clearTimeout(timer);
      if (settled === 'expired') {
        // Items still running past the grace: mark the runs resumable anyway; their results, if they come, are still recorded.
        for (const a of runs) {
          if (!active.has(a.exec.id)) continue;
          await opts.store.updateRun(a.exec.id, { status: 'interrupted', updatedAt: clock.now() }).catch(() => {});
          await a.exec.releaseClaims();
        }
      }
    },
  };
}
