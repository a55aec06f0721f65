/**
 * A Clock whose time jumps ahead whenever everything is waiting on it. Flow
 * tests (`msgflow test`) run the real engine, client and local service on it:
 * a 2-hour pause, a Monday 09:00 window or a reply deadline passes in
 * milliseconds of wall time, through the same code paths as in production.
 *
 * "Everything is waiting" means: for several macrotask turns in a row no
 * sleep was started or ended and the process has no file or network request
 * in flight (process.getActiveResourcesInfo()); then the earliest sleeper is
 * woken at its time. Real timers (timeouts of in-process calls) keep real time.
 */
import type { Clock } from './clock.js';

interface Sleeper {
  at: number;
  seq: number;
  resolve: () => void;
}

/**
 * Resources that may stay open while everything waits (servers, pipes, open
 * files, timers, connected sockets); any other one (a file request, a close,
 * a connect, a DNS lookup, a write) means work is in flight. Node names a
 * connected TCP socket `TCPSocketWrap`: an idle keep-alive socket stays open
 * between calls (counting it as work stalled the clock until the socket
 * closed); a call awaiting its answer on one holds the clock instead (hold()).
 */
const LONG_LIVED = new Set([
  'Timeout',
  'Immediate',
  'PipeWrap',
  'TTYWrap',
  'TCPSocketWrap',
  'TCPServerWrap',
  'ProcessWrap',
  'SignalWrap',
  'FSEventWrap',
  'StatWatcher',
  'UDPWrap',
  'MessagePort',
  'FileHandle',
  'Worker',
]);

export interface VirtualClockOptions {
  /** Macrotask turns without activity before time jumps. @default 4 */
  idleTurns?: number;
  /** The zone of its wall-clock times (see Clock.timeZone). @default the machine's zone */
  timeZone?: string;
}

export class VirtualClock implements Clock {
  private t: number;
  private sleepers: Sleeper[] = [];
  private activity = 0;
  private holds = 0;
  private seq = 0;
  private running = false;
  private loop: Promise<void> | undefined;
  private readonly idleTurns: number;
  /** Virtual milliseconds skipped so far by jumps. */
  skippedMs = 0;

  readonly timeZone?: string;

  constructor(start = Date.now(), opts: VirtualClockOptions = {}) {
    this.t = start;
    this.idleTurns = opts.idleTurns ?? 4;
    if (opts.timeZone !== undefined) this.timeZone = opts.timeZone;
  }

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.activity++;
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        this.sleepers = this.sleepers.filter((x) => x !== s);
        this.activity++;
        reject(signal!.reason);
      };
      const s: Sleeper = {
        at: this.t + Math.max(0, ms),
        seq: this.seq++,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      if (ms <= 0) {
        // Due now: resolved on the next microtask, like a 0 ms timer but without leaving virtual time.
        queueMicrotask(s.resolve);
        return;
      }
      this.sleepers.push(s);
    });
  }

  /**
   * Marks work in flight that the clock cannot see (an in-process call to the
   * local service): time does not jump until every hold is released.
   */
  hold(): () => void {
    this.holds++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.holds--;
      this.activity++;
    };
  }

  /** Moves time forward by `ms` now, waking the sleepers that come due. */
  advance(ms: number): void {
    this.t += Math.max(0, ms);
    const due = this.sleepers.filter((s) => s.at <= this.t);
    this.sleepers = this.sleepers.filter((s) => s.at > this.t);
    this.activity++;
    for (const s of due) s.resolve();
  }

  /** Pending sleepers. */
  get pending(): number {
    return this.sleepers.length;
  }

  /** Starts jumping ahead whenever the process is idle. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Stops jumping; pending sleepers stay pending. */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  private async run(): Promise<void> {
    while (this.running) {
      await this.idle();
      if (!this.running) break;
      if (this.sleepers.length === 0) {
        // Nothing sleeps on this clock: whatever runs waits on real time or real I/O.
        await new Promise((r) => setTimeout(r, 2));
        continue;
      }
      this.sleepers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.sleepers[0]!;
      if (next.at > this.t) {
        this.skippedMs += next.at - this.t;
        this.t = next.at;
      }
      const due = this.sleepers.filter((s) => s.at <= this.t);
      this.sleepers = this.sleepers.filter((s) => s.at > this.t);
      this.activity++;
      for (const s of due) s.resolve();
    }
  }

  /** Resolves once `idleTurns` macrotask turns passed with no clock activity and no I/O in flight. */
  private async idle(): Promise<void> {
    let quiet = 0;
    let seen = this.activity;
    while (quiet < this.idleTurns && this.running) {
      await new Promise((r) => setImmediate(r));
      const busy = this.holds > 0 || ioInFlight();
      if (this.activity !== seen || busy) {
        seen = this.activity;
        quiet = 0;
        if (busy) await new Promise((r) => setTimeout(r, 1));
      } else quiet++;
    }
  }
}

function ioInFlight(): boolean {
  return process.getActiveResourcesInfo().some((r) => !LONG_LIVED.has(r));
}
