/**
 * Time as msgflow sees it. Everything that waits (backoffs, durable waits,
 * rate-limit pauses, message status timings, file expiry) reads time from a
 * Clock, so tests can make hours pass instantly.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms` of this clock's time; rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * The IANA zone of this clock's wall-clock times: what a daily `HH:MM` send
   * window and a schedule without `timezone` mean (read through
   * {@link zoneOf}). A flow test case's clock has the case's zone, so two
   * cases in one process each keep their own. @default the machine's zone
   */
  readonly timeZone?: string;
}

/** The machine's IANA zone (process.env.TZ, else the system's). */
export function machineZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

/** The zone wall-clock times mean on `clock`: its own, else the machine's. */
export function zoneOf(clock: Pick<Clock, 'timeZone'>): string {
  return clock.timeZone ?? machineZone();
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const t = setTimeout(
        () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        Math.max(0, ms),
      );
      const onAbort = () => {
        clearTimeout(t);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

interface Sleeper {
  at: number;
  resolve: () => void;
}

/**
 * A clock that only moves when told. `advance(ms)` wakes every sleeper whose
 * time has come, in order.
 *
 * @example
 * const clock = new ManualClock(Date.parse('2026-01-01T09:00:00Z'));
 * const p = clock.sleep(2 * 3600_000);
 * await clock.advance(2 * 3600_000); // p resolves
 */
export class ManualClock implements Clock {
  private t: number;
  private sleepers: Sleeper[] = [];
  readonly timeZone?: string;

  /** @param opts.timeZone see {@link Clock.timeZone} */
  constructor(start = Date.now(), opts: { timeZone?: string } = {}) {
    this.t = start;
    if (opts.timeZone !== undefined) this.timeZone = opts.timeZone;
  }

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        this.sleepers = this.sleepers.filter((x) => x !== s);
        reject(signal!.reason);
      };
      // The listener is removed when the sleep ends, so long-lived signals do
      // not collect one listener per sleep.
      const s: Sleeper = {
        at: this.t + Math.max(0, ms),
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      this.sleepers.push(s);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (ms <= 0) this.wake();
    });
  }

  /** Number of pending sleepers: lets a test wait until the code under test is asleep. */
  get pending(): number {
    return this.sleepers.length;
  }

  /** When each pending sleeper wakes (clock ms), soonest first: lets a test wait for one particular sleep. */
  wakeTimes(): number[] {
    return this.sleepers.map((s) => s.at).sort((a, b) => a - b);
  }

  /** Moves time forward and wakes due sleepers, yielding to the event loop between wakes. */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    for (;;) {
      this.sleepers.sort((a, b) => a.at - b.at);
      const next = this.sleepers[0];
      if (!next || next.at > target) break;
      this.t = Math.max(this.t, next.at);
      this.sleepers.shift();
      next.resolve();
      await new Promise((r) => setImmediate(r));
    }
    this.t = target;
  }

  set(time: number): void {
    this.t = time;
    this.wake();
  }

  private wake(): void {
    const due = this.sleepers.filter((s) => s.at <= this.t);
    this.sleepers = this.sleepers.filter((s) => s.at > this.t);
    for (const s of due) s.resolve();
  }
}
