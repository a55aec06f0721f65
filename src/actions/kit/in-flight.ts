/**
 * Records in flight for a bulk job: each record's work (its cache lookup,
 * its service call, its cache write) starts as soon as one of `limit` slots
 * is free, while its commit (journal entry, counters, report row, failure
 * guard) runs strictly in record order. The journal and the report read as
 * if the records went one at a time, and the store's group commit carries
 * the entries of many records in one write.
 *
 * Exactly-once is the job's own rule, unchanged: a record's work makes its
 * effect findable on resume (an answer in the durable cache, a chatId in the
 * durable intent list) before its commit; a crash with records in flight
 * loses only commits, and their records are met again and resolved from
 * there.
 *
 * The window opens slowly: one record at a time until a commit reports a
 * success ({@link InFlight.succeeded}), the full `limit` from then on, and
 * one at a time again after a failure ({@link InFlight.failed}) until the
 * next success. So a wrong token or a failing service costs the calls it
 * cost one record at a time (the first call stops a job, the failure guard
 * counts calls in a row), not a window of them.
 *
 * A work or commit that throws stops the window: no later record is
 * committed, every started work is waited for (none is left calling the
 * service after the job ended), and the error is thrown by the next `push`
 * or by `drain`.
 */
import { z } from 'zod';
import type { Pace } from '../pace.js';

/** Records in flight when pacing does not serialise the calls. */
export const DEFAULT_IN_FLIGHT = 16;

/** `inFlight`: how many records a job works on at once. */
export const inFlightField = () =>
  z
    .number()
    .int()
    .min(1)
    .max(256)
    .optional()
    .describe(
      `Records worked on at once (their calls overlap; journal and report stay in record order). @default 1 when pace.delay > 0 (pacing spaces the calls), else ${DEFAULT_IN_FLIGHT}; the client's rate limit, when on, still spaces the calls`,
    );

/**
 * The window size: as given, else 1 when the job paces its calls (a pause
 * between two calls means one call at a time), else {@link DEFAULT_IN_FLIGHT}
 * (the client's rate limiter, when on, spaces the calls of the records in
 * flight by itself).
 */
export function inFlightLimit(given: number | undefined, pace: Pace): number {
  if (given !== undefined) return given;
  return pace.delay > 0 ? 1 : DEFAULT_IN_FLIGHT;
}

/**
 * @example
 * const window = new InFlight(16);
 * for await (const t of targets) await window.push(() => ask(t), (answer) => record(t, answer));
 * await window.drain();
 */
export class InFlight {
  /** The last commit queued: each commit chains on the one before it. */
  private tail: Promise<void> = Promise.resolve();
  /** Commits not yet awaited by `push`, oldest first. */
  private readonly commits: Promise<void>[] = [];
  /** Works started and not yet settled. */
  private readonly works = new Set<Promise<unknown>>();

  /** Records allowed in flight now: 1 until a success, `limit` after one, 1 again after a failure. */
  private width = 1;

  constructor(readonly limit: number) {}

  /** A committed record succeeded: open the window to its limit. */
  succeeded(): void {
    this.width = this.limit;
  }

  /** A committed record failed: one record at a time until the next success. */
  failed(): void {
    this.width = 1;
  }

  /**
   * Starts `work` now and queues `commit` with its result after the commits
   * of every earlier record; resolves once fewer than `limit` records are
   * uncommitted.
   */
  async push<T>(work: () => Promise<T>, commit: (result: T) => Promise<void>): Promise<void> {
    const started = work();
    this.works.add(started);
    const forget = () => void this.works.delete(started);
    started.then(forget, forget);
    const done = this.tail.then(async () => commit(await started));
    // A failure surfaces through push/drain; nothing is left unhandled meanwhile.
    done.catch(() => undefined);
    this.tail = done;
    this.commits.push(done);
    while (this.commits.length >= this.width) await this.settle(this.commits.shift()!);
  }

  /** Waits until every record pushed is committed. */
  async drain(): Promise<void> {
    this.commits.length = 0;
    await this.settle(this.tail);
  }

  /** Awaits a commit; on a failure, waits for every started work before throwing it. */
  private async settle(commit: Promise<void>): Promise<void> {
    try {
      await commit;
    } catch (e) {
      await Promise.allSettled([...this.works]);
      throw e;
    }
  }
}
