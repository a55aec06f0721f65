/**
 * Public types of the runner: what `createEngine` takes and returns.
 */
import type { Pool } from '../../util/pool.js';
import type { InstanceApi } from '../../api/types.js';
import type { EngineStore, Lease, RunParent, RunPlan, RunRecord, RunTrigger, StepRecord } from '../../store/types.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../action.js';
import type { EngineBus } from '../events.js';
import type { Flow } from '../flow/types.js';
import type { ActionRegistry } from '../registry/registry.js';
import type { ItemExecutor } from './executor.js';
import type { PruneResult } from './retention.js';
import type { EngineTracer } from './tracing.js';

export interface EngineOptions {
  store: EngineStore;
  registry: ActionRegistry;
  bus: EngineBus;
  /** Time source of retries, timeouts and durable waits. @default systemClock */
  clock?: Clock;
  /** The API client of an instance named in config.yaml (called once per run, when an action first needs it). */
  clientFor(instanceName: string): InstanceApi;
  /**
   * The identity of an instance named in config.yaml (see ActionContext.instance):
   * what per-instance state is keyed by. @default the name itself
   */
  identityFor?(instanceName: string): string;
  /**
   * Base URL of msgflow's local service, for `${{ local.url }}` in flows (so a
   * flow never writes the port). Undefined without a `local:` section.
   */
  localUrl?: string;
  /** @default a logger that emits `log` events on the bus */
  logger?: Logger;
  /** Project root (config file's directory), for `ctx.resolvePath` when a flow has no baseDir. */
  baseDir: string;
  /** config.yaml's named pools of instances (ActionContext.pools: a broadcast's `pool: <name>`). @default none */
  pools?: Readonly<Record<string, Pool>>;
  /**
   * Where `ctx.resolvePath(p)` leads, `base` being the project root: `msgflow
   * test` maps every path into the case's sandbox. @default path.resolve(base, p)
   */
  resolvePath?(base: string, p: string): string;
  /** How long `shutdown()` lets in-flight items finish before marking runs interrupted anyway. @default 10000 */
  shutdownGraceMs?: number;
  /**
   * Wait used when a RateLimitError does not say how long (retryAfterMs 0).
   * @default 1000
   */
  defaultRateLimitWaitMs?: number;
  /**
   * How often (real time) progress of a forEach step is written to the store
   * while it runs, so other processes (`msgflow runs`) see it. @default 1000
   */
  progressSaveIntervalMs?: number;
  /**
   * How often (real time) a durable wait that can be lifted (`lifted`, e.g.
   * checkAccount's instance-wide pause) reads the store to see whether it was:
   * the delay between `msgflow pauses lift` and the run calling the instance
   * again. @default 1000
   */
  waitRecheckMs?: number;
  /** Jitter source (tests make it deterministic). @default Math.random */
  random?: () => number;
  /** Input resolution. @default resolveInputs of the flow loader */
  resolveInputs?: (flow: Flow, overrides: Record<string, string>) => Promise<Record<string, unknown>>;
  /** This machine's id in run ownership leases. @default MSGFLOW_HOST_ID, else the hostname */
  hostId?: string;
  /**
   * How long a run's ownership lasts without a heartbeat (renewed every
   * third of it): a crashed owner on another host blocks its run this long.
   * @default MSGFLOW_LEASE_TTL_MS, else 30000
   */
  leaseTtlMs?: number;
  /** A run whose process died this many times is marked failed instead of resumed again. @default 3 */
  maxCrashes?: number;
  /** After a store outage: how often runs it interrupted are tried again while some are left (real time). @default 2000 */
  outageRetryMs?: number;
  /**
   * Where forEach items run: in this process, or on BullMQ workers
   * (config.yaml `executor:`). @default the local executor
   */
  executor?: ItemExecutor;
  /**
   * The loaded flow of a name, for sub-flow steps (`uses: flow/<name>`).
   * @default none: a sub-flow step fails with FLOW_NOT_FOUND
   */
  flowFor?(name: string): Flow | undefined;
  /**
   * How often (real time) a sub-flow step looks at a child run that another
   * process executes, or whose concurrency slot is busy. @default 500
   */
  subflowPollMs?: number;
  /**
   * The value of `${{ secrets.NAME }}` (config.yaml `secrets:`): asked when a
   * run that names the secret starts; the runtime hides every value it hands
   * out from what it prints and answers. @default none (every secret reads undefined)
   */
  secret?(name: string): string | undefined;
  /**
   * What the engine keeps with a run (its log lines, errors, a single step's
   * output) goes through it, so a secret's value is never stored.
   * @default none (kept as is)
   */
  redactor?: EngineRedactor;
  /** Traces runs, steps, items and client calls (runtime/telemetry.ts, config.yaml telemetry:). @default none: nothing traced */
  tracer?: EngineTracer;
}

/** The part of the runtime's Redactor (util/secrets.ts) the engine uses. */
export interface EngineRedactor {
  scrub(text: string): string;
  scrubValue<T>(value: T): T;
}

/** What `msgflow run` compares to decide whether an unfinished run is the same run. */
export interface RunFingerprint {
  inputsHash: string;
  flowHash: string;
}

export interface CancelResult {
  run: RunRecord;
  /** True when the run's owner was asked to stop (it marks the run `cancelled` at its next item boundary). */
  pending: boolean;
  /** The owner in another process, when there is one. */
  holder?: Lease;
}

export interface StartOptions {
  /** `--input key=value` overrides, coerced by the input's `type`. */
  inputs?: Record<string, string>;
  /**
   * Dry run: inputs are resolved and every step's `if`, `forEach` and `with`
   * are evaluated and validated against the action's input schema, per item,
   * but NO action is called (not even read-only ones: a dry run must never
   * reach an instance). A step's output is then `{ dryRun: true, input }`.
   * @default false
   */
  dryRun?: boolean;
  /** @default manual */
  trigger?: Exclude<RunTrigger, 'resume'>;
  /** The campaign plan the run writes (with dryRun) or applies. @default none */
  plan?: RunPlan;
  /** The notification that triggered the run: `event` in its expressions (see RunRecord.event). */
  event?: Record<string, unknown>;
  /**
   * The run's id instead of a fresh one: the notification consumer derives it
   * from the notification, so a notification redelivered after a crash finds
   * its run instead of starting a second one. @default a new id
   */
  runId?: string;
  /**
   * The run's concurrency key value (the notification dispatcher computes it,
   * defaulting to the notification's chat); `undefined` given explicitly
   * means none. @default the flow's `concurrency.key` evaluated at start
   */
  concurrencyKey?: string;
  /**
   * Typed input values (a sub-flow step's `with:`), checked against the
   * declared types instead of coerced from text; inputs not given resolve as usual.
   */
  values?: Record<string, unknown>;
  /** The run and step that start this run as a sub-flow (trigger `subflow`). */
  parent?: RunParent;
  /** The schedule slot a `backfill` run stands for (ms since the epoch). */
  slot?: number;
}

export interface RunHandle {
  runId: string;
  /** Settles when the run ends: succeeded, failed, interrupted or cancelled (never rejects). */
  done: Promise<RunRecord>;
}

export interface Engine {
  /** Starts a run of `flow` now. Rejects (before any run is recorded) when inputs cannot be resolved. */
  start(flow: Flow, opts?: StartOptions): Promise<RunHandle>;
  /**
   * Resumes every run left running, waiting or interrupted (by a crash or a
   * shutdown) whose flow is in `flows`: completed items are not redone and
   * durable waits sleep only what is left.
   */
  resumeUnfinished(flows: readonly Flow[]): Promise<RunHandle[]>;
  /**
   * From now on, each run this engine has to interrupt because the store
   * stopped answering (or its claim lapsed meanwhile) is resumed from its
   * checkpoint once the store answers again; `flows` gives the flows loaded
   * at that moment. The daemon calls it. Returns what stops it.
   */
  resumeAfterOutages(flows: () => readonly Flow[]): () => void;
  /** Resumes one unfinished run of `flow`; throws RUN_LIVE when a live process owns it. */
  resume(runId: string, flow: Flow): Promise<RunHandle>;
  /**
   * `msgflow runs retry`: a new run of a finished run's flow, with its inputs,
   * that redoes only what failed (failed forEach items, failed single steps,
   * steps never reached); what succeeded is carried over, not redone.
   */
  retry(runId: string, flow: Flow): Promise<RunHandle>;
  /** Hashes of the inputs (as `--input` overrides resolve now) and of the flow file. */
  fingerprint(flow: Flow, overrides?: Record<string, string>): Promise<RunFingerprint>;
  /** The live owner of a run (in any process, on any host), if any. */
  liveOwner(runId: string): Promise<Lease | undefined>;
  /** Unfinished runs of a flow, newest first, with the status shown to users (a dead owner's run is `interrupted`). */
  unfinished(flow: string): Promise<RunRecord[]>;
  /**
   * Cancels a run: one that is not executing becomes `cancelled` at once; a
   * running one (here or in another process) stops at its next item
   * boundary, its state kept.
   */
  cancel(runId: string): Promise<CancelResult>;
  /** This machine's id in ownership leases. */
  readonly hostId: string;
  /** Run history, newest first; active runs show live counts; runs whose owner is gone show `interrupted`. */
  listRuns(query?: { flow?: string; limit?: number }): Promise<RunRecord[]>;
  getRun(id: string): Promise<RunRecord | undefined>;
  /**
   * Deletes the finished runs that ended more than `olderThanMs` ago (on the
   * engine's clock), with their items, journals and state; unfinished runs
   * are kept. `dryRun` counts them instead. See engine/run/retention.ts.
   */
  pruneRuns(o: { olderThanMs: number; flow?: string; dryRun?: boolean }): Promise<PruneResult>;
  /** Step records of a run; a running forEach step shows live done/failed counts. */
  getSteps(id: string): Promise<StepRecord[]>;
  /** Runs executing in this process (snapshots). */
  activeRuns(): RunRecord[];
  /**
   * Graceful stop: aborts every run's `ctx.signal`, lets in-flight items
   * finish (their results are recorded) for up to `shutdownGraceMs`, and
   * leaves the runs `interrupted`, resumable by `resumeUnfinished`.
   */
  shutdown(reason?: string): Promise<void>;
}
