/**
 * How a front end shows the engine's events and counters (see frontend.ts
 * for why the CLI reaches them through the runtime): the event bus it
 * listens on, the reporter that words events as progress bars and log lines,
 * and the wording of counts, waits and times. Light to load: every
 * `msgflow` command, `--help` included, loads it.
 */
export { createBus } from '../engine/events.js';
export { createCliReporter } from '../engine/progress/cli-reporter.js';
export { clip, formatCounts, formatItems, formatUntil, formatWaiting } from '../engine/progress/format.js';
export { runCounts } from '../store/types.js';
