/**
 * The engine: starts runs, resumes the ones a crash or a stop left behind,
 * answers history queries and stops gracefully.
 */
import { hostname } from 'node:os';
import { FlowError } from '../../api/errors.js';
import { RESUMABLE_STATUSES, type RunOwner, type RunRecord, type StepRecord } from '../../store/types.js';
import { systemClock } from '../../util/clock.js';
import { isProcessAlive } from '../../util/process-alive.js';
import type { Logger } from '../action.js';
import type { EngineBus } from '../events.js';
import { resolveInputs as defaultResolveInputs } from '../flow/index.js';
import { newRunId } from './run-id.js';
import { type ExecutionDeps, RunExecution } from './run-execution.js';
import type { Engine, EngineOptions, RunHandle } from './types.js';

/** A logger that emits `log` events on the bus (the log subscriber prints them). */
export function busLogger(bus: EngineBus): Logger {
  const at = (level: 'debug' | 'info' | 'warn' | 'error') => (message: string, fields?: Record<string, unknown>) =>
    bus.emit('log', { level, message, ...(fields ? { fields } : {}) });
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/**
 * @example
 * const engine = createEngine({ store, registry, bus, clientFor: (name) => clients[name], baseDir: process.cwd() });
 * const { done } = await engine.start(flow, { inputs: { limit: '10' } });
 * const run = await done; // run.status: 'succeeded' | 'failed' | 'interrupted'
 */
export function createEngine(opts: EngineOptions): Engine {
  const clock = opts.clock ?? systemClock;
  const resolveInputs = opts.resolveInputs ?? defaultResolveInputs;
  const deps: ExecutionDeps = {
    store: opts.store,
    bus: opts.bus,
    clock,
    registry: opts.registry,
    logger: opts.logger ?? busLogger(opts.bus),
    random: opts.random ?? Math.random,
    clientFor: opts.clientFor,
    identityFor: opts.identityFor ?? ((name) => name),
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

  const live = (r: RunRecord): RunRecord => active.get(r.id)?.exec.snapshot() ?? r;

  return {
    async start(flow, startOpts = {}) {
      if (stopping) throw new FlowError('ENGINE_STOPPED', { reason: stopping });
      const inputs = await resolveInputs(flow, startOpts.inputs ?? {});
      const now = clock.now();
      const run: RunRecord = {
        id: newRunId(flow.name, now),
        flow: flow.name,
        file: flow.file,
        status: 'running',
        trigger: startOpts.trigger ?? 'manual',
        dryRun: startOpts.dryRun ?? false,
        startedAt: now,
        updatedAt: now,
        itemsDone: 0,
        itemsFailed: 0,
        resumes: 0,
        owner: currentOwner(),
      };
      await opts.store.createRun(run);
      await opts.store.saveInputs(run.id, inputs);
      return launch(new RunExecution(deps, flow, run, inputs));
    },

    async resumeUnfinished(flows) {
      if (stopping) throw new FlowError('ENGINE_STOPPED', { reason: stopping });
      const byName = new Map(flows.map((f) => [f.name, f]));
      const handles: RunHandle[] = [];
      // Oldest first: they were started first.
      const runs = (await opts.store.listRuns({ status: RESUMABLE_STATUSES })).reverse();
      for (const r of runs) {
        if (active.has(r.id)) continue;
        // A run still executing in another live msgflow process (a daemon
        // beside a `msgflow run`) is not ours to resume.
        if (ownedElsewhere(r.owner)) continue;
        const flow = byName.get(r.flow);
        if (!flow) {
          deps.logger.warn(`run ${r.id} of flow '${r.flow}' cannot resume: the flow is not loaded`, { runId: r.id, flow: r.flow });
          continue;
        }
        const inputs = (await opts.store.loadInputs(r.id)) ?? (await resolveInputs(flow, {}));
        const [steps, waits] = await Promise.all([opts.store.getSteps(r.id), opts.store.listWaits(r.id)]);
        const run = await opts.store.updateRun(r.id, {
          status: 'running',
          resumes: (r.resumes ?? 0) + 1,
          owner: currentOwner(),
          updatedAt: clock.now(),
          itemsDone: 0,
          itemsFailed: 0,
          waitingUntil: undefined,
          waitReason: undefined,
        });
        handles.push(launch(new RunExecution(deps, flow, run, inputs, { steps, waits })));
      }
      return handles;
    },

    async listRuns(query = {}) {
      return (await opts.store.listRuns(query)).map(live);
    },

    async getRun(id) {
      const a = active.get(id);
      if (a) return a.exec.snapshot();
      return opts.store.getRun(id);
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
        }
      }
    },
  };
}

function currentOwner(): RunOwner {
  return { pid: process.pid, host: hostname() };
}

/** True when the run's owner is another process on this host that is still alive. */
function ownedElsewhere(owner: RunOwner | undefined): boolean {
  if (!owner || owner.host !== hostname() || owner.pid === process.pid) return false;
  return isProcessAlive(owner.pid);
}
