import { createDaemon, type DaemonEvent } from '../../runtime/daemon.js';
import { displayPath, loadConfig } from '../../runtime/frontend.js';
import { createBus, formatDuration, MsgflowError, type FlowError } from '../../runtime/present.js';
import { formatReload } from '../../runtime/reload.js';
import type { ScheduleStatus } from '../../engine/schedule/types.js';
import { parseCommand, parsePositiveInt } from '../args.js';
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

/** `flow: next run 2024-01-01T09:00:00.000Z (0 9 * * *, Europe/Berlin)`. */
function scheduleLine(s: ScheduleStatus): string {
  const next = s.next ? new Date(s.next).toISOString() : '(none)';
  return `msgflow: ${s.flow}: next run ${next}${s.timezone ? ` (${s.cron}, ${s.timezone})` : s.cron ? ` (${s.cron})` : ''}`;
}

/** Each of a reload's problems on stderr (one `msgflow:` per line), then its summary line. */
function printReload(io: Io, e: Extract<DaemonEvent, { type: 'reloaded' }>): void {
  const { errors, line } = formatReload(e.summary);
  for (const text of errors)
    io.err(
      text
        .split('\n')
        .map((l) => `msgflow: ${l}`)
        .join('\n'),
    );
  io.out(`msgflow: ${line}`);
}

function printFlowErrors(io: Io, errors: readonly FlowError[]): void {
  for (const e of errors) io.err(e.message);
  io.err(`msgflow: ${errors.length} flow error(s); the other flows run (see msgflow validate)`);
}

/** What the daemon tells, as `msgflow start` prints it (progress on stdout, problems on stderr). */
function printEvent(io: Io, cwd: string | undefined, e: DaemonEvent): void {
  switch (e.type) {
    case 'local-service':
      return io.out(`msgflow: local service listening on ${e.url}`);
    case 'dashboard':
      return io.out(`msgflow: dashboard on ${e.url}`);
    case 'dashboard-unavailable':
      return io.err(`${formatCliError(e.error)}; running without the dashboard`);
    case 'flow-errors':
      return printFlowErrors(io, e.errors);
    case 'resumed':
      return io.out(`msgflow: resumed ${e.runs} unfinished run(s)`);
    case 'working':
      return io.out(`msgflow: working items of ${e.queues} instance queue(s), ${e.concurrency} at once each`);
    case 'scheduled':
      for (const s of e.schedules) io.out(scheduleLine(s));
      return;
    case 'notifications':
      for (const c of e.instances)
        io.out(
          `msgflow: notifications of ${c.name}: ${c.mode === 'poll' ? 'polling receiveNotification' : `webhook receiver on ${e.webhookUrl}`}`,
        );
      return;
    case 'started': {
      const { flows, retentionMs } = e.status;
      // What the history keeps: a user who wonders where last month's runs went reads it here.
      io.out(
        retentionMs === undefined
          ? 'msgflow: run history: kept for good (store.retention sets how long)'
          : `msgflow: run history: finished runs older than ${formatDuration(retentionMs)} are deleted hourly (store.retention)`,
      );
      return io.out(
        `msgflow: started; ${flows.scheduled} flow(s) scheduled, ${flows.notificationTriggered} triggered by notifications, ${flows.loaded} loaded. Ctrl-C stops.`,
      );
    }
    case 'watching':
      return io.out(`msgflow: watching ${displayPath(e.configFile, cwd)} and ${displayPath(e.flowsDir, cwd)}; a change reloads`);
    case 'reloaded':
      return printReload(io, e);
    case 'reload-failed':
      return io.err(`${formatCliError(e.error)} (reload failed; the running flows stay)`);
  }
}

/**
 * `msgflow start`: the daemon (createDaemon, src/runtime/daemon.ts) in the
 * foreground. SIGINT and SIGTERM stop it gracefully; SIGHUP, and with --watch
 * any change of config.yaml or flows/, reloads (see runtime/reload.ts).
 */
export async function start(argv: string[], io: Io): Promise<number> {
  const { values } = parseCommand('start', argv, false);
  const config = loadConfig(values.config ?? 'config.yaml', configOptions(io));
  // Items at once per queue matter only to a daemon that works BullMQ items.
  const works = config.executor.driver === 'bullmq' && !values['no-work'];
  const concurrency = (works ? parsePositiveInt(values.concurrency as string | undefined, '--concurrency') : undefined) ?? 8;
  const bus = createBus();
  // A daemon's output goes to a journal: plain progress lines, never a bar.
  const reporter = cliReporter(io, values, config, bus, { tty: false });
  const daemon = createDaemon({
    config,
    configOptions: configOptions(io),
    command: 'start',
    listen: !values['no-listen'],
    ui: values['no-ui'] !== true,
    work: values['no-work'] !== true,
    concurrency,
    watch: values.watch === true,
    bus,
    logger: reporter.logger,
    onEvent: (e) => printEvent(io, config.cwd, e),
    // What the daemon prints and serves hides this invocation's secrets too.
    ...(io.redactor ? { runtime: { redactor: io.redactor } } : {}),
  });
  const signals = daemonSignals();
  try {
    try {
      await daemon.start();
    } catch (e) {
      // One daemon per store, across processes and hosts: a second one would fire every schedule twice.
      if (!(e instanceof MsgflowError && e.code === 'DAEMON_RUNNING')) throw e;
      io.err(formatCliError(e));
      return EXIT.USAGE;
    }
    // A reload's outcome (or why it failed) is printed from the daemon's events.
    signals.onHangup(() => void daemon.reload().catch(() => {}));
    const signal = await signals.stopped;
    io.err(`msgflow: ${signal}: stopping; running items finish or are checkpointed`);
    return stopExitCode(signal);
  } finally {
    signals.close();
    await daemon.stop('msgflow start stopping');
    reporter.close();
  }
}
