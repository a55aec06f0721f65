import type { CliReporter } from '../../engine/progress/cli-reporter.js';
import type { RunLogLine } from '../../engine/run/run-log.js';
import { createInProcessEngineClient } from '../../runtime/engine-client/in-process.js';
import { loadConfig, RUN_LOG_STREAM } from '../../runtime/frontend.js';
import {
  formatCounts,
  formatItems,
  formatWaiting,
  runCounts,
  MsgflowError,
  formatClock,
  formatByFlow,
  formatDuration,
  parseDuration,
  MIN_RETENTION_MS,
  type ItemResult,
  type RunRecord,
  type StepRecord,
} from '../../runtime/present.js';
import { createRuntime, type Runtime } from '../../runtime/runtime.js';
import { parseCommand, parsePositiveInt, subcommandOf } from '../args.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { configOptions, cliReporter, formatCliError, type Io } from '../output.js';
import { formatRunSummary } from '../run-format.js';
import { columnFormat } from '../table.js';

/** Failed items listed by `runs show` per step (the rest are counted). */
const MAX_FAILED_SHOWN = 50;
/** Log lines shown by `runs show` (the last ones). */
const MAX_LOG_SHOWN = 200;

/**
 * `msgflow runs`: run history, newest first (reads only), and the
 * subcommands that inspect and steer one run: show, cancel, retry.
 */
const SUBCOMMANDS = ['show', 'cancel', 'retry', 'prune'];

export async function runs(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseCommand('runs', argv);
  const { sub, arg: id } = subcommandOf('runs', positionals, {
    subs: SUBCOMMANDS,
    arg: 'a run ID',
    noArg: { prune: { what: 'run ID', why: '--older-than and --flow choose the runs' } },
  });
  if (sub !== 'prune')
    for (const flag of ['older-than', 'dry-run'])
      if (values[flag] !== undefined) throw new UsageError(`--${flag} is an option of 'msgflow runs prune'`);
  const limit = parsePositiveInt(values.limit, '--limit') ?? 20;
  const config = loadConfig(values.config ?? 'config.yaml', configOptions(io));
  // Checked before the store is opened: a bad duration changes nothing.
  const olderThanMs = sub === 'prune' ? pruneAge(values['older-than'], config.store.retention) : 0;
  const runtime = await createRuntime({ config, command: 'runs', redactor: io.redactor });
  try {
    if (sub === 'prune')
      return await prune(runtime, { olderThanMs, flow: values.flow, dryRun: Boolean(values['dry-run']) }, Boolean(values.json), io);
    if (sub === 'show') return await show(runtime, id!, Boolean(values.json), io);
    if (sub === 'cancel') return await cancel(runtime, id!, io);
    if (sub === 'retry') return await retry(runtime, id!, Boolean(values.json), io, cliReporter(io, values, config, runtime.bus));
    const list = await runtime.engine.listRuns({ flow: values.flow, limit });
    if (values.flow && list.length === 0) {
      const unknown = unknownFlow(runtime, values.flow);
      if (unknown) throw unknown;
    }
    if (values.json) {
      io.out(JSON.stringify(list, null, 2));
      return EXIT.OK;
    }
    if (list.length === 0) {
      io.out(values.flow ? `no runs of ${values.flow}` : 'no runs yet');
      return EXIT.OK;
    }
    io.out(formatRunsTable(list));
    return EXIT.OK;
  } finally {
    await runtime.close();
  }
}

/** The age `runs prune` deletes from: --older-than, else config.yaml's store.retention. */
function pruneAge(flag: string | undefined, retentionMs: number | undefined): number {
  if (flag === undefined) {
    if (retentionMs === undefined) throw new UsageError('runs prune needs --older-than (e.g. 30d), or store.retention in config.yaml');
    return retentionMs;
  }
  const ms = parseDuration(flag);
  if (ms === undefined) throw new UsageError(`--older-than expects a duration such as 30d or 36h, got '${flag}'`);
  if (ms < MIN_RETENTION_MS)
    throw new UsageError(
      `--older-than ${flag} is too short: runs are kept at least 1d (the service redelivers a notification for up to 24 hours)`,
    );
  return ms;
}

async function prune(runtime: Runtime, o: { olderThanMs: number; flow?: string; dryRun: boolean }, json: boolean, io: Io): Promise<number> {
  // A flow removed from flows/ may still have runs to prune.
  const unknown = o.flow === undefined ? undefined : unknownFlow(runtime, o.flow);
  if (unknown && (await runtime.engine.listRuns({ flow: o.flow, limit: 1 })).length === 0) throw unknown;
  const r = await runtime.engine.pruneRuns(o);
  if (json) {
    io.out(JSON.stringify({ ...r, finishedBefore: new Date(r.cutoff).toISOString() }, null, 2));
    return EXIT.OK;
  }
  const what = `finished run${r.deleted === 1 ? '' : 's'} that ended before ${new Date(r.cutoff).toISOString()} (${formatDuration(o.olderThanMs)} ago)`;
  const flows = formatByFlow(r.byFlow);
  io.out(`${r.dryRun ? 'would delete' : 'deleted'} ${r.deleted} ${what}${flows ? `: ${flows}` : ''}`);
  return EXIT.OK;
}

/** `--flow NAME` naming no loaded flow: the usage error that lists them; undefined when it names one. */
function unknownFlow(runtime: Runtime, flow: string): UsageError | undefined {
  const names = runtime.flows().flows.map((f) => f.name);
  return names.includes(flow) ? undefined : new UsageError(`no flow named '${flow}' (flows: ${names.length ? names.join(', ') : 'none'})`);
}

async function needRun(runtime: Runtime, id: string): Promise<RunRecord> {
  const r = await runtime.engine.getRun(id);
  if (!r) throw new UsageError(`no run '${id}' (msgflow runs lists them)`);
  return r;
}

interface RunDetails {
  run: RunRecord;
  inputs: Record<string, unknown> | undefined;
  steps: StepRecord[];
  failedItems: Array<Pick<ItemResult, 'step' | 'index' | 'error' | 'attempts'>>;
  /** Failed items not listed (beyond the per-step limit). */
  failedItemsNotShown: number;
  log: RunLogLine[];
}

async function details(runtime: Runtime, id: string): Promise<RunDetails> {
  const run = await needRun(runtime, id);
  const { store, engine } = runtime;
  const [inputs, steps] = await Promise.all([store.loadInputs(id), engine.getSteps(id)]);
  const failedItems: RunDetails['failedItems'] = [];
  let notShown = 0;
  for (const s of steps) {
    if (!s.forEach || s.failed === 0) continue;
    let shown = 0;
    for (const r of (await store.getItems(id, s.step)).values()) {
      if (r.status !== 'failed') continue;
      if (shown++ < MAX_FAILED_SHOWN)
        failedItems.push({ step: r.step, index: r.index, attempts: r.attempts, ...(r.error ? { error: r.error } : {}) });
      else notShown++;
    }
  }
  const log: RunLogLine[] = [];
  for await (const line of store.readJournal<RunLogLine>(id, RUN_LOG_STREAM)) {
    log.push(line);
    if (log.length > MAX_LOG_SHOWN) log.shift();
  }
  return { run, inputs, steps, failedItems, failedItemsNotShown: notShown, log };
}

const iso = (ms: number) => new Date(ms).toISOString().replace('T', ' ').slice(0, 19) + 'Z';
const clip = (s: string, n = 300) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** Columns a line of `msgflow runs` keeps within (a wait's reason is cut to fit, never its end). */
const LINE_WIDTH = 80;

/** `waiting until 21:14Z (1h52m): <reason>` within `width`: the end (UTC, as the table's times) and the reason, never an ETA. */
function waitingText(r: Pick<RunRecord, 'waitingUntil' | 'waitReason'>, now: number, width: number): string {
  return formatWaiting(r.waitReason, r.waitingUntil, now, { utc: true, width });
}

async function show(runtime: Runtime, id: string, json: boolean, io: Io): Promise<number> {
  const d = await details(runtime, id);
  if (json) {
    io.out(JSON.stringify(d, null, 2));
    return EXIT.OK;
  }
  const { run } = d;
  const now = Date.now();
  const lines = [`run ${run.id} of ${run.flow}${run.dryRun ? ' (dry run)' : ''}`];
  lines.push(
    `  status:    ${run.status === 'waiting' ? waitingText(run, now, LINE_WIDTH - 13) : run.status}${run.error ? ` - ${run.error.message}` : ''}`,
  );
  lines.push(`  items:     ${formatCounts(runCounts(run))}`);
  if (run.status === 'running' || run.status === 'waiting') {
    const owner = await runtime.engine.liveOwner(run.id);
    if (owner) lines.push(`  owner:     pid ${owner.pid} on host ${owner.host}`);
  }
  lines.push(`  started:   ${iso(run.startedAt)} (${run.trigger})${run.retryOf ? `, retry of ${run.retryOf}` : ''}`);
  if (run.parent) {
    const item = run.parent.item === undefined ? '' : `, item ${run.parent.item}`;
    lines.push(`  parent:    run ${run.parent.runId} of ${run.parent.flow}, step ${run.parent.step}${item}`);
  }
  if (run.slot !== undefined) lines.push(`  slot:      ${iso(run.slot)} (backfill)`);
  if (run.outputs !== undefined) lines.push(`  outputs:   ${clip(JSON.stringify(run.outputs))}`);
  lines.push(
    `  duration:  ${formatClock(run.durationMs ?? now - run.startedAt)}${run.resumes ? `, resumed ${run.resumes} time(s)` : ''}${run.crashes ? `, crashed ${run.crashes} time(s)` : ''}`,
  );
  lines.push(`  inputs:    ${clip(JSON.stringify(d.inputs ?? {}))}`);
  lines.push('  steps:');
  if (d.steps.length === 0) lines.push('    (none yet)');
  for (const s of d.steps) {
    const dur =
      s.finishedAt !== undefined ? formatClock(s.finishedAt - s.startedAt) : s.status === 'running' ? formatClock(now - s.startedAt) : '-';
    const counts = `${formatCounts(s)}${s.waiting ? `, ${s.waiting} waiting` : ''}`;
    lines.push(`    ${s.step} (${s.action}): ${s.status}${s.total !== undefined ? ` (${formatItems(s.total)})` : ''}: ${counts}; ${dur}`);
    if (s.error) lines.push(`      error: ${s.error.message}`);
    if (!s.forEach && s.output !== undefined) lines.push(`      output: ${clip(JSON.stringify(s.output))}`);
  }
  if (d.failedItems.length > 0) {
    lines.push('  failed items:');
    for (const f of d.failedItems)
      lines.push(
        `    ${f.step}[${f.index}] after ${f.attempts} attempt(s): ${f.error?.message ?? 'failed'}${f.error?.code ? ` [${f.error.code}]` : ''}`,
      );
    if (d.failedItemsNotShown > 0)
      lines.push(`    … and ${d.failedItemsNotShown} more (--json lists the first ${MAX_FAILED_SHOWN} per step)`);
  }
  lines.push('  log:');
  if (d.log.length === 0) lines.push('    (no log lines)');
  for (const l of d.log) lines.push(`    ${iso(l.at)} ${l.level.toUpperCase()} ${l.message}`);
  io.out(lines.join('\n'));
  return EXIT.OK;
}

async function cancel(runtime: Runtime, id: string, io: Io): Promise<number> {
  await needRun(runtime, id);
  const res = await createInProcessEngineClient(runtime).cancel(id);
  if (res.pending) {
    const where = res.owner ? ` (pid ${res.owner.pid} on host ${res.owner.host})` : '';
    io.out(`run ${id}: cancel requested; its owner${where} stops it at the next item boundary, its state kept`);
  } else if (res.status === 'cancelled') {
    io.out(`run ${id}: cancelled`);
  } else {
    io.out(`run ${id} already ended: ${res.status}`);
  }
  return EXIT.OK;
}

async function retry(runtime: Runtime, id: string, json: boolean, io: Io, reporter: CliReporter): Promise<number> {
  const old = await needRun(runtime, id);
  const { flows } = runtime.flows();
  if (!flows.some((f) => f.name === old.flow))
    throw new UsageError(`run ${id} is of flow '${old.flow}', which is not loaded (msgflow validate tells why)`);
  try {
    let run;
    try {
      run = await createInProcessEngineClient(runtime, { flows: () => flows }).retry(id);
    } catch (e) {
      // Asking to redo a run that left nothing undone is a request that cannot be met, like --resume of a finished run.
      if (!(e instanceof MsgflowError && e.code === 'NOTHING_TO_RETRY')) throw e;
      io.err(formatCliError(e));
      return EXIT.USAGE;
    }
    io.err(`msgflow: run ${run.runId} retries the failed items of ${id}`);
    const record = await run.record;
    reporter.close();
    const steps = await runtime.engine.getSteps(record.id);
    io.out(json ? JSON.stringify({ run: record, steps }, null, 2) : formatRunSummary(record, steps));
    return record.status === 'succeeded' ? EXIT.OK : EXIT.FAILURE;
  } finally {
    reporter.close();
  }
}

/**
 * The run history as a table: one row per run, its counters in the words of
 * the log lines; a waiting run gets a line under its row saying until when
 * and why, within 80 columns.
 */
export function formatRunsTable(list: readonly RunRecord[], now = Date.now()): string {
  const rows = list.map((r) => [
    r.id,
    r.flow,
    r.status,
    new Date(r.startedAt).toISOString().replace('T', ' ').slice(0, 19),
    formatClock(r.durationMs ?? now - r.startedAt),
    formatCounts(runCounts(r)),
  ]);
  const header = ['RUN', 'FLOW', 'STATUS', 'STARTED (UTC)', 'DURATION', 'ITEMS'];
  const fmt = columnFormat(header, rows);
  const out = [fmt(header)];
  list.forEach((r, i) => {
    out.push(fmt(rows[i]!));
    if (r.status === 'waiting') out.push(`  ${waitingText(r, now, LINE_WIDTH - 2)}`);
  });
  return out.join('\n');
}
