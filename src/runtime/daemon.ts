/**
 * The daemon as a library: what `msgflow start` runs, for any program to
 * start, reload, ask and stop. It holds the one-daemon-per-store lease,
 * serves the local service and the dashboard, resumes unfinished runs,
 * schedules the flows, consumes notifications, resumes the runs a store
 * outage interrupted, and with executor bullmq fires each schedule on one
 * replica and works items. Order matters at start: the local service listens
 * first (flows may call it), then unfinished runs resume, then the scheduler
 * starts (catching up missed slots and startup runs).
 *
 * @example
 * const daemon = createDaemon({ config: 'config.yaml', ui: false });
 * await daemon.start();
 * const run = await daemon.client.start('check-leads');
 * console.log((await run.done).status);
 * await daemon.stop();
 */
import { MsgflowError } from '../api/errors.js';
import { identityOf } from '../config/identity.js';
import { loadConfig, type Config } from '../config/load.js';
import { createBus, type EngineBus } from '../engine/events.js';
import { busLogger } from '../engine/run/engine.js';
import type { LeaseOwner } from '../engine/run/ownership.js';
import { defaultHostId } from '../engine/run/ownership.js';
import type { Logger } from '../util/logger.js';
import { openDashboard, type DaemonDashboard } from './daemon/dashboard.js';
import { distributed, type Distributed } from './daemon/distributed.js';
import { openDaemonRuntime } from './daemon/lease.js';
import { scheduleFlows, type Scheduling } from './daemon/schedule.js';
import { startAlertMonitor, type AlertMonitor } from '../engine/alerts/monitor.js';
import { startRetention, type Retention } from '../engine/run/retention.js';
import type { DaemonEvent, DaemonOptions, DaemonState, DaemonStatus } from './daemon/types.js';
import { createInProcessEngineClient, type InProcessEngineClient } from './engine-client/in-process.js';
import { startNotificationConsumers, type NotificationConsumers } from './notifications/consumers.js';
import { flowSource } from './project-engine.js';
import { Reloader, watchProject, type ReloadSummary } from './reload.js';
import type { Runtime } from './runtime.js';

export type { DaemonEvent, DaemonOptions, DaemonState, DaemonStatus } from './daemon/types.js';

export interface Daemon {
  /** The engine's events (runs, steps, schedules, log lines): subscribe before start() to see them all. */
  readonly bus: EngineBus;
  /** The runtime under the daemon (config, store, engine), once started. */
  readonly runtime: Runtime;
  /** Runs in this daemon's engine, from its current flows (the last good version of each), once started. */
  readonly client: InProcessEngineClient;
  /** Starts everything; rejects with FlowError DAEMON_RUNNING (naming the holder) when a daemon runs on the store already. */
  start(): Promise<DaemonStatus>;
  /**
   * Re-reads config.yaml and the flows and applies what changed ("the last
   * good version runs": see src/runtime/reload.ts); what SIGHUP does.
   */
  reload(): Promise<ReloadSummary>;
  /**
   * Stops gracefully: no new schedule fires nor notification is taken,
   * running items finish or are checkpointed (their runs resume at the next
   * start), the lease goes, the store closes. Safe to call more than once.
   */
  stop(reason?: string): Promise<void>;
  status(): DaemonStatus;
}

/** @see Daemon */
export function createDaemon(options: DaemonOptions): Daemon {
  return new MsgflowDaemon(options);
}

class MsgflowDaemon implements Daemon {
  readonly bus: EngineBus;
  private state: DaemonState = 'new';
  private starting: Promise<DaemonStatus> | undefined;
  private stopping: Promise<void> | undefined;
  private startedAt: number | undefined;
  private rt: Runtime | undefined;
  private lease: LeaseOwner | undefined;
  private logger!: Logger;
  private dist: Distributed | undefined;
  private localUrl: string | undefined;
  private dashboard: DaemonDashboard | undefined;
  private scheduling: Scheduling | undefined;
  private consumers: NotificationConsumers | undefined;
  private alerts: AlertMonitor | undefined;
  private retention: Retention | undefined;
  private reloader: Reloader | undefined;
  private watcher: { close(): void } | undefined;
  private stopOutages: (() => void) | undefined;
  private engineClient: InProcessEngineClient | undefined;
  private lastReload: DaemonStatus['lastReload'];

  constructor(private readonly o: DaemonOptions) {
    this.bus = o.bus ?? createBus();
  }

  get runtime(): Runtime {
    return this.rt ?? notStarted('runtime');
  }

  get client(): InProcessEngineClient {
    return this.engineClient ?? notStarted('client');
  }

  start(): Promise<DaemonStatus> {
    if (this.state !== 'new') throw new MsgflowError('USAGE', { reason: `a daemon starts once (this one is ${this.state})` });
    this.state = 'starting';
    this.starting = this.startNow().catch(async (e: unknown) => {
      await this.teardown('start-up failed').catch(() => {});
      this.state = 'stopped';
      throw e;
    });
    return this.starting;
  }

  private readonly tell = (e: DaemonEvent) => this.o.onEvent?.(e);

  private async startNow(): Promise<DaemonStatus> {
    const config = typeof this.o.config === 'string' ? loadConfig(this.o.config, this.o.configOptions) : this.o.config;
    const listen = (this.o.listen ?? true) && config.local !== undefined;
    const { runtime, lease } = await openDaemonRuntime({
      ...this.o.runtime,
      config,
      command: this.o.command ?? 'embedded',
      listen,
      bus: this.bus,
      ...(this.o.clock ? { clock: this.o.clock } : {}),
    });
    this.rt = runtime;
    this.lease = lease;
    this.logger = this.o.logger ?? busLogger(this.bus);
    if (config.executor.driver === 'bullmq') {
      const work = { work: this.o.work ?? true, concurrency: this.o.concurrency ?? 8 };
      this.dist = await distributed(runtime, { ...work, logger: this.logger, tell: this.tell });
    }
    if (listen) {
      const host = await runtime.local();
      if (host.mode === 'owner' && host.url) {
        this.localUrl = host.url;
        this.tell({ type: 'local-service', url: host.url });
      }
    }
    this.dashboard = await openDashboard(runtime, this.o.ui ?? true, this.logger, this.tell);
    await this.runFlows(runtime, config);
    this.state = 'running';
    this.startedAt = Date.now();
    this.tell({ type: 'started', status: this.status() });
    if (this.o.watch) this.watch(runtime);
    return this.status();
  }

  /** Schedules the flows, consumes their notifications, and keeps them current (reload, outage resume). */
  private async runFlows(runtime: Runtime, config: Config): Promise<void> {
    const { flows, errors } = runtime.flows();
    if (errors.length > 0) this.tell({ type: 'flow-errors', errors });
    // Before the scheduler: the schedules it finds missed are alerts.
    this.alerts = startAlertMonitor({
      engine: runtime.engine,
      store: runtime.store,
      bus: runtime.bus,
      clock: runtime.clock,
      logger: this.logger,
      flows: () => this.reloader?.current() ?? flows,
      notificationLagMs: config.alerts.notificationLagMinutes * 60_000,
    });
    // Finished runs older than store.retention go, now and every hour (off unless config.yaml sets it).
    const retentionMs = config.store.retention;
    if (retentionMs !== undefined)
      this.retention = startRetention({ store: runtime.store, clock: runtime.clock, logger: this.logger, bus: runtime.bus, retentionMs });
    const scheduling = await scheduleFlows(runtime, flows, this.dist, this.tell);
    this.scheduling = scheduling;
    this.consumers = await startNotificationConsumers({
      ...runtime,
      flows,
      identityFor: (name) => identityOf(runtime.config, name),
      logger: this.logger,
    });
    this.tell({ type: 'notifications', instances: this.consumers.instances, webhookUrl: this.consumers.webhookUrl });
    // config.file is absolute: reloads read the file this daemon started from, whatever the cwd.
    const reloader = new Reloader({
      runtime,
      scheduler: scheduling.scheduler,
      configPath: config.file,
      configOptions: this.o.configOptions,
      flows,
      fireFor: scheduling.fireFor,
    });
    this.reloader = reloader;
    // A store outage interrupts the runs that need it: they resume by themselves once it answers again.
    this.stopOutages = runtime.engine.resumeAfterOutages(() => reloader.current());
    this.engineClient = createInProcessEngineClient(runtime, { flows: () => reloader.current() });
  }

  private watch(runtime: Runtime): void {
    const { dir } = flowSource(runtime.config, runtime.registry);
    this.watcher = watchProject(runtime.config.file, dir, () => void this.reload().catch(() => {}));
    this.tell({ type: 'watching', configFile: runtime.config.file, flowsDir: dir });
  }

  async reload(): Promise<ReloadSummary> {
    const reloader = this.reloader;
    if (!reloader || this.state !== 'running')
      throw new MsgflowError('USAGE', { reason: `the daemon is ${this.state}: only a running daemon reloads` });
    try {
      const summary = await reloader.reload();
      this.lastReload = { at: Date.now(), summary };
      this.tell({ type: 'reloaded', summary });
      return summary;
    } catch (e) {
      this.tell({ type: 'reload-failed', error: e });
      throw e;
    }
  }

  stop(reason = 'the daemon is stopping'): Promise<void> {
    this.stopping ??= (async () => {
      // A start under way settles first: what it opened is then closed here (or was, if it failed).
      await this.starting?.catch(() => {});
      if (this.state === 'stopped') return;
      this.state = 'stopping';
      try {
        await this.teardown(reason);
      } finally {
        this.state = 'stopped';
      }
    })();
    return this.stopping;
  }

  /**
   * Closes what is open, in order: no new slot or notification is taken,
   * then runs stop (checkpointed), then the claim goes while the store is
   * still open, then the runtime closes. Every part is closed even when one
   * fails; the first failure is thrown after.
   */
  private async teardown(reason: string): Promise<void> {
    const failures: unknown[] = [];
    const attempt = async (op: () => unknown) => {
      try {
        await op();
      } catch (e) {
        failures.push(e);
      }
    };
    this.watcher?.close();
    await attempt(() => this.scheduling?.scheduler.stop());
    await attempt(() => this.dashboard?.close());
    // No new notification is taken once stopping; those taken are recorded (their runs resume).
    await attempt(() => this.consumers?.stop());
    this.alerts?.stop();
    await attempt(() => this.retention?.stop());
    await attempt(() => this.dist?.close());
    this.stopOutages?.();
    await attempt(() => this.engineClient?.close());
    await attempt(() => this.rt?.engine.shutdown(reason));
    await attempt(() => this.lease?.release());
    await attempt(() => this.rt?.close());
    if (failures.length > 0) throw failures[0];
  }

  status(): DaemonStatus {
    const flows = this.reloader?.current() ?? [];
    return {
      state: this.state,
      pid: process.pid,
      host: defaultHostId(),
      ...(this.startedAt !== undefined ? { startedAt: this.startedAt } : {}),
      ...(this.localUrl ? { localService: this.localUrl } : {}),
      dashboard: this.dashboard?.server?.url ?? null,
      ...(this.dashboard?.off ? { dashboardOff: this.dashboard.off } : {}),
      flows: {
        loaded: flows.length,
        scheduled: this.scheduling?.scheduler.status().length ?? 0,
        notificationTriggered: flows.filter((f) => f.on.notification).length,
      },
      schedules: this.scheduling?.scheduler.status() ?? [],
      notifications: { instances: this.consumers?.instances ?? [], webhookUrl: this.consumers?.webhookUrl },
      activeRuns: (this.rt?.engine.activeRuns() ?? []).map((r) => ({ runId: r.id, flow: r.flow, status: r.status })),
      ...(this.dist?.work() ? { work: this.dist.work() } : {}),
      ...(this.lastReload ? { lastReload: this.lastReload } : {}),
      watching: this.watcher !== undefined,
      ...(this.rt?.config.store.retention !== undefined ? { retentionMs: this.rt.config.store.retention } : {}),
    };
  }
}

function notStarted(what: string): never {
  throw new MsgflowError('USAGE', { reason: `the daemon's ${what} exists once it started: await daemon.start() first` });
}
