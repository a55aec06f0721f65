import { loadConfig } from '../../config/index.js';
import { createCronScheduler } from '../../engine/schedule/index.js';
import { FlowError, MsgflowError } from '../../api/errors.js';
import { defaultHostId, describeHolder, LeaseOwner } from '../../engine/run/index.js';
import { defaultLeaseTtlMs } from '../../engine/run/ownership.js';
import { createRuntime, type Runtime } from '../../runtime/runtime.js';
import type { Flow } from '../../engine/flow-types.js';
import type { Logger } from '../../util/logger.js';
import { identityOf } from '../../runtime/clients.js';
import { startNotificationConsumers, type NotificationConsumers } from '../../runtime/notifications/consumers.js';
import { clearDaemonUi, recordDaemonUi, serveDashboard, type UiServer } from '../../ui/index.js';
import { parseCommand } from '../args.js';
import { EXIT } from '../exit-codes.js';
import { configOptions, cliReporter, formatCliError, type Io } from '../output.js';

/** Signals that stop the daemon gracefully. SIGHUP too: a terminal closing (and, later, a reload) must not kill it mid-item. */
const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Resolves with the first stop signal. Keeps the process up meanwhile: with
 * nothing scheduled and no local service, nothing else holds the event loop,
 * and Node would exit (code 13, an unsettled top-level await) while a
 * supervisor restarts it and startup flows run again.
 */
function untilStopped(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const keepAlive = setInterval(() => {}, 1 << 30);
    const on = (sig: NodeJS.Signals) => {
      for (const s of STOP_SIGNALS) process.off(s, on);
      clearInterval(keepAlive);
      resolve(sig);
    };
    for (const s of STOP_SIGNALS) process.on(s, on);
  });
}

/** Starts the notification consumers (docs/notifications.md) and says how each instance is consumed. */
async function consumeNotifications(runtime: Runtime, flows: readonly Flow[], logger: Logger, io: Io): Promise<NotificationConsumers> {
  const consumers = await startNotificationConsumers({ ...runtime, flows, identityFor: (name) => identityOf(runtime.config, name), logger });
  for (const c of consumers.instances) {
    io.out(`msgflow: notifications of ${c.name}: ${c.mode === 'poll' ? 'polling receiveNotification' : `webhook receiver on ${consumers.webhookUrl}`}`);
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
      dashboard = await serveDashboard(runtime, {}, logger);
      io.out(`msgflow: dashboard on ${dashboard.url}`);
    } catch (e) {
      // A busy port must not keep the flows from running; an unsafe bind (a config error) stops the start.
      if (!(e instanceof MsgflowError && e.code === 'PORT_IN_USE')) throw e;
      io.err(`${formatCliError(e)}; running without the dashboard`);
      reason = `ui.port ${runtime.config.ui.port} was in use`;
    }
  }
  await recordDaemonUi(runtime.store, { url: dashboard?.url ?? null, reason, pid: process.pid, host: defaultHostId(), startedAt: Date.now() });
  return dashboard;
}

/**
 * `msgflow start`: the daemon. Order matters: the local service listens
 * first (flows may call it), then unfinished runs resume, then the scheduler
 * starts (catching up missed slots and startup runs).
 */
export async function start(argv: string[], io: Io): Promise<number> {
  const { values } = parseCommand('start', argv, false);
  const config = loadConfig(values.config ?? 'config.yaml', configOptions(io));
  const listen = !values['no-listen'] && config.local !== undefined;
  // One daemon per store, across processes and hosts: a second one would fire every schedule twice.
  let daemon: LeaseOwner | undefined;
  const runtime = await createRuntime({
    config,
    command: 'start',
    listen,
    beforeListen: async (store) => {
      const owner = new LeaseOwner({ store, hostId: defaultHostId(), ttlMs: defaultLeaseTtlMs() }, { label: 'msgflow start' });
      const claim = await owner.claim('daemon');
      if (!claim.ok) throw new FlowError('DAEMON_RUNNING', { holder: describeHolder(claim.holder) });
      owner.startHeartbeat();
      daemon = owner;
    },
  }).catch((e: unknown) => {
    if (e instanceof FlowError && e.code === 'DAEMON_RUNNING') return e;
    throw e;
  });
  if (runtime instanceof FlowError) {
    io.err(formatCliError(runtime));
    return EXIT.USAGE;
  }
  // A daemon's output goes to a journal: plain progress lines, never a bar.
  const reporter = cliReporter(io, values, config, runtime.bus, { tty: false });
  let dashboard: UiServer | undefined;
  let consumers: NotificationConsumers | undefined;
  try {
    if (listen) {
      const host = await runtime.local();
      if (host.mode === 'owner' && host.url) io.out(`msgflow: local service listening on ${host.url}`);
    }
    dashboard = await openDashboard(runtime, values['no-ui'] === true, io, reporter.logger);
    const { flows, errors } = runtime.flows();
    for (const e of errors) io.err(e.message);
    if (errors.length > 0) io.err(`msgflow: ${errors.length} flow error(s); the other flows run (see msgflow validate)`);

    const resumed = await runtime.engine.resumeUnfinished(flows);
    if (resumed.length > 0) io.out(`msgflow: resumed ${resumed.length} unfinished run(s)`);

    const scheduler = createCronScheduler({
      bus: runtime.bus,
      state: runtime.store.kv('scheduler'),
      clock: runtime.clock,
      isBusy: (flow) => runtime.engine.activeRuns().some((r) => r.flow === flow),
    });
    let scheduled = 0;
    for (const flow of flows) {
      if (!flow.on.schedule && !flow.on.startup) continue;
      scheduler.add(flow, async ({ trigger }) => {
        const handle = await runtime.engine.start(flow, { trigger });
        await handle.done;
      });
      scheduled++;
    }
    await scheduler.start();
    for (const s of scheduler.status()) {
      io.out(`msgflow: ${s.flow}: next run ${s.next ? new Date(s.next).toISOString() : "(none)"}${s.timezone ? ` (${s.cron}, ${s.timezone})` : s.cron ? ` (${s.cron})` : ""}`);
    }
    consumers = await consumeNotifications(runtime, flows, reporter.logger, io);
    io.out(`msgflow: started; ${scheduled} flow(s) scheduled, ${flows.filter((f) => f.on.notification).length} triggered by notifications, ${flows.length} loaded. Ctrl-C stops.`);
    const signal = await untilStopped();
    io.err(`msgflow: ${signal}: stopping; running items finish or are checkpointed`);
    await scheduler.stop();
    return EXIT.OK;
  } finally {
    await clearDaemonUi(runtime.store, process.pid, defaultHostId()).catch(() => {});
    await dashboard?.close();
    // No new notification is taken once stopping; those taken are recorded (their runs resume).
    await consumers?.stop();
    // Runs stop first; then the daemon's claim goes, while the store is still open.
    await runtime.engine.shutdown('msgflow start stopping');
    await daemon?.release();
    await runtime.close();
    reporter.close();
  }
}
