/**
 * What a daemon (createDaemon, src/runtime/daemon.ts) takes, tells and
 * answers. Its events carry data, not sentences: `msgflow start` words them
 * (src/cli/commands/start.ts), an embedding program logs them as it likes.
 */
import type { FlowError, MsgflowError } from '../../api/errors.js';
import type { Config, LoadConfigOptions } from '../../config/load.js';
import type { EngineBus } from '../../engine/events.js';
import type { ScheduleStatus } from '../../engine/schedule/types.js';
import type { RunStatus } from '../../store/types.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/logger.js';
import type { ConsumedInstance } from '../notifications/consumers.js';
import type { ReloadSummary } from '../reload.js';
import type { RuntimeOptions } from '../runtime.js';

export interface DaemonOptions {
  /** The project: its config file (read and validated as `msgflow validate` does), or a config loaded already. */
  config: string | Config;
  /** How config.yaml is read, at start (a path) and at each reload: environment, working directory. @default process.env and cwd */
  configOptions?: LoadConfigOptions;
  /** Open the local service's HTTP port (a config with `local:`). @default true */
  listen?: boolean;
  /** Serve the dashboard and its API (config.yaml `ui:`); a busy port is reported and the daemon goes on without it. @default true */
  ui?: boolean;
  /** executor bullmq: work forEach items in this process too (else only `msgflow worker` processes do). @default true */
  work?: boolean;
  /** executor bullmq: items worked at once per instance queue. @default 8 */
  concurrency?: number;
  /** Reload whenever config.yaml or a flow file changes. @default false */
  watch?: boolean;
  /** Told what the daemon does as it does it (see DaemonEvent). @default nothing is told */
  onEvent?(e: DaemonEvent): void;
  /** The engine's events (runs, steps, schedules, log lines). @default a bus of its own (see Daemon.bus) */
  bus?: EngineBus;
  /** Where the daemon's own parts (dashboard, notification consumers, BullMQ) log. @default log events on the bus */
  logger?: Logger;
  /** @default the system clock */
  clock?: Clock;
  /** Which program this is, recorded in the local service's data-directory lock. @default 'embedded' */
  command?: string;
  /** More options of the runtime under the daemon (e.g. waitRecheckMs, port). */
  runtime?: Omit<RuntimeOptions, 'config' | 'command' | 'listen' | 'beforeListen' | 'bus' | 'clock'>;
}

/** What a daemon tells as it starts, reloads and serves (DaemonOptions.onEvent). */
export type DaemonEvent =
  /** The local service listens (this process owns its data directory). */
  | { type: 'local-service'; url: string }
  | { type: 'dashboard'; url: string }
  /** The dashboard's port was in use (PORT_IN_USE): the flows run without it. */
  | { type: 'dashboard-unavailable'; error: MsgflowError }
  /** Flow files that fail validation (each error names file:line:col); the other flows run. */
  | { type: 'flow-errors'; errors: FlowError[] }
  /** Unfinished runs resumed at start. */
  | { type: 'resumed'; runs: number }
  /** executor bullmq: this process works the items of these instance queues. */
  | { type: 'working'; queues: number; concurrency: number }
  /** Every scheduled flow with its next run. */
  | { type: 'scheduled'; schedules: ScheduleStatus[] }
  /** How each instance's notifications are consumed. */
  | { type: 'notifications'; instances: readonly ConsumedInstance[]; webhookUrl?: string }
  /** Start-up is over: everything above runs. */
  | { type: 'started'; status: DaemonStatus }
  /** With `watch`: the files whose change reloads. */
  | { type: 'watching'; configFile: string; flowsDir: string }
  | { type: 'reloaded'; summary: ReloadSummary }
  /** A reload that could not be done at all; the running flows stay. */
  | { type: 'reload-failed'; error: unknown };

export type DaemonState = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

/** A daemon now (Daemon.status()). */
export interface DaemonStatus {
  state: DaemonState;
  /** This process and host (what the one-daemon lease records). */
  pid: number;
  host: string;
  startedAt?: number;
  /** The local service's address, when this daemon serves it. */
  localService?: string;
  /** The dashboard's address, or null with why (`dashboardOff`). */
  dashboard: string | null;
  dashboardOff?: string;
  flows: {
    /** The flows loaded (the last good version of each). */
    loaded: number;
    /** Scheduled by cron or `on.startup`. */
    scheduled: number;
    /** Started by notifications. */
    notificationTriggered: number;
  };
  schedules: ScheduleStatus[];
  notifications: { instances: readonly ConsumedInstance[]; webhookUrl?: string };
  /** Runs executing in this process. */
  activeRuns: Array<{ runId: string; flow: string; status: RunStatus }>;
  /** executor bullmq: the queues this process works, unless started not to. */
  work?: { queues: number; concurrency: number };
  lastReload?: { at: number; summary: ReloadSummary };
  /** Whether a change of config.yaml or a flow file reloads. */
  watching: boolean;
  /** config.yaml `store.retention` (ms): finished runs older than this are deleted hourly. Absent: runs are kept. */
  retentionMs?: number;
}
