/**
 * EngineClient: what a program asks of a running msgflow, whether the engine
 * is in this process (createInProcessEngineClient) or in a daemon reached
 * over its dashboard's HTTP API (createHttpEngineClient). Both answer with
 * the API's shapes (a run as RunSummary, a step as StepDetail: owner hosts
 * and input hashes left out), so a caller does not care which it holds, and
 * one behavioural suite runs against both (test/daemon/engine-client.ts).
 */
import type { EngineEventName, EngineEvents } from '../../engine/events.js';
import type { BackfillSlot as EngineBackfillSlot } from '../../engine/schedule/backfill.js';
import type { RunPlan, RunStatus } from '../../store/types.js';
import type { PauseView } from '../../ui/api.js';
import type { RunSummary, StepDetail } from '../../ui/views.js';

/** A run as a client sees it: the record's shown fields (the dashboard API's RunSummary). */
export type RunView = RunSummary;
/** A step as a client sees it (the dashboard API's StepDetail: a large output cut to a preview). */
export type StepView = StepDetail;

/** One engine event of a followed run, as emitted on the engine's bus. */
export type FollowedEvent = { [K in EngineEventName]: { name: K; event: EngineEvents[K][0] } }[EngineEventName];

export interface FollowOptions {
  /**
   * Called with each engine event of the run (run, step and item events, its
   * log lines) as it happens, in order: `bus.emit(name, event)` replays them
   * on a bus of one's own (progress bars, log lines). @default none: only `done` tells
   */
  onEvent?(e: FollowedEvent): void;
}

export interface StartRunOptions extends FollowOptions {
  /** `-i key=value` overrides, validated and coerced by each input's type. @default {} */
  inputs?: Record<string, string>;
  /** A dry run: every step evaluated and validated, no action called. @default false */
  dryRun?: boolean;
  /** The notification a notification-triggered flow starts with (`event` in its expressions). @default none */
  event?: Record<string, unknown>;
  /** The campaign plan the run applies (`msgflow apply`), or writes (with dryRun; in this process only). @default none */
  plan?: RunPlan;
}

/** A run being followed: started, retried or found. */
export interface FollowedRun {
  readonly runId: string;
  readonly flow: string;
  /**
   * Settles once the run is no longer running or waiting (succeeded, failed,
   * cancelled, or interrupted: its process stopped) with the run as it ended.
   * Rejects only when the client lost what it talks to (DAEMON_API_UNREACHABLE:
   * the daemon went away; its store still knows how the run ends).
   */
  readonly done: Promise<RunView>;
  /** Stops following (no more events; `done` stays pending). The run goes on. */
  detach(): void;
}

export interface RunListQuery {
  /** Runs of this flow only. @default every flow */
  flow?: string;
  /** Runs in one of these statuses only (as shown: a dead owner's run is `interrupted`). @default any */
  status?: readonly RunStatus[];
  /** Newest first, at most this many (1 to 1000). @default 50 */
  limit?: number;
}

/** What a cancel did. */
export interface CancelOutcome {
  runId: string;
  /** The run's status after the request: `cancelled` at once, or still `running`/`waiting` while pending, or how it had already ended. */
  status: RunStatus;
  /** True when the run's owner was asked to stop (at its next item boundary, its state kept). */
  pending: boolean;
  /** The run had already ended (succeeded, failed, cancelled): nothing was done. */
  ended: boolean;
  /** The process that owns the pending run, where this client may say (in-process: yes; the HTTP API shows no owners). */
  owner?: { pid: number; host: string };
}

/** One slot of a backfill (engine/schedule/backfill.ts): the run it has, or is given. */
export type BackfillSlot = EngineBackfillSlot;

/** What a backfill decided: every slot of the range, those already run by an earlier backfill marked `existing`. */
export interface BackfillOutcome {
  flow: string;
  slots: BackfillSlot[];
}

/** An instance-wide pause (e.g. checkAccount's rate_limit_exceeded) in force: the dashboard API's pause without its store key and flag. */
export type InstancePause = Omit<PauseView, 'key' | 'active'>;

export interface EngineClient {
  /** What this client talks to: `in-process`, or the daemon's dashboard URL. */
  readonly target: string;
  /**
   * Starts a run of the flow named `flow` now and follows it (events from its
   * start on). Rejects, starting nothing, with FLOW_NOT_FOUND for a flow not
   * loaded and INPUT_ARG_INVALID naming the input for a bad one.
   */
  start(flow: string, opts?: StartRunOptions): Promise<FollowedRun>;
  /** Follows a run already started (events from now on; `done` at once for one that ended). RUN_NOT_FOUND for an unknown id. */
  follow(runId: string, opts?: FollowOptions): Promise<FollowedRun>;
  /** A run, or undefined for an unknown id. */
  getRun(runId: string): Promise<RunView | undefined>;
  /** The run's steps in order (live counts while one runs); [] for an unknown id. */
  getSteps(runId: string): Promise<StepView[]>;
  /** Run history, newest first. */
  listRuns(query?: RunListQuery): Promise<RunView[]>;
  /**
   * Cancels a run: one nobody executes is cancelled at once; a live one stops
   * at its next item boundary (`pending`). A run that already ended is left
   * as it is (`ended`). RUN_NOT_FOUND for an unknown id.
   */
  cancel(runId: string): Promise<CancelOutcome>;
  /**
   * A new run that redoes only what failed in a finished run, followed.
   * NOTHING_TO_RETRY for a run that succeeded; RUN_NOT_FOUND for an unknown id.
   */
  retry(runId: string, opts?: FollowOptions): Promise<FollowedRun>;
  /**
   * `msgflow backfill`: runs the flow's schedule slots in [`from`, `to`] (ms),
   * once each (a slot an earlier backfill ran is left as it is), marked
   * `trigger: backfill`, within the flow's concurrency. Answers once the slots
   * are decided; their runs go on in the engine. BACKFILL_INVALID for a flow
   * without a schedule, a reversed range or too many slots.
   */
  backfill(flow: string, range: { from: number; to: number }): Promise<BackfillOutcome>;
  /** The instance-wide pauses in force now. */
  pauses(): Promise<InstancePause[]>;
  /** Lifts the pauses of the instance named `instance` in config.yaml; how many were lifted. */
  liftPauses(instance: string): Promise<number>;
  /** Stops following every run this client follows (the runs go on); the client is not used after. */
  close(): Promise<void>;
}
