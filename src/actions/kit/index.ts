/**
 * The job kit: what the built-in jobs share and plugin authors may use for
 * their own bulk jobs: input fields, a streaming row reader, a streaming
 * report writer, progress counters, and the failure guard built on the one
 * classify().
 */
export { fileField, itemsField, reportField, maxConsecutiveFailuresField } from './inputs.js';
export { readRows, countRows, pickField, parseBool, type RowSource, type SourcedRow } from './rows.js';
export {
  openReport,
  writeReport,
  toCsv,
  csvLine,
  reportFormat,
  defaultReport,
  type ReportWriter,
  type ReportRow,
  type ReportContent,
} from './report.js';
export { JobCounters, type CounterName } from './counters.js';
export { FailureGuard, whatToFix } from './guard.js';
export { JournalWriter } from './journal.js';
export { classify, type FailureClass } from '../../api/failure.js';
export { reportCells, replayJournal, runJournaled, type JournalEntry, type JournaledJob } from './journaled.js';
