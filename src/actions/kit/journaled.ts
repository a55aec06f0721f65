/**
 * The shape shared by jobs that journal one entry per finished record and
 * stream a report (check.accountBulk, contacts.import): what they carry from
 * phase to phase, how a resume replays the journal into the report, and how
 * a failure leaves counters, journal and report consistent; and the writer
 * that appends a record's entry ({@link JournalWriter}): a row's entry is
 * built, written and replayed by this one module.
 */
import type { ActionContext, RunJournal } from '../../engine/action.js';
import type { JobCounters } from './counters.js';
import type { FailureGuard } from './guard.js';
import type { InFlight } from './in-flight.js';
import type { ReportWriter } from './report.js';
import type { RowIndex } from './row-index.js';

/** One journal entry per finished record: its key, its report cells, and whether it failed retryably. */
export interface JournalEntry {
  k: number | string;
  /** a retryable failure: tried again by the next attempt or resume */
  x?: 1;
  /** The report row as the report keeps it (ReportWriter.keep: a CSV line, or cells in column order). */
  r: unknown;
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
 * Resume: every record the journal says finished goes back into the report
 * and is counted by `count`; retryable failures are left to be tried again.
 */
export async function replayJournal<E extends JournalEntry>(
  ctx: ActionContext,
  job: JournaledJob<E>,
  count: (e: E) => void,
): Promise<void> {
  for await (const e of ctx.journal.replay<E>()) {
    if (e.x) continue;
    job.done.add(e.k);
    count(e);
    await job.report.writeKept(e.r);
  }
  job.counters.flush();
}

/**
 * Runs the records: each planned record's `work` in the job's window (its
 * calls overlap), its `commit` in record order, then the window drained. On a
 * failure flushes counters and journal and ends the report where it is, then
 * rethrows.
 */
export async function runJournaled<E extends JournalEntry, R, A>(
  job: JournaledJob<E> & { window: InFlight },
  records: AsyncIterable<R>,
  work: (r: R) => Promise<A>,
  commit: (r: R, answer: A) => Promise<void>,
): Promise<void> {
  try {
    for await (const r of records)
      await job.window.push(
        () => work(r),
        (a) => commit(r, a),
      );
    await job.window.drain();
  } catch (e) {
    job.counters.flush();
    await job.journal.flush().catch(() => undefined);
    await job.report.abort();
    throw e;
  }
}

/**
 * Appends a job's journal entries without waiting for each to be durable
 * before the next record starts, up to `maxPending` not yet durable (the
 * oldest waited for beyond that). Entries appended in one turn of the event
 * loop go to the journal in one call (one store call, one promise, for the
 * entries of every record committed in that turn; the store's group commit
 * then writes them in one write(2)). A job uses it only where a record whose
 * entry is lost in a crash is safe to meet again on resume (e.g. its answer
 * is already in a durable cache, or its chatId is in the durable intent
 * list); `pending()` names the records not yet durable.
 */
export class JournalWriter<E> {
  /** Batches handed to the journal, oldest first, until they are durable. */
  private readonly inFlight: { keys: unknown[]; done: Promise<void>; settled: boolean }[] = [];
  /** Entries of this turn, not handed to the journal yet. */
  private open: { keys: unknown[]; entries: E[] } | undefined;
  /** Entries appended and not yet durable (open and in flight). */
  private unsettled = 0;
  private failure: unknown;

  /** @param maxPending entries not yet durable before append waits for the oldest. @default 64 */
  constructor(
    private readonly journal: RunJournal,
    private readonly maxPending = 64,
  ) {}

  /** Appends; resolves at once unless `maxPending` entries are not yet durable. */
  async append(key: unknown, entry: E): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    if (!this.open) {
      this.open = { keys: [], entries: [] };
      setImmediate(() => this.send());
    }
    this.open.keys.push(key);
    this.open.entries.push(entry);
    this.unsettled++;
    while (this.unsettled > this.maxPending) {
      if (this.inFlight.length === 0) this.send();
      await this.inFlight[0]!.done;
      this.prune();
    }
    this.prune();
    if (this.failure !== undefined) throw this.failure;
  }

  /** Keys of the records whose entries may not be durable yet. */
  pending(): unknown[] {
    return [...this.inFlight.flatMap((p) => p.keys), ...(this.open?.keys ?? [])];
  }

  /** Waits until every entry appended so far is durable. */
  async flush(): Promise<void> {
    this.send();
    await Promise.all(this.inFlight.map((p) => p.done));
    this.prune();
    if (this.failure !== undefined) throw this.failure;
  }

  /** Hands the turn's entries to the journal in one call. */
  private send(): void {
    const batch = this.open;
    this.open = undefined;
    if (!batch) return;
    const rec = { keys: batch.keys, done: Promise.resolve(), settled: false };
    const settle = () => {
      rec.settled = true;
      this.unsettled -= batch.keys.length;
    };
    rec.done = this.journal.append(...batch.entries).then(settle, (e: unknown) => {
      settle();
      this.failure ??= e;
    });
    this.inFlight.push(rec);
  }

  private prune(): void {
    // Batches resolve in order: drop the settled head cheaply.
    let settled = 0;
    for (const p of this.inFlight) {
      if (!p.settled) break;
      settled++;
    }
    if (settled > 0) this.inFlight.splice(0, settled);
  }
}
