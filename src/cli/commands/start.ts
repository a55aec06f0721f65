import { loadConfig, type Config } from '../../config/load.js';
import type { Logger } from '../../util/logger.js';
import { displayPath } from '../../engine/flow/load.js';
import type { Flow } from '../../engine/flow/types.js';
import { createCronScheduler } from '../../engine/schedule/cron-scheduler.js';
import type { FireFn, Scheduler } from '../../engine/schedule/types.js';
import { FlowError, MsgflowError } from '../../api/errors.js';
import { defaultHostId, describeHolder, LeaseOwner } from '../../engine/run/ownership.js';
import { defaultLeaseTtlMs } from '../../engine/run/ownership.js';
import { flowSource } from '../../runtime/project-engine.js';
import { formatReload, Reloader, watchProject } from '../../runtime/reload.js';
import { createRuntime, type Runtime } from '../../runtime/runtime.js';
import { identityOf } from '../../runtime/clients.js';
import { startNotificationConsumers, type NotificationConsumers } from '../../runtime/notifications/consumers.js';
import { clearDaemonUi, recordDaemonUi } from '../../ui/daemon-address.js';
import type { UiServer } from '../../ui/server.js';
import { parseCommand, parsePositiveInt } from '../args.js';
import type { TimerSource } from '../../engine/schedule/types.js';
import type { ItemWorkers } from '../../runtime/bullmq/workers.js';
import { EXIT } from '../exit-codes.js';
import { configOptions, cliReporter, formatCliError, type Io } from '../output.js';
import { stopExitCode } from '../signals.js';

/** Signals that stop the daemon gracefully. SIGHUP reloads instead (see {@link daemonSignals}). */
const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];

/**
 * The daemon's signal handling, installed before anything is printed: until
 * Node has a handler, SIGHUP's default action kills the process, and a
 * supervisor may send it as soon as it sees the "started" line. `stopped`
 * resolves with the first stop signal; each SIGHUP calls the reload given to
 * `onHangup` (one that came earlier runs once it is given: the Unix daemon
 * convention). The interval keeps the process up meanwhile: with nothing
 * scheduled and no local service, nothing else holds the event loop, and Node
 * would exit (code 13, an unsettled top-level await) while a supervisor
 * restarts it and startup flows run again.
 */
function daemonSignals(): { stopped: Promise<NodeJS.Signals>; onHangup(reload: () => void): void; close(): void } {
  let reload: (() => void) | undefined;
  let missed = false;
  const hangup = () => {
    if (reload) reload();
    else missed = true;
  };
  const keepAlive = setInterval(() => {}, 1 << 30);
  let stop!: (sig: NodeJS.Signals) => void;
  const stopped = new Promise<NodeJS.Signals>((resolve) => (stop = resolve));
  const close = () => {
    for (const s of STOP_SIGNALS) process.off(s, stop);
    process.off('SIGHUP', hangup);
    clearInterval(keepAlive);
  };
  for (const s of STOP_SIGNALS) process.on(s, stop);
  process.on('SIGHUP', hangup);
  return {
    stopped: stopped.finally(close),
    onHangup(fn) {
      reload = fn;
      if (missed) fn();
    },
    // Start-up failed: the listeners and the interval must not hold the process.
    close,
  };
}

/** The daemon's runtime, holding the one-daemon-per-store lease; a FlowError DAEMON_RUNNING when another daemon has it. */
async function openDaemon(config: Config, listen: boolean, io: Io): Promise<{ runtime: Runtime; daemon?: LeaseOwner } | FlowError> {
  let daemon: LeaseOwner | undefined;
  try {
    const runtime = await createRuntime({
      config,
      command: 'start',
      listen,
      redactor: io.redactor,
      beforeListen: async (store) => {
        // With BullMQ, replicas are the point: each slot is one job, taken by one of them.
        if (config.executor.driver === 'bullmq') return;
        const owner = new LeaseOwner({ store, hostId: defaultHostId(), ttlMs: defaultLeaseTtlMs() }, { label: 'msgflow start' });
        const claim = await owner.claim('daemon');
        if (!claim.ok) throw new FlowError('DAEMON_RUNNING', { holder: describeHolder(claim.holder) });
        owner.startHeartbeat();
        daemon = owner;
      },
    });
    return { runtime, daemon };
  } catch (e) {
    // Start-up failed after the claim (a plugin that does not load, a busy port): the next start must not find it taken.
    await daemon?.release();
    if (e instanceof FlowError && e.code === 'DAEMON_RUNNING') return e;
    throw e;
  }
}

/** Starts the notification consumers (docs/notifications.md) and says how each instance is consumed. */
async function consumeNotifications(runtime: Runtime, flows: readonly Flow[], logger: Logger, io: Io): Promise<NotificationConsumers> {
  const consumers = await startNotificationConsumers({
    ...runtime,
    flows,
    identityFor: (name) => identityOf(runtime.config, name),
    logger,
  });
  for (const c of consumers.instances) {
    io.out(
      `msgflow: notifications of ${c.name}: ${c.mode === 'poll' ? 'polling receiveNotification' : `webhook receiver on ${consumers.webhookUrl}`}`,
    );
  }
  return consumers;
}

/**
 * Serves the dashboard unless --no-ui, and records its address (or why there
 * is none) in the store: where `msgflow run` beside this daemon hands its
 * runs (src/cli/daemon-run.ts).
 */
async function openDashboard(runtime: Runtime, off: boolean, io: Io, logger: Logger): Promise<UiServer | undefined> {
  let dashboard: UiServer | undefined;
  let reason = off ? 'started with --no-ui' : undefined;
  if (!off) {
    try {
      // Loaded only when served: --no-ui daemons (and workers) skip the dashboard's and metrics' modules.
      const { serveDashboard } = await import('../../ui/serve.js');
      dashboard = await serveDashboard(runtime, {}, logger);
      io.out(`msgflow: dashboard on ${dashboard.url}`);
    } catch (e) {
      // A busy port must not keep the flows from running; an unsafe bind (a config error) stops the start.
      if (!(e instanceof MsgflowError && e.code === 'PORT_IN_USE')) throw e;
      io.err(`${formatCliError(e)}; running without the dashboard`);
      reason = `ui.port ${runtime.config.ui.port} was in use`;
    }
  }
  await recordDaemonUi(runtime.store, {
    url: dashboard?.url ?? null,
    reason,
    pid: process.pid,
    host: defaultHostId(),
    startedAt: Date.now(),
  });
  return dashboard;
}

/** Resumes unfinished runs, then schedules every flow with on.schedule / on.startup. */
async function scheduleFlows(
  runtime: Runtime,
  flows: Flow[],
  dist: Distributed | undefined,
  io: Io,
): Promise<{ scheduler: Scheduler; fireFor: (flow: Flow) => FireFn }> {
  const resumed = await runtime.engine.resumeUnfinished(flows);
  if (resumed.length > 0) io.out(`msgflow: resumed ${resumed.length} unfinished run(s)`);
  const scheduler = createCronScheduler({
    bus: runtime.bus,
    state: runtime.store.kv('scheduler'),
    clock: runtime.clock,
    isBusy: (flow) => runtime.engine.activeRuns().some((r) => r.flow === flow),
    // In bullmq mode the slots come from BullMQ job schedulers: each fires on one replica.
    ...(dist ? { timer: dist.timer } : {}),
  });
  const fireFor =
    (flow: Flow): FireFn =>
    async ({ trigger }) => {
      const handle = await runtime.engine.start(flow, { trigger });
      await handle.done;
    };
  for (const flow of flows) if (flow.on.schedule || flow.on.startup) scheduler.add(flow, fireFor(flow));
  await scheduler.start();
  await dist?.start();
  for (const s of scheduler.status()) {
    io.out(
      `msgflow: ${s.flow}: next run ${s.next ? new Date(s.next).toISOString() : '(none)'}${s.timezone ? ` (${s.cron}, ${s.timezone})` : s.cron ? ` (${s.cron})` : ''}`,
    );
  }
  return { scheduler, fireFor };
}

/** Runs a reload and reports it: problems on stderr, the summary line on stdout. */
async function reportReload(reloader: Reloader, io: Io): Promise<void> {
  try {
    const { errors, line } = formatReload(await reloader.reload());
    for (const e of errors)
      io.err(
        e
          .split('\n')
          .map((l) => `msgflow: ${l}`)
          .join('\n'),
      );
    io.out(`msgflow: ${line}`);
  } catch (e) {
    io.err(`${formatCliError(e)} (reload failed; the running flows stay)`);
  }
}

/** What `msgflow start` adds in bullmq mode: schedules as BullMQ job schedulers, and item workers unless --no-work. */
interface Distributed {
  timer: TimerSource;
  start(): Promise<void>;
  close(): Promise<void>;
}

async function distributed(runtime: Runtime, values: Record<string, unknown>, logger: Logger, io: Io): Promise<Distributed> {
  // Loaded only in bullmq mode: a local daemon starts faster without BullMQ.
  const [{ bullmqTarget }, { bullmqTimers }, { startItemWorkers }] = await Promise.all([
    import('../../runtime/bullmq/names.js'),
    import('../../runtime/bullmq/schedules.js'),
    import('../../runtime/bullmq/workers.js'),
  ]);
  const timers = bullmqTimers(bullmqTarget(runtime.config), logger);
  let workers: ItemWorkers | undefined;
  return {
    timer: timers.timer,
    async start() {
      await timers.start();
      if (values['no-work']) return;
      const concurrency = parsePositiveInt(values.concurrency as string | undefined, '--concurrency') ?? 8;
      workers = await startItemWorkers({ runtime, concurrency, logger });
      io.out(`msgflow: working items of ${workers.identities.length} instance queue(s), ${concurrency} at once each`);
    },
    async close() {
      await workers?.close();
      await timers.close();
    },
  };
}

/**
 * `msgflow start`: the daemon. Order matters: the local service listens
 * first (flows may call it), then unfinished runs resume, then the scheduler
 * starts (catching up missed slots and startup runs). SIGHUP, and with
 * --watch any change of config.yaml or flows/, reloads (see runtime/reload.ts).
 */
export async function start(argv: string[], io: Io): Promise<number> {
  const { values } = parseCommand('start', argv, false);
  const config = loadConfig(values.config ?? 'config.yaml', configOptions(io));
  const listen = !values['no-listen'] && config.local !== undefined;
  const bullmq = config.executor.driver === 'bullmq';
  // One daemon per store, across processes and hosts: a second one would fire every schedule twice.
  const opened = await openDaemon(config, listen, io);
  if (opened instanceof FlowError) {
    io.err(formatCliError(opened));
    return EXIT.USAGE;
  }
  const { runtime, daemon } = opened;
  // A daemon's output goes to a journal: plain progress lines, never a bar.
  const reporter = cliReporter(io, values, config, runtime.bus, { tty: false });
  let dashboard: UiServer | undefined;
  let consumers: NotificationConsumers | undefined;
  let watcher: { close(): void } | undefined;
  const signals = daemonSignals();
  let dist: Distributed | undefined;
  try {
    dist = bullmq ? await distributed(runtime, values, reporter.logger, io) : undefined;
    if (listen) {
      const host = await runtime.local();
      if (host.mode === 'owner' && host.url) io.out(`msgflow: local service listening on ${host.url}`);
    }
    dashboard = await openDashboard(runtime, values['no-ui'] === true, io, reporter.logger);
    const { flows, errors } = runtime.flows();
    for (const e of errors) io.err(e.message);
    if (errors.length > 0) io.err(`msgflow: ${errors.length} flow error(s); the other flows run (see msgflow validate)`);
    const { scheduler, fireFor } = await scheduleFlows(runtime, flows, dist, io);
    consumers = await consumeNotifications(runtime, flows, reporter.logger, io);
    io.out(
      `msgflow: started; ${scheduler.status().length} flow(s) scheduled, ${flows.filter((f) => f.on.notification).length} triggered by notifications, ${flows.length} loaded. Ctrl-C stops.`,
    );
    // config.file is absolute: reloads read the file this daemon started from, whatever the cwd.
    const reloader = new Reloader({ runtime, scheduler, configPath: config.file, configOptions: configOptions(io), flows, fireFor });
    // A store outage interrupts the runs that need it: they resume by themselves once it answers again.
    runtime.engine.resumeAfterOutages(() => reloader.current());
    const reload = () => void reportReload(reloader, io);
    if (values.watch) {
      const source = flowSource(config, runtime.registry);
      watcher = watchProject(config.file, source.dir, reload);
      io.out(`msgflow: watching ${displayPath(config.file, config.cwd)} and ${displayPath(source.dir, config.cwd)}; a change reloads`);
    }
    signals.onHangup(reload);
    const signal = await signals.stopped;
    io.err(`msgflow: ${signal}: stopping; running items finish or are checkpointed`);
    watcher?.close();
    await scheduler.stop();
    return stopExitCode(signal);
  } finally {
    signals.close();
    watcher?.close();
    await clearDaemonUi(runtime.store, process.pid, defaultHostId()).catch(() => {});
    await dashboard?.close();
    // No new notification is taken once stopping; those taken are recorded (their runs resume).
    await consumers?.stop();
    await dist?.close();
    // Runs stop first; then the daemon's claim goes, while the store is still open.
    await runtime.engine.shutdown('msgflow start stopping');
    await daemon?.release();
    await runtime.close();
    reporter.close();
  }
}
