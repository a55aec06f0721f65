/**
 * What a person watching a run sees: a progress bar or periodic progress
 * lines, and readable log lines of run and step events. Both only subscribe
 * to the engine's bus.
 */
export {
  createProgressReporter,
  formatBarLine,
  formatPlainLine,
  type OutputStream,
  type ProgressReporter,
  type ProgressReporterOptions,
} from './progress-reporter.js';
export { createLogSubscriber, formatEvent, type LogLevel, type LogSubscriber, type LogSubscriberOptions } from './log-subscriber.js';
export { formatRate, renderBar } from './format.js';
export type { StepView } from './step-tracker.js';
export { createCliReporter, type CliReporter, type CliReporterOptions } from './cli-reporter.js';
export { formatUntil, formatWaiting } from './format.js';
export { LEVEL_RANK } from './log-subscriber.js';
