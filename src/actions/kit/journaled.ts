/**
 * The shape shared by jobs that journal one entry per finished record and
 * stream a report (check.accountBulk, contacts.import): what they carry from
 * phase to phase, how a resume replays the journal into the report, and how
 * a failure leaves counters, journal and report consistent.
 */
import type { ActionContext } from '../../engine/action.js';
import type { JobCounters } from './counters.js';
import type { FailureGuard } from './guard.js';
import type { JournalWriter } from './journal.js';
import type { ReportRow, ReportWriter } from './report.js';
import type { RowIndex } from './row-index.js';

/** One journal entry per finished record: its key, its report cells, and whether it failed retryably. */
export interface JournalEntry {
  k: number | string;
  /** a retryable failure: tried again by the next attempt or resume */
  x?: 1;
  /** The report row, as cells in the report's column order (see {@link reportCells}). */
  r: unknown[];
}

/** What a journaled job carries from phase to phase (each job adds its own fields). */
export interface JournaledJob<E extends JournalEntry> {
  reportPath: string;
  report: ReportWriter;
  counters: JobCounters;
  guard: FailureGuard;
  journal: JournalWriter<E>;
  /** Records finished before this attempt (from the journal), not yet met again in the input. */
  done: Set<E['k']>;
  /** Records met in the input so far, with the place of the row that met each first (a duplicate names it); compact for numbers. */
  seen: RowIndex<E['k']>;
  calls: number;
}

/**
 * A report row as compact cells in `columns` order, and back: journal entries
 * store cells, not names.
 *
 * @example const { toCells, fromCells } = reportCells<CheckResult>(CHECK_REPORT_COLUMNS);
 */
export function reportCells<R>(columns: readonly (keyof R & string)[]) {
  return {
    toCells: (r: R): unknown[] => columns.map((c) => r[c]),
    fromCells: (cells: unknown[]): ReportRow => Object.fromEntries(columns.map((c, i) => [c, cells[i]])),
  };
}

/**
 * Resume: every record the journal says finished goes back into the report
 * and is counted by `count`; retryable failures are left to be tried again.
 */
export async function replayJournal<E extends JournalEntry>(
  ctx: ActionContext,
  job: JournaledJob<E>,
  fromCells: (cells: unknown[]) => ReportRow,
  count: (e: E) => void,
): Promise<void> {
  for await (const e of ctx.journal.replay<E>()) {
    if (e.x) continue;
    job.done.add(e.k);
    count(e);
    await job.report.write(fromCells(e.r));
  }
  job.counters.flush();
}

/** Runs the records; on a failure flushes counters and journal and ends the report where it is, then rethrows. */
export async function runJournaled<E extends JournalEntry>(job: JournaledJob<E>, work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (e) {
    job.counters.flush();
    await job.journal.flush().catch(() => undefined);
    await job.report.abort();
    throw e;
  }
}
