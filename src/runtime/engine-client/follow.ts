/**
 * Following one run, the part both EngineClients share: which engine events
 * are the run's (those that come before its id is known wait for it), and
 * when it has ended (an ending event, a look at its status now and then).
 */
import type { EngineEventName } from '../../engine/events.js';
import type { FollowedEvent, FollowedRun, RunView } from './types.js';

/** The events whose arrival means the run may have ended: its status is read then. */
const ENDING: ReadonlySet<EngineEventName> = new Set(['run:finished', 'run:failed', 'run:interrupted']);

/** A run's status that is not an end: it is still executing, or will again. */
export const isLive = (r: Pick<RunView, 'status'>) => r.status === 'running' || r.status === 'waiting';

/** The run this engine event belongs to (a log line's is in its fields). */
export function runIdOf(e: FollowedEvent): unknown {
  return e.name === 'log' ? e.event.fields?.runId : (e.event as { runId?: unknown }).runId;
}

/**
 * Passes on the events of one run. Until `bind(runId)` (a started run's id
 * comes back after its first events), events are held; then those of the run
 * are passed on, the held ones first, and an ending one calls `onEnding`
 * (set by whoever watches the run's end).
 */
export class RunEvents {
  onEnding: () => void = () => {};
  private runId: string | undefined;
  private held: FollowedEvent[] = [];
  private detached = false;

  constructor(private readonly onEvent: ((e: FollowedEvent) => void) | undefined) {}

  accept(e: FollowedEvent): void {
    if (this.detached) return;
    if (this.runId === undefined) {
      this.held.push(e);
      return;
    }
    if (runIdOf(e) !== this.runId) return;
    this.onEvent?.(e);
    if (ENDING.has(e.name)) this.onEnding();
  }

  bind(runId: string): void {
    this.runId = runId;
    for (const e of this.held.splice(0)) this.accept(e);
  }

  detach(): void {
    this.detached = true;
    this.held = [];
  }
}

export interface EndWatchOptions {
  /** The run now; undefined when it cannot be told (the next look tries again). A throw ends the watch with it when `fatal` says so. */
  read(): Promise<RunView | undefined>;
  /** How often the status is looked at besides ending events (real time). */
  pollMs: number;
  /** Errors of `read` that end the watch (`done` rejects); others are tried again at the next look. @default none */
  fatal?(e: unknown): boolean;
}

/**
 * Settles `done` once `read` finds the run ended. `check()` looks now (an
 * ending event came); a timer looks every `pollMs` meanwhile, for what no
 * event tells (a run cancelled while nobody executed it). Looks never overlap.
 */
export class EndWatch {
  readonly done: Promise<RunView>;
  private resolve!: (r: RunView) => void;
  private reject!: (e: unknown) => void;
  private timer: NodeJS.Timeout | undefined;
  private reading = false;
  /** A look asked for while one was under way: made once it is over. */
  private again: (() => Promise<RunView | undefined>) | undefined;
  private stopped = false;

  constructor(private readonly o: EndWatchOptions) {
    this.done = new Promise<RunView>((res, rej) => {
      this.resolve = res;
      this.reject = rej;
    });
    // A caller that only detaches never reads `done`: its rejection must not go unhandled.
    this.done.catch(() => {});
    this.timer = setInterval(() => this.check(), o.pollMs);
  }

  /** Looks now, with `read` given (a reader that knows more at this moment), else the watch's own. */
  check(read: () => Promise<RunView | undefined> = this.o.read): void {
    if (this.stopped) return;
    if (this.reading) {
      // A reader given (an ending event's) wins over the timer's.
      if (!this.again || read !== this.o.read) this.again = read;
      return;
    }
    this.reading = true;
    read()
      .then(
        (r) => {
          if (r && !isLive(r)) this.end(() => this.resolve(r));
        },
        (e: unknown) => {
          if (this.o.fatal?.(e)) this.end(() => this.reject(e));
        },
      )
      .finally(() => {
        this.reading = false;
        const again = this.again;
        this.again = undefined;
        if (again) this.check(again);
      });
  }

  /** Stops looking; `done` stays as it is. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  private end(settle: () => void): void {
    if (this.stopped) return;
    this.stop();
    settle();
  }
}

/** A FollowedRun whose end is already known. */
export function endedRun(run: RunView): FollowedRun {
  return { runId: run.id, flow: run.flow, done: Promise.resolve(run), detach: () => {} };
}
