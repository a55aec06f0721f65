import type { Clock } from '../../../src/util/clock.js';

/**
 * A clock whose sleeps return at once but move its time forward and are
 * recorded: tests read the waits the client asked for, not wall time.
 */
export class RecordingClock implements Clock {
  readonly sleeps: number[] = [];
  /** Called at each sleep, before it returns (e.g. to start a server "later"). */
  onSleep?: (ms: number) => void | Promise<void>;

  constructor(private t = Date.parse('2026-01-01T00:00:00Z')) {}

  now(): number {
    return this.t;
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    this.sleeps.push(ms);
    this.t += Math.max(0, ms);
    await this.onSleep?.(ms);
    signal?.throwIfAborted();
  }
}
