/**
 * Public types of the runner: what `createEngine` takes and returns.
 */
import type { InstanceApi } from '../../api/types.js';
import type { EngineStore, RunRecord, RunTrigger, StepRecord } from '../../store/types.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../action.js';
import type { EngineBus } from '../events.js';
import type { Flow } from '../flow-types.js';
import type { ActionRegistry } from '../registry/index.js';

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
  /** @default a logger that emits `log` events on the bus */
  logger?: Logger;
  /** Process environment, for input resolution. @default process.env */
  env?: Record<string, string | undefined>;
  /** Project root (config file's directory), for `ctx.resolvePath` when a flow has no baseDir. */
  baseDir: string;
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
  /** Jitter source (tests make it deterministic). @default Math.random */
  random?: () => number;
  /** Input resolution. @default resolveInputs of the flow loader */
  resolveInputs?: (flow: Flow, overrides: Record<string, string>) => Promise<Record<string, unknown>>;
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
}

export interface RunHandle {
  runId: string;
  /** Settles when the run ends: succeeded, failed or interrupted (never rejects). */
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
  /** Run history, newest first; active runs show live counts. */
  listRuns(query?: { flow?: string; limit?: number }): Promise<RunRecord[]>;
  getRun(id: string): Promise<RunRecord | undefined>;
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
