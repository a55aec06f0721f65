/**
 * A run's logger: every line goes to the process's logger with the run's ids,
 * and info and above are also kept with the run (journal `_log`, what
 * `msgflow runs show` and the dashboard print), whichever process wrote
 * them: the one that drives the run or a BullMQ worker working its items.
 */
import type { EngineStore } from '../../store/types.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../action.js';

/** The journal stream of a run's persisted log lines. */
export const RUN_LOG_STREAM = '_log';
/** Log lines kept per run execution (per process working the run). */
export const MAX_LOG_LINES = 1000;

/** One persisted log line of a run. */
export interface RunLogLine {
  at: number;
  level: 'info' | 'warn' | 'error';
  message: string;
}

/**
 * The logger of one run in one process: lines carry `{ runId, flow }`; at
 * most MAX_LOG_LINES are kept, so a chatty flow cannot grow the store
 * without bound. Keeping is best effort: a log line never fails a run.
 */
export function runLogger(o: {
  store: EngineStore;
  clock: Clock;
  logger: Logger;
  runId: string;
  flow: string;
  /** What a kept line goes through (secrets hidden). @default none */
  scrub?: (text: string) => string;
}): Logger {
  const ref = { runId: o.runId, flow: o.flow };
  let kept = 0;
  const keep = (level: RunLogLine['level'], message: string): void => {
    if (kept > MAX_LOG_LINES) return;
    const line: RunLogLine =
      kept++ === MAX_LOG_LINES
        ? { at: o.clock.now(), level: 'warn', message: `further log lines of this run are not kept (limit ${MAX_LOG_LINES})` }
        : { at: o.clock.now(), level, message: o.scrub ? o.scrub(message) : message };
    o.store.appendJournal(o.runId, RUN_LOG_STREAM, [line]).catch(() => {});
  };
  const log = o.logger;
  return {
    debug: (m, f) => log.debug(m, { ...ref, ...f }),
    info: (m, f) => (keep('info', m), log.info(m, { ...ref, ...f })),
    warn: (m, f) => (keep('warn', m), log.warn(m, { ...ref, ...f })),
    error: (m, f) => (keep('error', m), log.error(m, { ...ref, ...f })),
  };
}
