import { loadConfig } from '../../config/index.js';
import { createCronScheduler } from '../../engine/schedule/index.js';
import { FlowError, MsgflowError } from '../../api/errors.js';
import { defaultHostId, describeHolder, LeaseOwner } from '../../engine/run/index.js';
import { defaultLeaseTtlMs } from '../../engine/run/ownership.js';
import { createRuntime } from '../../runtime/runtime.js';
import { serveDashboard, type UiServer } from '../../ui/index.js';
import { parseCommand, parsePositiveInt } from '../args.js';
import type { Logger } from '../../engine/action.js';
import type { TimerSource } from '../../engine/schedule/index.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { Flow } from '../../engine/flow-types.js';
import type { ItemWorkers } from '../../runtime/bullmq/workers.js';
import { EXIT } from '../exit-codes.js';
import { cliReporter, formatCliError, type Io } from '../output.js';

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

/** The cron scheduler over every flow with on.schedule or on.startup, started (slots from BullMQ in bullmq mode). */
async function scheduleFlows(runtime: Runtime, flows: readonly Flow[], dist: Distributed | undefined, io: Io) {
  const scheduler = createCronScheduler({
    bus: runtime.bus,
    state: runtime.store.kv('scheduler'),
    clock: runtime.clock,
    isBusy: (flow) => runtime.engine.activeRuns().some((r) => r.flow === flow),
    ...(dist ? { timer: dist.timer } : {}),
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
  await dist?.start();
  for (const s of scheduler.status()) {
    io.out(`msgflow: ${s.flow}: next run ${s.next ? new Date(s.next).toISOString() : "(none)"}${s.timezone ? ` (${s.cron}, ${s.timezone})` : s.cron ? ` (${s.cron})` : ""}`);
  }
  return { scheduler, scheduled };
}

/**
 * `msgflow start`: the daemon. Order matters: the local service listens
 * first (flows may call it), then unfinished runs resume, then the scheduler
 * starts (catching up missed slots and startup runs).
 */
export async function start(argv: string[], io: Io): Promise<number> {
  const { values } = parseCommand('start', argv, false);
  const config = loadConfig(values.config ?? 'config.yaml');
  const listen = !values['no-listen'] && config.local !== undefined;
  const bullmq = config.executor.driver === 'bullmq';
  // One daemon per store, across processes and hosts: a second one would fire every schedule twice.
  // With BullMQ, replicas are the point: each slot is one job, taken by one of them.
  let daemon: LeaseOwner | undefined;
  const runtime = await createRuntime({
    config,
    command: 'start',
    listen,
    beforeListen: async (store) => {
      if (bullmq) return;
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
  let dist: Distributed | undefined;
  try {
    dist = bullmq ? await distributed(runtime, values, reporter.logger, io) : undefined;
    if (listen) {
      const host = await runtime.local();
      if (host.mode === 'owner' && host.url) io.out(`msgflow: local service listening on ${host.url}`);
    }
    if (!values['no-ui']) {
      try {
        dashboard = await serveDashboard(runtime, {}, reporter.logger);
        io.out(`msgflow: dashboard on ${dashboard.url}`);
      } catch (e) {
        // A busy port must not keep the flows from running; an unsafe bind (a config error) stops the start.
        if (!(e instanceof MsgflowError && e.code === 'PORT_IN_USE')) throw e;
        io.err(`${formatCliError(e)}; running without the dashboard`);
      }
    }
    const { flows, errors } = runtime.flows();
    for (const e of errors) io.err(e.message);
    if (errors.length > 0) io.err(`msgflow: ${errors.length} flow error(s); the other flows run (see msgflow validate)`);

    const resumed = await runtime.engine.resumeUnfinished(flows);
    if (resumed.length > 0) io.out(`msgflow: resumed ${resumed.length} unfinished run(s)`);

    const { scheduler, scheduled } = await scheduleFlows(runtime, flows, dist, io);
    io.out(`msgflow: started; ${scheduled} flow(s) scheduled, ${flows.length} loaded. Ctrl-C stops.`);
    const signal = await untilStopped();
    io.err(`msgflow: ${signal}: stopping; running items finish or are checkpointed`);
    await scheduler.stop();
    return EXIT.OK;
  } finally {
    await dashboard?.close();
    await dist?.close();
    // Runs stop first; then the daemon's claim goes, while the store is still open.
    await runtime.engine.shutdown('msgflow start stopping');
    await daemon?.release();
    await runtime.close();
    reporter.close();
  }
}
