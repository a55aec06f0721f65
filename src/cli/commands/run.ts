import { MsgflowError, type RunPlan, type RunRecord } from '../../runtime/present.js';
import type { Flow } from '../../engine/flow/types.js';
import type { Engine } from '../../engine/run/types.js';
import { findDaemon, type DaemonTarget } from '../../runtime/daemon/address.js';
import { createHttpEngineClient } from '../../runtime/engine-client/http.js';
import { createInProcessEngineClient, type InProcessEngineClient } from '../../runtime/engine-client/in-process.js';
import type { FollowedRun } from '../../runtime/engine-client/types.js';
import { checkInputNames, dataInputsOf, fileOverridesFrom, findFlow, loadConfig } from '../../runtime/frontend.js';
import { flowSource } from '../../runtime/project-engine.js';
import { createRuntime, type Runtime } from '../../runtime/runtime.js';
import { parseCommand, parseInputs } from '../args.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { cliPath, configOptions, cliReporter, formatCliError, type Io } from '../output.js';
import { formatRunSummary, isPlanned } from '../run-format.js';

/** Exit codes of a run stopped by a signal: 128 + the signal number, as shells report it. */
const SIGNAL_EXIT: Partial<Record<NodeJS.Signals, number>> = { SIGINT: EXIT.INTERRUPTED, SIGTERM: EXIT.TERMINATED };

/** How often `--wait` looks whether the live run ended (real time). */
const WAIT_POLL_MS = 500;

/** A run started (or resumed) and followed, here or in the daemon. */
interface Started {
  run: FollowedRun;
  /** Executing in the daemon: a signal stops following it, not the run. */
  remote: boolean;
  /** The run's record once it ended (all of it, for the summary and --json). */
  record(): Promise<RunRecord>;
}

/** Starts a run: in the engine of this process, or in the daemon's. */
type Starter = (flow: Flow, opts: { inputs: Record<string, string>; dryRun?: boolean; plan?: RunPlan }) => Promise<Started>;

/** What `msgflow run` does now, decided from the flow's unfinished runs and the flags. */
type Decision =
  /** A run started or resumed. */
  | { kind: 'started'; started: Started }
  /**
   * A run of the flow executes in a live process: `what` is live in `where`
   * (an error of the engine's saying so, when it was one).
   */
  | { kind: 'live'; what: string; where: string; runId: string; error?: MsgflowError }
  /** The command cannot go on, and said why: exit 2. */
  | { kind: 'refused' };

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
  if (values.plan !== undefined && (values.resume || values.new || values['dry-run']))
    throw new UsageError('--plan excludes --resume, --new and --dry-run (a plan is made by a dry run of its own)');
  const inputs = parseInputs(values.input);
  const plan: RunPlan | undefined =
    values.plan === undefined ? undefined : { mode: 'write', path: cliPath(io, values.plan), inputs: { ...inputs } };
  return execute({ name: positionals[0]!, inputs, plan }, values, io);
}

/** What to run: a flow by name, with its `-i` overrides; the campaign plan it writes or applies. */
export interface RunTarget {
  name: string;
  inputs: Record<string, string>;
  plan?: RunPlan;
  /** Checked once the flow is found, before anything starts (msgflow apply: the flow file is the plan's). */
  check?: (flow: Flow) => void;
}

/** Runs a flow (msgflow run, msgflow apply) and waits for it: the exit code. */
export async function execute(target: RunTarget, values: CommonFlags, io: Io): Promise<number> {
  const { inputs, plan } = target;
  const config = loadConfig(values.config ?? 'config.yaml', configOptions(io));
  const runtime = await createRuntime({ config, command: 'run', listenIfFree: true, redactor: io.redactor });
  const reporter = cliReporter(io, values, config, runtime.bus);
  const local = createInProcessEngineClient(runtime);
  let signalled: NodeJS.Signals | undefined;
  let storeFailure = false;
  let started: Started | undefined;
  let wakeOnSignal: () => void = () => {};
  const signal = new Promise<undefined>((resolve) => (wakeOnSignal = () => resolve(undefined)));
  const stop = (sig: NodeJS.Signals) => {
    signalled ??= sig;
    // A run in the daemon goes on there: this process only stops following it.
    if (started?.remote) started.run.detach();
    else void runtime.engine.shutdown('interrupted by signal');
    wakeOnSignal();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    const source = flowSource(config, runtime.registry);
    const flow = findFlow(source.dir, target.name, source.options);
    target.check?.(flow);
    checkInputNames(flow, inputs);
    // A file given with -i is the user's path: made absolute here, so the daemon a run may be
    // handed to (its own working directory) reads the same file.
    Object.assign(inputs, fileOverridesFrom(flow, inputs, config.cwd));
    if (config.executor.driver === 'bullmq')
      io.err(
        'msgflow: executor bullmq: forEach items and job steps go to the Redis queues; msgflow worker (or msgflow start) processes work them',
      );
    // The daemon's API takes data files from the data folders only: a run reading another stays here.
    const outside = Object.entries((await dataInputsOf(flow, inputs)) ?? {}).flatMap(([name, ok]) => (ok ? [] : [name]));
    const starter = plan?.mode === 'write' ? localStarter(local) : await chooseStarter(runtime, local, values, io, outside);
    const request = { engine: runtime.engine, local, flow, inputs, flags: values, io, start: starter, plan };
    const obtained = await obtainRun(request, () => signalled !== undefined);
    if (obtained.kind === 'exit') return obtained.code;
    started = obtained.started;
    const record = started.remote ? await Promise.race([started.record(), signal]) : await started.record();
    reporter.close();
    if (!record) {
      const id = started.run.runId;
      io.err(`msgflow: ${signalled}: stopped following run ${id}; it goes on in the daemon ('msgflow runs cancel ${id}' stops it)`);
      return SIGNAL_EXIT[signalled!] ?? EXIT.FAILURE;
    }
    // The steps as last known: a store that stopped answering is not read again for them.
    const steps = await runtime.engine.getSteps(record.id).catch(() => []);
    io.out(values.json ? JSON.stringify({ run: record, steps }, null, 2) : formatRunSummary(record, steps));
    if (plan?.mode === 'write' && record.status === 'succeeded' && !steps.some((s) => isPlanned(s.output))) {
      io.err(`msgflow: ${flow.name} has no messages.broadcast or files.broadcast step that ran: nothing planned, no plan written`);
      return EXIT.USAGE;
    }
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
    started?.run.detach();
    reporter.close();
    // Closing flushes the store: when it refused the run's writes it refuses these too, and that was said above.
    await runtime.close().catch((e: unknown) => {
      if (!(storeFailure && e instanceof MsgflowError && e.code === 'STORE_UNAVAILABLE')) throw e;
    });
  }
}

/** Starts in this process's engine. */
const localStarter =
  (local: InProcessEngineClient): Starter =>
  async (flow, o) => {
    const run = await local.startFlow(flow, o);
    return { run, remote: false, record: () => run.record };
  };

/**
 * In the daemon when one serves this store's dashboard (unless --no-daemon;
 * --resume resumes here), else here.
 */
async function chooseStarter(runtime: Runtime, local: InProcessEngineClient, flags: RunFlags, io: Io, outside: string[]): Promise<Starter> {
  if (flags['no-daemon'] || flags.resume) return localStarter(local);
  const daemon = await findDaemon(runtime.store, runtime.config.ui.token);
  if (daemon.note) io.err(`msgflow: ${daemon.note}`);
  const target = daemon.target;
  if (!target) return localStarter(local);
  if (outside.length > 0) {
    const which = outside.map((n) => `-i ${n}`).join(', ');
    io.err(`msgflow: ${which} names a file outside the input's data folders, which the daemon does not read: the run executes here`);
    return localStarter(local);
  }
  return daemonStarter(runtime, local, target, io);
}

/**
 * Hands the run to the daemon through its dashboard API and follows it: its
 * engine events are emitted on this process's bus (the same progress and log
 * lines as a run here), and its record is read from the store it shares with
 * the daemon (the same summary and exit code). A daemon that goes away while
 * followed leaves the run to the store: its record says how it ends.
 */
function daemonStarter(runtime: Runtime, local: InProcessEngineClient, target: DaemonTarget, io: Io): Starter {
  const daemon = createHttpEngineClient(target);
  return async (flow, o) => {
    let run: FollowedRun;
    try {
      run = await daemon.start(flow.name, { ...o, onEvent: (e) => runtime.bus.emit(e.name, e.event as never) });
    } catch (e) {
      throw withTokenHint(e, target);
    }
    const url = `${target.url}/#/runs/${encodeURIComponent(run.runId)}`;
    io.err(`msgflow: run ${run.runId} of ${flow.name} executes in the daemon (dashboard ${url})`);
    const ended = async (): Promise<RunRecord> => {
      await run.done.catch(async (e: unknown) => {
        if (!(e instanceof MsgflowError && e.code === 'DAEMON_API_UNREACHABLE')) throw e;
        await (
          await local.follow(run.runId)
        ).done;
      });
      const record = await runtime.engine.getRun(run.runId);
      if (!record) throw new MsgflowError('RUN_NOT_FOUND', { runId: run.runId });
      return record;
    };
    return { run, remote: true, record: ended };
  };
}

/**
 * A refused token, with its usual cause: ui.token comes from the environment
 * (${MSGFLOW_UI_TOKEN}), set for the daemon but not in this terminal.
 */
function withTokenHint(e: unknown, target: DaemonTarget): unknown {
  if (!(e instanceof MsgflowError && e.code === 'DAEMON_API_REFUSED' && e.params.code === 'UI_UNAUTHORIZED')) return e;
  const hint = `; this config's ui.token is ${target.token ? "not the daemon's" : 'empty'} (--no-daemon runs the flow here)`;
  return new MsgflowError('DAEMON_API_REFUSED', { ...e.params, message: `${String(e.params.message)}${hint}` });
}

/** The flags msgflow run and msgflow apply share. */
export type CommonFlags = RunFlags & { config?: string; json?: boolean; 'log-level'?: string; 'json-logs'?: boolean };

interface RunFlags {
  'dry-run'?: boolean;
  'no-daemon'?: boolean;
  new?: boolean;
  resume?: string;
  wait?: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The sentence naming the live run: `... is live in ...; --wait waits for it, ...` as an error says it. */
function liveSentence(d: Extract<Decision, { kind: 'live' }>): string {
  return `${d.what} is live in ${d.where}; --wait waits for it, 'msgflow runs cancel ${d.runId}' stops it`;
}

/** What `msgflow run` asks for, and what it starts a run with. */
interface RunRequest {
  engine: Engine;
  local: InProcessEngineClient;
  flow: Flow;
  inputs: Record<string, string>;
  flags: RunFlags;
  io: Io;
  start: Starter;
  plan?: RunPlan;
}

/** The run to follow, or the exit code when none may start now (already explained). */
async function obtainRun(
  req: RunRequest,
  stopped: () => boolean,
): Promise<{ kind: 'started'; started: Started } | { kind: 'exit'; code: number }> {
  const { flags, io } = req;
  let announced = false;
  for (;;) {
    if (stopped()) return { kind: 'exit', code: EXIT.FAILURE };
    const d = await decideOrLive(req);
    if (d.kind === 'started') return d;
    if (d.kind === 'refused') return { kind: 'exit', code: EXIT.USAGE };
    if (!flags.wait) {
      io.err(d.error ? formatCliError(d.error) : `msgflow: ${liveSentence(d)}`);
      return { kind: 'exit', code: EXIT.USAGE };
    }
    if (!announced) io.err(`msgflow: ${d.what} is live in ${d.where}; waiting for it to end`);
    announced = true;
    await sleep(WAIT_POLL_MS);
  }
}

/** decide(), with the engine's RUN_LIVE (a run of the flow started elsewhere meanwhile) as the live decision it is. */
async function decideOrLive(req: RunRequest): Promise<Decision> {
  try {
    return await decide(req);
  } catch (e) {
    if (!(e instanceof MsgflowError && e.code === 'RUN_LIVE')) throw e;
    const { what, holder, runId } = e.params;
    return { kind: 'live', what: String(what), where: String(holder), runId: String(runId), error: e };
  }
}

/** What to do now: start, resume, name the live run, or refuse (explained). */
async function decide({ engine, local, flow, inputs, flags, io, start, plan }: RunRequest): Promise<Decision> {
  const resume = async (runId: string, said: string): Promise<Decision> => {
    const run = await local.resume(flow, runId);
    io.err(`msgflow: resuming run ${run.runId} of ${flow.name} from its checkpoint${said}`);
    return { kind: 'started', started: { run, remote: false, record: () => run.record } };
  };
  if (flags['dry-run'] || plan?.mode === 'write') return { kind: 'started', started: await start(flow, { inputs, dryRun: true, plan }) };
  if (flags.resume) return resume(flags.resume, '');
  const unfinished = await engine.unfinished(flow.name);
  const live = unfinished.filter((r) => r.status === 'running' || r.status === 'waiting');
  if (live.length > 0 && !flags.new) {
    const r = live[0]!;
    const owner = await engine.liveOwner(r.id);
    const where = owner ? `pid ${owner.pid} on host ${owner.host}` : 'another process';
    return { kind: 'live', what: `run ${r.id} of ${flow.name}`, where: `${where} (started ${iso(r.startedAt)})`, runId: r.id };
  }
  const dead = unfinished.filter((r) => r.status === 'interrupted');
  if (dead.length > 0 && !flags.new) {
    const fp = await engine.fingerprint(flow, inputs);
    // msgflow apply resumes a run of the same plan only; msgflow run, a run that applies none.
    const same = dead.find((r) => r.inputsHash === fp.inputsHash && r.flowHash === fp.flowHash && r.plan?.path === plan?.path);
    if (same) return resume(same.id, ' (same inputs and flow file; --new starts a fresh run)');
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
    return { kind: 'refused' };
  }
  return { kind: 'started', started: await start(flow, { inputs, ...(plan ? { plan } : {}) }) };
}

const iso = (ms: number) => new Date(ms).toISOString().replace('T', ' ').slice(0, 19) + 'Z';
