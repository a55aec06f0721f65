import type { RunRecord } from '../../runtime/present.js';
import type { BackfillSlot } from '../../runtime/engine-client/types.js';
import { findDaemon } from '../../runtime/daemon/address.js';
import { createHttpEngineClient } from '../../runtime/engine-client/http.js';
import { createInProcessEngineClient } from '../../runtime/engine-client/in-process.js';
import { findFlow, loadConfig } from '../../runtime/frontend.js';
import { flowSource } from '../../runtime/project-engine.js';
import { createRuntime } from '../../runtime/runtime.js';
import { parseCommand } from '../args.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { cliReporter, configOptions, type Io } from '../output.js';

/** `--from`/`--to`: an ISO 8601 date or time (a date alone is midnight UTC), or ms since the epoch. */
function parseTime(value: string | undefined, flag: string): number {
  if (value === undefined) throw new UsageError(`backfill needs ${flag} TIME (e.g. 2026-01-05 or 2026-01-05T09:00:00Z)`);
  const t = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(t))
    throw new UsageError(`${flag} expects an ISO 8601 time (e.g. 2026-01-05T09:00:00Z) or ms since the epoch, got '${value}'`);
  return t;
}

const iso = (ms: number) => new Date(ms).toISOString();

function slotLine(s: BackfillSlot, status: string): string {
  return `${iso(s.slot)}  ${s.runId}  ${status}`;
}

/**
 * `msgflow backfill FLOW --from T1 --to T2`: runs the flow's schedule slots in
 * the range, once each (a slot an earlier backfill ran is left as it is),
 * within the flow's concurrency. In the daemon when one serves this store's
 * dashboard (the command prints the slots and returns; the runs go on there),
 * else here, waiting for every run. Exit 1 when a run of this backfill failed.
 */
export async function backfill(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseCommand('backfill', argv);
  if (positionals.length !== 1) throw new UsageError(`backfill expects exactly one FLOW, got ${positionals.length}`);
  const range = { from: parseTime(values.from, '--from'), to: parseTime(values.to, '--to') };
  const config = loadConfig(values.config ?? 'config.yaml', configOptions(io));
  const runtime = await createRuntime({ config, command: 'backfill', listenIfFree: true, redactor: io.redactor });
  const reporter = cliReporter(io, values, config, runtime.bus);
  try {
    const source = flowSource(config, runtime.registry);
    const flow = findFlow(source.dir, positionals[0]!, source.options);
    const daemon = values['no-daemon'] ? { target: undefined } : await findDaemon(runtime.store, config.ui.token);
    if (daemon.target) {
      const { slots } = await createHttpEngineClient(daemon.target).backfill(flow.name, range);
      io.err(
        `msgflow: backfill of ${flow.name}: ${slots.filter((s) => !s.existing).length} run(s) execute in the daemon (${daemon.target.url})`,
      );
      const lines = slots.map((s) => slotLine(s, s.existing ? `already run (${s.existing})` : 'started in the daemon'));
      io.out(values.json ? JSON.stringify({ flow: flow.name, slots }, null, 2) : lines.join('\n'));
      return EXIT.OK;
    }
    const local = createInProcessEngineClient(runtime);
    const { slots, done } = await local.backfillHere(flow, range);
    const ended = new Map((await done).map((r): [string, RunRecord] => [r.id, r]));
    reporter.close();
    const status = (s: BackfillSlot) => (s.existing ? `already run (${s.existing})` : (ended.get(s.runId)?.status ?? 'not started'));
    if (values.json) io.out(JSON.stringify({ flow: flow.name, slots: slots.map((s) => ({ ...s, status: status(s) })) }, null, 2));
    else {
      const added = slots.filter((s) => !s.existing).length;
      io.out(`backfill ${flow.name}: ${slots.length} slot(s) from ${iso(range.from)} to ${iso(range.to)}, ${added} run(s) started`);
      if (slots.length > 0) io.out(slots.map((s) => slotLine(s, status(s))).join('\n'));
    }
    return [...ended.values()].every((r) => r.status === 'succeeded') ? EXIT.OK : EXIT.FAILURE;
  } finally {
    reporter.close();
    await runtime.close();
  }
}
