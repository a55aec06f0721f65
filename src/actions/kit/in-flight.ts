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

/** A record in the window: its work's outcome once settled, and its commit. */
interface Slot<T = unknown> {
  /** 0 working, 1 answered, 2 failed */
  state: 0 | 1 | 2;
  value: T | unknown;
  commit: (result: T) => Promise<void>;
}

/**
 * @example
 * const window = new InFlight(16);
 * for await (const t of targets) await window.push(() => ask(t), (answer) => record(t, answer));
 * await window.drain();
 */
export class InFlight {
  /** Records pushed and not yet committed, oldest first. */
  private readonly slots: Slot[] = [];
  /** Works started and not yet settled. */
  private working = 0;
  /** The loop committing the answered head of the window runs. */
  private committing = false;
  /** A record's commit is under way (its slot already left `slots`): it still counts as uncommitted. */
  private inCommit = 0;
  /** What stopped the window: a work's or a commit's error. */
  private failure: { error: unknown } | undefined;
  /** Who waits for room, for the last commit, or for the works after a failure. */
  private waiters: Array<() => void> = [];

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
    if (this.failure) return this.stopped();
    const slot: Slot<T> = { state: 0, value: undefined, commit };
    this.slots.push(slot as Slot);
    this.working++;
    let started: Promise<T>;
    try {
      started = work();
    } catch (e) {
      started = Promise.reject(e);
    }
    // One settlement handler per record; the commits are driven from there, not by a promise chain per record.
    started.then(
      (v) => this.settled(slot as Slot, 1, v),
      (e: unknown) => this.settled(slot as Slot, 2, e),
    );
    while (!this.failure && this.slots.length + this.inCommit >= this.width) await this.wait();
    if (this.failure) return this.stopped();
  }

  /** Waits until every record pushed is committed. */
  async drain(): Promise<void> {
    while (!this.failure && (this.slots.length > 0 || this.committing)) await this.wait();
    if (this.failure) return this.stopped();
  }

  private settled(slot: Slot, state: 1 | 2, value: unknown): void {
    slot.state = state;
    slot.value = value;
    this.working--;
    if (!this.committing) void this.commitReady();
    else if (this.failure && this.working === 0) this.wakeUp();
  }

  /** Commits the answered records at the head, in order, one at a time; a failed one stops the window. */
  private async commitReady(): Promise<void> {
    this.committing = true;
    try {
      while (!this.failure && this.slots.length > 0 && this.slots[0]!.state !== 0) {
        const slot = this.slots.shift()!;
        if (slot.state === 2) this.failure = { error: slot.value };
        else
          try {
            this.inCommit = 1;
            await slot.commit(slot.value);
          } catch (e) {
            this.failure = { error: e };
          } finally {
            this.inCommit = 0;
          }
        this.wakeUp();
      }
    } finally {
      this.committing = false;
      this.wakeUp();
    }
  }

  private wait(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private wakeUp(): void {
    if (this.waiters.length === 0) return;
    for (const w of this.waiters.splice(0)) w();
  }

  /** After a failure: waits for every started work (none is left calling the service), then throws it. */
  private async stopped(): Promise<never> {
    while (this.working > 0) await this.wait();
    throw this.failure!.error;
  }
}
