/**
 * Readable log lines of engine events: `2026-01-05T09:00:00.123Z INFO  ...`.
 * Every line goes through redaction, since error texts may quote a request
 * URL that held the instance's token.
 */
import type { EngineBus, EngineEventName, EngineEvents } from '../events.js';
import { redact, type Secrets } from '../../api/redact.js';
import { systemClock, type Clock } from '../../util/clock.js';
import { formatClock, formatSpan } from '../../util/duration.js';
import { escapeControl } from '../../util/printable.js';
import { runCounts } from '../../store/types.js';
import { formatByFlow, formatCounts, formatItems, formatWaiting } from './format.js';
import type { OutputStream } from './progress-reporter.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface LogSubscriberOptions {
  bus: EngineBus;
  /** @default process.stderr */
  stream?: OutputStream;
  /** Lines below this level are dropped; `silent` drops all. @default info */
  level?: LogLevel | 'silent';
  /** Timestamps. @default systemClock */
  clock?: Clock;
  /** Tokens and instance ids written as `<API_TOKEN>` / `<INSTANCE_ID>` wherever they appear. */
  secrets?: Secrets[];
}

export interface LogSubscriber {
  close(): void;
}

const iso = (t: number) => new Date(t).toISOString();
const ms = (n: number) => (n < 1000 ? `${n}ms` : n < 60_000 ? `${Math.round(n / 100) / 10}s` : formatClock(n));
const run = (e: { runId: string; flow: string }) => `${e.flow} (run ${e.runId})`;
const at = (e: { flow: string; step: string }) => `${e.flow}/${e.step}`;

type Formatters = { [K in EngineEventName]: (e: EngineEvents[K][0], now: number) => [LogLevel, string] };

const FORMATTERS: Formatters = {
  'run:started': (e) => ['info', `${run(e)} started (trigger ${e.trigger}${e.dryRun ? ', dry run' : ''})`],
  'run:finished': (e) => ['info', `${run(e)} finished in ${formatSpan(e.durationMs)}: ${formatCounts(runCounts(e))}`],
  'run:failed': (e) => ['error', `${run(e)} failed${e.step ? ` at step ${e.step}` : ''}: ${e.error}${e.code ? ` [${e.code}]` : ''}`],
  // The end and the reason, never an ETA: `... step check waiting until 21:14 (1h52m): checkAccount paused by ...`.
  'run:waiting': (e, now) => ['info', `${run(e)} step ${e.step} ${formatWaiting(e.reason, e.until, now)}`],
  'run:resumed': (e) => ['info', `${run(e)} resumed${e.step ? ` at step ${e.step}` : ''}`],
  'run:interrupted': (e) => ['warn', `${run(e)} interrupted: ${e.reason}`],
  'step:started': (e) => ['info', `${at(e)} started (${e.action}${e.total !== undefined ? `, ${formatItems(e.total)}` : ''})`],
  // The same counters as the bar and `msgflow runs`: `... succeeded (14 items): 8 done, 4 invalid, 2 duplicate`.
  'step:finished': (e) => [
    e.status === 'failed' ? 'error' : 'info',
    `${at(e)} ${e.status}${e.total !== undefined ? ` (${formatItems(e.total)})` : ''}: ${formatCounts(e)}${e.error ? `: ${e.error}` : ''}`,
  ],
  'step:retry': (e) => [
    'warn',
    `${at(e)}${e.item !== undefined ? ` item ${e.item}` : ''} attempt ${e.attempt} failed, retrying in ${ms(e.delayMs)}: ${e.error}`,
  ],
  'item:finished': (e) => [
    e.status === 'failed' ? 'warn' : 'debug',
    `${at(e)} item ${e.index} ${e.status}${e.error ? `: ${e.error}` : ''}`,
  ],
  'step:progress': (e) => ['debug', `${at(e)} progress: ${formatCounts({ ...e, failed: e.failed ?? 0 })} of ${e.total ?? '?'}`],
  'schedule:fired': (e) => ['info', `schedule: ${e.flow} fired for ${iso(e.scheduledAt)}`],
  'schedule:missed': (e) => [
    'warn',
    `schedule: ${e.flow} missed its run of ${iso(e.scheduledAt)} (missed: ${e.policy}; ${e.willRun ? 'running it now' : 'not run'})`,
  ],
  'schedule:skipped': (e) => ['info', `schedule: ${e.flow} skipped its run of ${iso(e.scheduledAt)}: ${e.reason}`],
  'action:event': (e) => ['info', `${at(e)} event ${e.name}${Object.keys(e.payload).length ? ` ${JSON.stringify(e.payload)}` : ''}`],
  'notification:received': (e) => [
    'debug',
    `notification ${e.type} from instance ${e.instance} (lag ${ms(e.lagMs)}, ${e.flowsStarted} run${e.flowsStarted === 1 ? '' : 's'} started)`,
  ],
  'api:call': (e) => ['debug', `api ${e.method} on instance ${e.instance}: ${e.outcome} in ${ms(e.durationMs)}`],
  'runs:deleted': (e) => [
    'info',
    `retention: deleted ${e.deleted} finished run${e.deleted === 1 ? '' : 's'} that ended before ${iso(e.cutoff)} (${formatByFlow(e.byFlow)})`,
  ],
  log: (e) => [e.level, `${e.message}${e.fields && Object.keys(e.fields).length ? ` ${JSON.stringify(e.fields)}` : ''}`],
};

/**
 * The level and text of one event, without timestamp.
 * @example formatEvent('run:waiting', { runId: 'r1', flow: 'f', step: 's', until: 0, reason: 'rate limit' })
 * // ['info', 'f (run r1) step s waiting until 01:00 (now): rate limit'] (local time)
 */
export function formatEvent<K extends EngineEventName>(name: K, event: EngineEvents[K][0], now: number = Date.now()): [LogLevel, string] {
  return (FORMATTERS[name] as (e: EngineEvents[K][0], now: number) => [LogLevel, string])(event, now);
}

/** Events whose line is always at debug level (their formatters say so). */
const DEBUG_ONLY: ReadonlySet<EngineEventName> = new Set(['step:progress', 'api:call']);

/** Every event the log lines describe. */
export const LOGGED_EVENTS = Object.keys(FORMATTERS) as EngineEventName[];

/** Rank of a level; `silent` is above every level. */
export const LEVEL_RANK: Record<LogLevel | 'silent', number> = { ...RANK, silent: 100 };

/**
 * @example createLogSubscriber({ bus, level: 'info', secrets: [{ idInstance, apiTokenInstance }] })
 */
export function createLogSubscriber(opts: LogSubscriberOptions): LogSubscriber {
  const stream = opts.stream ?? process.stderr;
  const clock = opts.clock ?? systemClock;
  const min = LEVEL_RANK[opts.level ?? 'info'];
  const secrets = opts.secrets ?? [];
  // Events always logged at debug are not listened to below it: a listener of api:call makes every
  // client call time itself and emit (runtime.ts), and formatting a line per call that is then
  // dropped cost each call of a bulk job's `msgflow run`.
  const names = (Object.keys(FORMATTERS) as EngineEventName[]).filter((n) => !(DEBUG_ONLY.has(n) && RANK.debug < min));
  const listeners = names.map((name) => {
    const listener = (event: never) => {
      const [level, text] = formatEvent(name, event, clock.now());
      if (RANK[level] < min) return;
      // Continuation lines of a multi-line error stay visibly part of this entry.
      const clean = escapeControl(secrets.reduce((t, s) => redact(t, s), text)).replace(/\n/g, '\n    ');
      stream.write(`${iso(clock.now())} ${level.toUpperCase().padEnd(5)} ${clean}\n`);
    };
    opts.bus.on(name, listener as never);
    return [name, listener] as const;
  });
  return {
    close() {
      for (const [name, listener] of listeners) opts.bus.off(name, listener as never);
    },
  };
}
