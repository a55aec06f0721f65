/**
 * Everything a command shows while the engine works, in one place: progress
 * bars (terminal) or periodic progress lines (files, CI), and the log lines
 * of engine events and `log` steps, filtered by one level. With `json`, one
 * JSON object per line (pino) and no bars, for machines.
 *
 * Every line goes through one channel so that a log line never lands inside a
 * bar, through redaction, since error texts may quote a request URL that
 * held the instance's token, and through escapeControl, since messages may
 * quote what others wrote (an incoming message's CR or ESC is shown, not
 * obeyed).
 */
import pino from 'pino';
import { createBus, type EngineBus, type EngineEventName } from '../events.js';
import type { Logger } from '../../util/logger.js';
import { redact, type Secrets } from '../../api/redact.js';
import type { Redactor } from '../../util/secrets.js';
import { escapeControl } from '../../util/printable.js';
import { systemClock, type Clock } from '../../util/clock.js';
import { formatEvent, LEVEL_RANK, LOGGED_EVENTS, type LogLevel } from './log-subscriber.js';
import { createProgressReporter, type OutputStream, type ProgressReporter } from './progress-reporter.js';

export interface CliReporterOptions {
  /** The engine's events to show; without one (e.g. `msgflow serve`), only the logger's lines. */
  bus?: EngineBus;
  /** @default process.stderr */
  stream?: OutputStream;
  /** Lines below this level are dropped; `silent` drops all. Bars show unless silent; plain progress lines are info. @default info */
  level?: LogLevel | 'silent';
  /** One JSON object per line (pino), no progress bar. @default false */
  json?: boolean;
  /** Bars redrawn in place. @default stream.isTTY */
  tty?: boolean;
  /** @default systemClock */
  clock?: Clock;
  /** Tokens and instance ids written as `<API_TOKEN>` / `<INSTANCE_ID>` (on top of the redactor's). */
  secrets?: Secrets[];
  /** What the invocation hides (the runtime adds its tokens and instance ids). @default none */
  redactor?: Redactor;
  /** Between redraws (terminal) or progress lines (plain). @default 100 on a terminal, 5000 otherwise */
  intervalMs?: number;
}

export interface CliReporter {
  /** A logger whose lines take the same way as the engine's (above the bars, or JSON). */
  logger: Logger;
  /** Unsubscribes and clears the bars. Idempotent. */
  close(): void;
}

/**
 * @example
 * const reporter = createCliReporter({ bus: runtime.bus, stream: io.stderr, level: 'info', json: false });
 * try { await handle.done } finally { reporter.close() }
 */
export function createCliReporter(opts: CliReporterOptions): CliReporter {
  const stream = opts.stream ?? process.stderr;
  const clock = opts.clock ?? systemClock;
  const min = LEVEL_RANK[opts.level ?? 'info'];
  const secrets = opts.secrets ?? [];
  const scrub = opts.redactor?.scrub ?? ((t: string) => t);
  const clean = (t: string) => scrub(secrets.reduce((x, s) => redact(x, s), t));
  const tty = !opts.json && (opts.tty ?? Boolean(stream.isTTY));

  let progress: ProgressReporter | undefined;
  let emitLine: (level: LogLevel, text: string, fields?: Record<string, unknown>) => void;

  if (opts.json) {
    const json = pino(
      {
        level: opts.level ?? 'info',
        base: undefined,
        timestamp: () => `,"time":"${new Date(clock.now()).toISOString()}"`,
        formatters: { level: (label) => ({ level: label }) },
      },
      // Synchronous, redacted writes to our stream: one object per line.
      { write: (s: string) => void stream.write(escapeControl(clean(s))) },
    );
    emitLine = (level, text, fields) => json[level](fields ?? {}, text);
  } else {
    // Plain progress lines are info lines (a daemon at `warn` prints none); bars show unless silent.
    const showProgress = tty ? min < LEVEL_RANK.silent : min <= LEVEL_RANK.info;
    progress = showProgress
      ? createProgressReporter({ bus: opts.bus ?? createBus(), stream, isTTY: tty, clock, intervalMs: opts.intervalMs })
      : { print: (line) => void stream.write(`${line}\n`), close: () => {} };
    const stamp = (t: number) => {
      if (!tty) return new Date(t).toISOString();
      // A person at a terminal reads the time of day; files and CI keep the full UTC timestamp.
      const d = new Date(t);
      return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
    };
    emitLine = (level, text, fields) => {
      const extra = fields && Object.keys(fields).length ? ` ${JSON.stringify(fields)}` : '';
      // Continuation lines of a multi-line error stay visibly part of this entry.
      const body = escapeControl(clean(`${text}${extra}`)).replace(/\n/g, '\n    ');
      progress!.print(`${stamp(clock.now())} ${level.toUpperCase().padEnd(5)} ${body}`);
    };
  }

  const bus = opts.bus;
  const listeners = (bus ? LOGGED_EVENTS : []).map((name: EngineEventName) => {
    const listener = (event: never) => {
      const [level, text] = formatEvent(name, event, clock.now());
      if (LEVEL_RANK[level] < min) return;
      if (opts.json) {
        // Machines get the event's fields as they are, and its name.
        const { level: _l, message: _m, fields, ...rest } = event as Record<string, unknown>;
        emitLine(level, name === 'log' ? String(_m) : text, { event: name, ...rest, ...(fields as Record<string, unknown> | undefined) });
      } else if (name === 'log') {
        // A person reads the message; the run's id and flow are in the lines around it.
        const { message, fields } = event as { message: unknown; fields?: Record<string, unknown> };
        const { runId: _r, flow: _f, ...rest } = fields ?? {};
        emitLine(level, String(message), rest);
      } else emitLine(level, text);
    };
    bus!.on(name, listener as never);
    return [name, listener] as const;
  });

  const at =
    (level: LogLevel) =>
    (message: string, fields?: Record<string, unknown>): void => {
      if (LEVEL_RANK[level] >= min) emitLine(level, message, fields);
    };
  let closed = false;
  return {
    logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
    close() {
      if (closed) return;
      closed = true;
      for (const [name, listener] of listeners) bus!.off(name, listener as never);
      progress?.close();
    },
  };
}
