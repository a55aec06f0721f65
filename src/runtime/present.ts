/**
 * How a front end shows the engine's events and counters (see frontend.ts
 * for why the CLI reaches them through the runtime): the event bus it
 * listens on, the reporter that words events as progress bars and log lines,
 * and the wording of counts, waits and times. Light to load: every
 * `msgflow` command, `--help` included, loads it.
 */
export { createBus } from '../engine/events.js';
export { createCliReporter } from '../engine/progress/cli-reporter.js';
export { clip, formatByFlow, formatCounts, formatItems, formatUntil, formatWaiting } from '../engine/progress/format.js';
export { runCounts } from '../store/types.js';
// The wording helpers of util a front end prints with (no I/O), and the error classes every layer throws (the exit code follows the code).
export { formatClock, formatDuration, formatSpan, parseDuration } from '../util/duration.js';
export { MIN_RETENTION_MS } from '../store/config.js';
export { escapeControl } from '../util/printable.js';
export { portInUseError } from '../util/port-in-use.js';
export { Redactor } from '../util/secrets.js';
export { closest, didYouMean } from '../util/suggest.js';
export { TOKEN_PLACEHOLDER } from '../api/redact.js';
export { ConfigError, MsgflowError, type FlowError } from '../api/errors.js';
export type { ItemResult, RunPlan, RunRecord, StepRecord } from '../store/types.js';
export type { LoadConfigOptions } from '../config/load.js';
