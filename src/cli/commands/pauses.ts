import { loadConfig } from '../../config/load.js';
import { formatClock } from '../../util/duration.js';
import { createStore } from '../../store/create.js';
import { parseCommand } from '../args.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { configOptions, type Io } from '../output.js';

/**
 * An instance-wide pause (e.g. checkAccount's rate_limit_exceeded): one
 * record per instance and scope in the shared namespace `pauses`, key
 * `${identity}:${scope}`, written and honoured by the jobs.
 */
export interface PauseRecord {
  /** Config name of the instance when the pause was recorded. */
  instance: string;
  identity: string;
  scope: string;
  /** Ms since the epoch. */
  until: number;
  since: number;
  retryAfterMs: number;
  reason: string;
}

/** The engine kv namespace of `ctx.shared('pauses')`. */
const PAUSES_NS = 'shared:pauses';

/** `msgflow pauses`: lists instance-wide pauses; `msgflow pauses lift INSTANCE` lifts them. */
export async function pauses(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parseCommand('pauses', argv);
  const [sub, target, ...extra] = positionals;
  if (sub !== undefined && sub !== 'lift') throw new UsageError(`unknown pauses subcommand '${sub}' (expected lift)`);
  if (sub === 'lift' && target === undefined) throw new UsageError('pauses lift expects an INSTANCE (its config name or identity)');
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  const config = loadConfig(values.config ?? 'config.yaml', configOptions(io));
  const store = createStore(config.store, config.baseDir);
  try {
    const kv = store.kv(PAUSES_NS);
    const all = await kv.entries<PauseRecord>();
    const now = Date.now();
    if (sub === 'lift') {
      const hits = all.filter(([, p]) => p.instance === target || p.identity === target);
      if (hits.length === 0) {
        io.err(`msgflow: no pause for instance '${target}' (msgflow pauses lists them)`);
        return EXIT.FAILURE;
      }
      for (const [key, p] of hits) {
        await kv.delete(key);
        io.out(`lifted: ${p.instance} (${p.identity}) ${p.scope}`);
      }
      return EXIT.OK;
    }
    const active = all.filter(([, p]) => p.until > now).map(([, p]) => p);
    if (values.json) {
      io.out(JSON.stringify(active, null, 2));
      return EXIT.OK;
    }
    if (active.length === 0) {
      io.out('no pauses');
      return EXIT.OK;
    }
    for (const p of active) {
      io.out(
        `${p.instance} (${p.identity}) ${p.scope}: paused by ${p.reason} until ${new Date(p.until).toISOString()} (${formatClock(p.until - now)} left); lift with: msgflow pauses lift ${p.instance}`,
      );
    }
    return EXIT.OK;
  } finally {
    await store.close();
  }
}
