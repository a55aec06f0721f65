/**
 * The Scheduler contract: small enough that a distributed driver (e.g. a
 * BullMQ repeatable-job scheduler serving several machines) can replace the
 * embedded node-cron one without touching the engine or the CLI.
 */
import type { Flow } from '../flow/types.js';

/** Why a scheduled run starts. */
export type FireTrigger = 'schedule' | 'missed' | 'startup';

export interface FireInfo {
  /** The cron slot this run stands for (ms since the epoch); for `startup`, the start time. */
  scheduledAt: number;
  trigger: FireTrigger;
}

/**
 * Starts one run of a flow. The returned promise must settle when that run
 * ENDS (finished, failed or interrupted), not when it starts: the overlap
 * policy needs to know when the flow is free again.
 *
 * @example
 * scheduler.add(flow, async ({ trigger }) => {
 *   const handle = await engine.start(flow, { trigger });
 *   await handle.done;
 * });
 */
export type FireFn = (info: FireInfo) => Promise<void>;

/** What the scheduler knows about one flow, for `msgflow start` and status displays. */
export interface ScheduleStatus {
  flow: string;
  cron?: string;
  timezone?: string;
  /** Next live slot, ms since the epoch. */
  next?: number;
  /** Latest slot accounted for (run, queued, skipped or declared missed). */
  lastFire?: number;
  /** Runs started by the scheduler that have not ended. */
  active: number;
  /** Fires accepted but not started yet (queue policy, `missed: all`). */
  pending: number;
}

export interface Scheduler {
  /**
   * Registers a flow with `on.schedule` and/or `on.startup: true`. After
   * start() (a reload), its schedule counts from now and `on.startup` does not
   * fire: start-up runs belong to the process start.
   */
  add(flow: Flow, fire: FireFn): void;
  /**
   * Swaps the flow definition (and its fire function) of a scheduled flow, or
   * adds it. Runs already started keep the definition they started with; a
   * changed cron or timezone re-arms the timer, counting from now.
   */
  replace(flow: Flow, fire: FireFn): void;
  /** Unschedules a flow: its timer stops, its waiting fires are dropped; active runs go on. */
  remove(name: string): Promise<void>;
  /** Restores persisted state, handles missed slots and start-up runs, then arms the timers. */
  start(): Promise<void>;
  /** Disarms timers and starts nothing more; runs in flight are the engine's to stop. Pending fires stay persisted. */
  stop(): Promise<void>;
  /** Resolves once no scheduled run is active or pending (or the scheduler is stopped). */
  idle(): Promise<void>;
  status(): ScheduleStatus[];
}

/** A handle on a live timer. */
export interface CronTimer {
  stop(): void;
}

export interface TimerSpec {
  cron: string;
  /** Resolved IANA zone (never undefined here). */
  timezone: string;
  /** Flow name, for the timer library's logs. */
  name: string;
}

export interface TimerCallbacks {
  /** A live slot came. */
  tick(scheduledAt: number): void;
  /** The timer noticed it let a slot pass (event loop blocked, machine asleep). */
  missed?(scheduledAt: number): void;
}

/**
 * Where live slots come from. The default is node-cron; {@link clockTimer}
 * derives them from a Clock so tests make hours pass instantly.
 */
export type TimerSource = (spec: TimerSpec, callbacks: TimerCallbacks) => CronTimer;
