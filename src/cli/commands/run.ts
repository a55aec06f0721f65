import { MsgflowError } from '../../api/errors.js';
import { loadConfig } from '../../config/load.js';
import type { Engine, RunHandle } from '../../engine/run/types.js';
import { checkInputNames, dataInputsOf, fileOverridesFrom } from '../../engine/flow/inputs.js';
import { findFlow } from '../../engine/flow/load.js';
import type { Flow } from '../../engine/flow/types.js';
import { flowSource } from '../../runtime/project-engine.js';
import { createRuntime, type Runtime } from '../../runtime/runtime.js';
import { parseCommand, parseInputs } from '../args.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { configOptions, cliReporter, formatCliError, type Io } from '../output.js';
import { formatRunSummary } from '../run-format.js';
import { findDaemon, startInDaemon, type RemoteRunHandle } from '../daemon-run.js';

/** Exit codes of a run stopped by a signal: 128 + the signal number, as shells report it. */
const SIGNAL_EXIT: Partial<Record<NodeJS.Signals, number>> = { SIGINT: EXIT.INTERRUPTED, SIGTERM: EXIT.TERMINATED };

/** How often `--wait` looks whether the live run ended (real time). */
const WAIT_POLL_MS = 500;

/**
 * `msgflow run FLOW`: runs a flow now and waits for it.
 *
 * Resume is explicit: an unfinished run of the flow (cut short by kill -9,
 * Ctrl-C, a crash) is resumed only when it started with the same inputs and
 * the same flow file; any other unfinished run is named with how to resume
 * (`--resume ID`) or discard it, and the command exits 2. A run of the flow
 * executing in a live process (here or on another host) is never resumed nor
 * doubled: the command says so and exits 2, or with `--wait` waits for it.
 */
export async function run(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseCommand('run', argv);
  if (positionals.length !== 1) throw new UsageError(`run expects exactly one FLOW, got ${positionals.length}`);
  if (values.new && values.resume) throw new UsageError('--new and --resume exclude each other');
  const inputs = parseInputs(values.input);
  const config = loadConfig(values.config ?? 'config.yaml', configOptions(io));
  const runtime = await createRuntime({ config, command: 'run', listenIfFree: true, redactor: io.redactor });
  const reporter = cliReporter(io, values, config, runtime.bus);
  let signalled: NodeJS.Signals | undefined;
  let storeFailure = false;
  let remote: RemoteRunHandle | undefined;
  let wakeOnSignal: () => void = () => {};
  const signal = new Promise<undefined>((resolve) => (wakeOnSignal = () => resolve(undefined)));
  const stop = (sig: NodeJS.Signals) => {
    signalled ??= sig;
    // A run in the daemon goes on there: this process only stops following it.
    if (remote) remote.detach();
    else void runtime.engine.shutdown('interrupted by signal');
    wakeOnSignal();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    const source = flowSource(config, runtime.registry);
    const flow = findFlow(source.dir, positionals[0]!, source.options);
    checkInputNames(flow, inputs);
    // A file given with -i is the user's path: made absolute here, so the daemon a run may be
    // handed to (its own working directory) reads the same file.
    Object.assign(inputs, fileOverridesFrom(flow, inputs, config.cwd));
    if (config.executor.driver === 'bullmq')
      io.err('msgflow: executor bullmq: forEach items go to the Redis queues; msgflow worker (or msgflow start) processes work them');
    // The daemon's API takes data files from the data folders only: a run reading another stays here.
    const outside = Object.entries((await dataInputsOf(flow, inputs)) ?? {}).flatMap(([name, ok]) => (ok ? [] : [name]));
    const starter = await chooseStarter(runtime, values, io, (h) => (remote = h), outside);
    const handle = await obtainRun(runtime.engine, flow, inputs, values, io, () => signalled !== undefined, starter);
    if (typeof handle === 'number') return handle;
    const record = remote ? await Promise.race([handle.done, signal]) : await handle.done;
    reporter.close();
    if (!record) {
      io.err(
        `msgflow: ${signalled}: stopped following run ${handle.runId}; it goes on in the daemon ('msgflow runs cancel ${handle.runId}' stops it)`,
      );
      return SIGNAL_EXIT[signalled!] ?? EXIT.FAILURE;
    }
    // The steps as last known: a store that stopped answering is not read again for them.
    const steps = await runtime.engine.getSteps(record.id).catch(() => []);
    io.out(values.json ? JSON.stringify({ run: record, steps }, null, 2) : formatRunSummary(record, steps));
    if (signalled) return SIGNAL_EXIT[signalled] ?? EXIT.FAILURE;
    if (record.status === 'interrupted' && record.error) {
      storeFailure = record.error.code === 'STORE_UNAVAILABLE';
      io.err(
        `msgflow: run ${record.id} of ${flow.name} stopped: ${record.error.message}${record.error.code ? ` [${record.error.code}]` : ''}; ` +
          `once that is fixed, 'msgflow run ${flow.name} --resume ${record.id}' continues it from its checkpoint`,
      );
    }
    return record.status === 'succeeded' ? EXIT.OK : EXIT.FAILURE;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    remote?.detach();
    reporter.close();
    // Closing flushes the store: when it refused the run's writes it refuses these too, and that was said above.
    await runtime.close().catch((e: unknown) => {
      if (!(storeFailure && e instanceof MsgflowError && e.code === 'STORE_UNAVAILABLE')) throw e;
    });
  }
}

/** Starts a run: in the engine of this process, or in the daemon's (see daemon-run.ts). */
type Starter = (flow: Flow, opts: { inputs: Record<string, string>; dryRun?: boolean }) => Promise<RunHandle>;

/**
 * In the daemon when one serves this store's dashboard (unless --no-daemon;
 * --resume resumes here), else here. `onRemote` learns the followed run.
 */
async function chooseStarter(
  runtime: Runtime,
  flags: RunFlags,
  io: Io,
  onRemote: (h: RemoteRunHandle) => void,
  outsideDataFolders: string[],
): Promise<Starter> {
  const local: Starter = (flow, o) => runtime.engine.start(flow, { ...o, trigger: 'manual' });
  if (flags['no-daemon'] || flags.resume) return local;
  const daemon = await findDaemon(runtime);
  if (daemon.note) io.err(`msgflow: ${daemon.note}`);
  const target = daemon.target;
  if (!target) return local;
  if (outsideDataFolders.length > 0) {
    const which = outsideDataFolders.map((n) => `-i ${n}`).join(', ');
    io.err(`msgflow: ${which} names a file outside the input's data folders, which the daemon does not read: the run executes here`);
    return local;
  }
  return async (flow, o) => {
    const h = await startInDaemon(target, flow.name, { inputs: o.inputs, dryRun: o.dryRun === true }, runtime.bus, (id) =>
      runtime.engine.getRun(id),
    );
    io.err(
      `msgflow: run ${h.runId} of ${flow.name} executes in the daemon (dashboard ${target.url}/#/runs/${encodeURIComponent(h.runId)})`,
    );
    onRemote(h);
    return h;
  };
}

interface RunFlags {
  'dry-run'?: boolean;
  'no-daemon'?: boolean;
  new?: boolean;
  resume?: string;
  wait?: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The run to wait for: resumed, or started; or an exit code when neither may happen now. */
async function obtainRun(
  engine: Engine,
  flow: Flow,
  inputs: Record<string, string>,
  flags: RunFlags,
  io: Io,
  stopped: () => boolean,
  start: Starter,
): Promise<RunHandle | number> {
  let announced = false;
  for (;;) {
    if (stopped()) return EXIT.FAILURE;
    try {
      const handle = await decide(engine, flow, inputs, flags, io, start);
      if (typeof handle !== 'string') return handle;
      if (!flags.wait) {
        io.err(`msgflow: ${handle}`);
        return EXIT.USAGE;
      }
      if (!announced) io.err(`msgflow: ${handle.replace(/; --wait.*$/, '')}; waiting for it to end`);
    } catch (e) {
      if (!(e instanceof MsgflowError && e.code === 'RUN_LIVE')) throw e;
      if (!flags.wait) {
        io.err(formatCliError(e));
        return EXIT.USAGE;
      }
      if (!announced) io.err(`msgflow: ${e.message.replace(/; --wait.*$/, '')}; waiting for it to end`);
    }
    announced = true;
    await sleep(WAIT_POLL_MS);
  }
}

/** A handle; the sentence saying why the flow cannot run now (a live run); or an exit code (already explained). */
async function decide(
  engine: Engine,
  flow: Flow,
  inputs: Record<string, string>,
  flags: RunFlags,
  io: Io,
  start: Starter,
): Promise<RunHandle | string | number> {
  if (flags['dry-run']) return start(flow, { inputs, dryRun: true });
  if (flags.resume) {
    const h = await engine.resume(flags.resume, flow);
    io.err(`msgflow: resuming run ${h.runId} of ${flow.name} from its checkpoint`);
    return h;
  }
  const unfinished = await engine.unfinished(flow.name);
  const live = unfinished.filter((r) => r.status === 'running' || r.status === 'waiting');
  if (live.length > 0 && !flags.new) {
    const r = live[0]!;
    const owner = await engine.liveOwner(r.id);
    const where = owner ? `pid ${owner.pid} on host ${owner.host}` : 'another process';
    return `run ${r.id} of ${flow.name} is live in ${where} (started ${iso(r.startedAt)}); --wait waits for it, 'msgflow runs cancel ${r.id}' stops it`;
  }
  const dead = unfinished.filter((r) => r.status === 'interrupted');
  if (dead.length > 0 && !flags.new) {
    const fp = await engine.fingerprint(flow, inputs);
    const same = dead.find((r) => r.inputsHash === fp.inputsHash && r.flowHash === fp.flowHash);
    if (same) {
      const h = await engine.resume(same.id, flow);
      io.err(`msgflow: resuming run ${h.runId} of ${flow.name} from its checkpoint (same inputs and flow file; --new starts a fresh run)`);
      return h;
    }
    const r = dead[0]!;
    const why = r.flowHash !== fp.flowHash ? 'with another version of the flow file' : 'with other inputs';
    io.err(
      [
        `msgflow: run ${r.id} of ${flow.name} is unfinished (interrupted${r.currentStep ? ` at step ${r.currentStep}` : ''}, started ${iso(r.startedAt)}) and was started ${why}.`,
        `  resume it:   msgflow run ${flow.name} --resume ${r.id}`,
        `  discard it:  msgflow runs cancel ${r.id}`,
        `  or start a fresh run beside it with --new`,
      ].join('\n'),
    );
    return EXIT.USAGE;
  }
  return start(flow, { inputs });
}

const iso = (ms: number) => new Date(ms).toISOString().replace('T', ' ').slice(0, 19) + 'Z';
