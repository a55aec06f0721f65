import { loadConfig } from '../../runtime/frontend.js';
import { openPauses, type PauseRecord } from '../../runtime/pauses.js';
import { clip, formatUntil } from '../../runtime/present.js';
import { parseCommand, subcommandOf } from '../args.js';
import { EXIT } from '../exit-codes.js';
import { configOptions, type Io } from '../output.js';
import { columnWidths } from '../table.js';

/** Columns a line of `msgflow pauses` keeps within (the reason is cut to fit, never the end). */
const LINE_WIDTH = 80;

/**
 * `msgflow pauses`: lists instance-wide pauses; `msgflow pauses lift INSTANCE`
 * lifts them. Runs waiting on a pause re-read it from the store (whatever
 * process or host they run in), so they call the instance again at once.
 */
export async function pauses(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseCommand('pauses', argv);
  const { sub, arg: target } = subcommandOf('pauses', positionals, { subs: ['lift'], arg: 'an INSTANCE (its config name or identity)' });
  const config = loadConfig(values.config ?? 'config.yaml', configOptions(io));
  const store = openPauses(config);
  try {
    const now = Date.now();
    if (sub === 'lift') {
      const lifted = await store.lift(target!);
      if (lifted.length === 0) {
        io.err(`msgflow: no pause for instance '${target}' (msgflow pauses lists them)`);
        return EXIT.FAILURE;
      }
      for (const p of lifted)
        io.out(`lifted: ${p.instance} (${p.identity}) ${p.scope}; runs waiting on it call the instance again at once`);
      return EXIT.OK;
    }
    const active = await store.active(now);
    if (values.json) {
      io.out(JSON.stringify(active, null, 2));
      return EXIT.OK;
    }
    if (active.length === 0) {
      io.out('no pauses');
      return EXIT.OK;
    }
    io.out(formatPausesTable(active, now));
    return EXIT.OK;
  } finally {
    await store.close();
  }
}

/**
 * One line per pause within 80 columns, each saying its end once (UTC, as
 * `msgflow runs`) and its reason once, then how to lift them.
 */
export function formatPausesTable(list: readonly PauseRecord[], now: number): string {
  const rows = list.map((p) => [p.instance, p.scope, formatUntil(p.until, now, { utc: true }), p.reason]);
  const header = ['INSTANCE', 'SCOPE', 'UNTIL', 'REASON'];
  // The reason takes what is left of the line: only the first three columns are padded.
  const widths = columnWidths(header, rows, 3);
  const fmt = (r: string[]) => {
    const head = widths.map((w, i) => r[i]!.padEnd(w)).join('  ');
    return `${head}  ${clip(r[3]!, Math.max(LINE_WIDTH - head.length - 2, 12))}`.trimEnd();
  };
  const names = [...new Set(list.map((p) => p.instance))];
  return [fmt(header), ...rows.map(fmt), `lift with: msgflow pauses lift ${names.length === 1 ? names[0] : 'INSTANCE'}`].join('\n');
}
