import { loadConfig } from '../../config/index.js';
import { createStore } from '../../store/index.js';
import type { RunRecord } from '../../store/types.js';
import { formatDuration } from '../../engine/progress/index.js';
import { parse, parsePositiveInt } from '../args.js';
import { EXIT } from '../exit-codes.js';
import type { Io } from '../output.js';

/** `msgflow runs`: run history from the store, newest first. Reads only. */
export async function runs(argv: string[], io: Io): Promise<number> {
  const { values } = parse(
    argv,
    {
      config: { type: 'string', short: 'c' },
      flow: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
    },
    false,
  );
  const limit = parsePositiveInt(values.limit, '--limit') ?? 20;
  const config = loadConfig(values.config ?? 'config.yaml');
  const store = createStore(config.store, config.baseDir);
  try {
    const list = await store.listRuns({ flow: values.flow, limit });
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
    await store.close();
  }
}

export function formatRunsTable(list: readonly RunRecord[], now = Date.now()): string {
  const rows = list.map((r) => [
    r.id,
    r.flow,
    r.status + (r.status === 'waiting' && r.waitingUntil ? ` until ${new Date(r.waitingUntil).toISOString()}` : ''),
    new Date(r.startedAt).toISOString().replace('T', ' ').slice(0, 19),
    formatDuration(r.durationMs ?? now - r.startedAt),
    String(r.itemsDone),
    String(r.itemsFailed),
  ]);
  const header = ['RUN', 'FLOW', 'STATUS', 'STARTED (UTC)', 'DURATION', 'DONE', 'FAILED'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const fmt = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  return [fmt(header), ...rows.map(fmt)].join('\n');
}
