/**
 * outgoingMessageStatus on every status change of a message sent through the
 * API. Statuses are derived from the send time and the clock (see
 * Network.statusOf), so the watcher only has to wake when the next change is
 * due: `delivered` at sentAt + deliveredAfterMs, `read` at sentAt + readAfterMs.
 * Each (message, status) is produced once: the notification queue remembers
 * its key, so re-tracking the last 24 h of messages after a restart produces
 * exactly the changes that were missed while the service was down.
 */
import type { OutgoingStatus } from '../../api/notifications.js';
import type { Clock } from '../../util/clock.js';

export interface TrackedMessage {
  idMessage: string;
  chatId: string;
  /** ms since the epoch. */
  sentAtMs: number;
}

export interface StatusWatcherOptions {
  clock: Clock;
  /** The message's status now (`sent`, `delivered`, `read`) or `noAccount` when nobody can receive it. */
  statusOf: (m: TrackedMessage) => OutgoingStatus;
  /** When the status after `status` is due, or undefined when `status` is the last one. */
  nextChangeAt: (m: TrackedMessage, status: OutgoingStatus) => number | undefined;
  /** Produces the notification (once per message and status; the callee dedupes). */
  emit: (m: TrackedMessage, status: OutgoingStatus) => Promise<void>;
  onError: (e: unknown) => void;
}

const ORDER: readonly OutgoingStatus[] = ['sent', 'delivered', 'read'];

export class StatusWatcher {
  private readonly tracked = new Map<string, TrackedMessage>();
  private readonly stop = new AbortController();
  private nudge: AbortController | undefined;
  /** A message was tracked since the loop took its list: look again before sleeping. */
  private dirty = false;
  private running: Promise<void> | undefined;

  constructor(private readonly opts: StatusWatcherOptions) {}

  track(m: TrackedMessage): void {
    this.tracked.set(m.idMessage, m);
    // While the loop is busy emitting there is no sleep to cut short: the flag makes it look again.
    this.dirty = true;
    this.nudge?.abort();
  }

  start(): void {
    this.running ??= this.loop();
  }

  async close(): Promise<void> {
    this.stop.abort();
    await this.running;
  }

  private async loop(): Promise<void> {
    while (!this.stop.signal.aborted) {
      this.dirty = false;
      let next = Number.POSITIVE_INFINITY;
      for (const m of [...this.tracked.values()]) {
        const due = await this.catchUp(m).catch((e: unknown) => {
          this.opts.onError(e);
          return this.opts.clock.now() + 1000;
        });
        if (due === undefined) this.tracked.delete(m.idMessage);
        else next = Math.min(next, due);
      }
      if (this.dirty) continue;
      this.nudge = new AbortController();
      const signal = AbortSignal.any([this.stop.signal, this.nudge.signal]);
      // close() may have come while the loop was emitting: an aborted signal fires no 'abort' event any more.
      if (signal.aborted) continue;
      if (next === Number.POSITIVE_INFINITY) await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
      else await this.opts.clock.sleep(Math.max(0, next - this.opts.clock.now()), signal).catch(() => undefined);
      this.nudge = undefined;
    }
  }

  /** Emits every status up to the current one; returns when the next is due (undefined: none will come). */
  private async catchUp(m: TrackedMessage): Promise<number | undefined> {
    const now = this.opts.statusOf(m);
    const upTo = ORDER.indexOf(now);
    if (upTo < 0) {
      await this.opts.emit(m, now);
      return undefined;
    }
    for (let i = 0; i <= upTo; i++) await this.opts.emit(m, ORDER[i]!);
    return this.opts.nextChangeAt(m, now);
  }
}
