/**
 * The runs a daemon had to interrupt because its store stopped answering
 * (STORE_UNAVAILABLE), or whose claim lapsed meanwhile (RUN_OWNERSHIP_LOST),
 * resumed from their checkpoint once the store answers again, without
 * waiting for a restart.
 *
 * When: each time the store's connection reports it is reachable again
 * (StoreConnection.onReachable), when such a run ends while the store already
 * answers, and every `retryMs` while some are left (a driver without a
 * connection, a run whose claim or concurrency slot is still held).
 */
import { MsgflowError } from '../../api/errors.js';
import type { StoreConnection } from '../../store/types.js';
import type { Logger } from '../action.js';
import type { LeaseOwner } from './ownership.js';

/** What one attempt at resuming a run came to. */
export type OutageResumeResult = 'resumed' | 'later' | 'gone';

export interface OutageResumeDeps {
  connection?: StoreConnection;
  /**
   * Resumes one run with the claims of its interrupted execution (their
   * token still holds what the outage left of them): `later` to try again,
   * `gone` when there is nothing to resume (finished, owned elsewhere, its
   * flow no longer loaded).
   */
  resume(runId: string, owner: LeaseOwner): Promise<OutageResumeResult>;
  logger: Logger;
  /** @default 2000 */
  retryMs?: number;
}

export class OutageResumes {
  private readonly pending = new Map<string, LeaseOwner>();
  private running: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly unsubscribe: () => void;

  constructor(private readonly d: OutageResumeDeps) {
    this.unsubscribe = d.connection?.onReachable(() => this.kick()) ?? (() => {});
  }

  /** A run interrupted by the store: resumed once the store answers. */
  add(runId: string, owner: LeaseOwner): void {
    if (this.stopped) return;
    this.pending.set(runId, owner);
    this.kick();
  }

  /** Runs still waiting for the store (for messages and tests). */
  waiting(): string[] {
    return [...this.pending.keys()];
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private kick(): void {
    if (this.stopped || this.pending.size === 0) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.attempt().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        this.kick();
      } else this.retryLater();
    });
  }

  private retryLater(): void {
    if (this.stopped || this.pending.size === 0 || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.kick();
    }, this.d.retryMs ?? 2000);
    this.timer.unref();
  }

  private async attempt(): Promise<void> {
    // Down for certain: the connection says when it is back.
    if (this.d.connection && !this.d.connection.reachable) return;
    for (const [runId, owner] of [...this.pending]) {
      if (this.stopped) return;
      try {
        if ((await this.d.resume(runId, owner)) !== 'later') this.pending.delete(runId);
      } catch (e) {
        if (e instanceof MsgflowError && e.code === 'STORE_UNAVAILABLE') return; // not back yet
        this.pending.delete(runId);
        this.d.logger.warn(`run ${runId} is not resumed after the store outage: ${e instanceof Error ? e.message : String(e)}`, { runId });
      }
    }
  }
}
