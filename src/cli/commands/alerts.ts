import { loadConfig } from '../../runtime/frontend.js';
import { openAlerts, type AlertRecord } from '../../runtime/alerts.js';
import { parseCommand } from '../args.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { configOptions, type Io } from '../output.js';
import { columnFormat } from '../table.js';

/**
 * `msgflow alerts`: every alert's state (raised or resolved), the latest
 * first: what failed, ran late, was missed or paused, and when. Reads the
 * store alone, like `msgflow pauses`: it works whatever else fails to load.
 */
export async function alerts(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseCommand('alerts', argv);
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  const config = loadConfig(values.config ?? 'config.yaml', configOptions(io));
  const store = openAlerts(config);
  try {
    const list = await store.list();
    const shown = values.raised ? list.filter((a) => a.state === 'raised') : list;
    if (values.json) {
      io.out(JSON.stringify(shown, null, 2));
      return EXIT.OK;
    }
    io.out(shown.length === 0 ? 'no alerts' : formatAlertsTable(shown));
    return EXIT.OK;
  } finally {
    await store.close();
  }
}

/** One line per alert: state, kind, subject, occurrences, when; its message on the next line. */
export function formatAlertsTable(list: readonly AlertRecord[]): string {
  const when = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')}Z`;
  const rows = list.map((a) => [a.state, a.kind, a.subject, String(a.occurrences), when(a.updatedAt)]);
  const header = ['STATE', 'KIND', 'SUBJECT', 'TIMES', 'LAST'];
  const fmt = columnFormat(header, rows);
  return [fmt(header), ...rows.flatMap((r, i) => [fmt(r), `  ${list[i]!.message}`])].join('\n');
}
