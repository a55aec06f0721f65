/**
 * Appends a job's journal entries without waiting for each to be durable
 * before the next record starts, up to `maxPending` in flight (the store
 * batches concurrent appends: one write for many records). A job uses it only
 * where a record whose entry is lost in a crash is safe to meet again on
 * resume (e.g. its answer is already in a durable cache, or its chatId is in
 * the durable intent list); `pending()` names the records not yet durable.
 */
import type { RunJournal } from '../../engine/action.js';

export class JournalWriter<E> {
  private readonly inFlight: { key: unknown; done: Promise<void>; settled: boolean }[] = [];
  private failure: unknown;

  /** @param maxPending entries in flight before append waits for the oldest. @default 64 */
  constructor(
    private readonly journal: RunJournal,
    private readonly maxPending = 64,
  ) {}

  /** Appends; resolves at once unless `maxPending` entries are still in flight. */
  async append(key: unknown, entry: E): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    const rec = { key, done: Promise.resolve(), settled: false };
    rec.done = this.journal.append(entry).then(
      () => void (rec.settled = true),
      (e: unknown) => {
        rec.settled = true;
        this.failure ??= e;
      },
    );
    this.inFlight.push(rec);
    while (this.inFlight.length > this.maxPending) await this.inFlight.shift()!.done;
    this.prune();
    if (this.failure !== undefined) throw this.failure;
  }

  /** Keys of the records whose entries may not be durable yet. */
  pending(): unknown[] {
    return this.inFlight.map((p) => p.key);
  }

  /** Waits until every entry appended so far is durable. */
  async flush(): Promise<void> {
    await Promise.all(this.inFlight.map((p) => p.done));
    this.inFlight.length = 0;
    if (this.failure !== undefined) throw this.failure;
  }

  private prune(): void {
    // Entries resolve in order: drop the settled head cheaply.
    let settled = 0;
    for (const p of this.inFlight) {
      if (!p.settled) break;
      settled++;
    }
    if (settled > 0) this.inFlight.splice(0, settled);
  }
}
