/**
 * Control errors: what an action, or an interceptor of its client, throws to
 * tell the unit runner how to go on, rather than that the work failed (as
 * BullMQ's processor-thrown DelayedError / RateLimitError /
 * UnrecoverableError). The unit runner reads them in one place
 * (unit-runner.ts `decide`):
 *
 * - {@link PauseError}: an instance-wide pause holds the call; wait until it
 *   ends (or is lifted), then call again: the same attempt. On a BullMQ
 *   worker the item's job goes back to the queue instead, the queue paused.
 * - RateLimitError (api/errors.ts): the service asked to slow down; a durable
 *   wait of what it asked, then the same attempt again.
 * - {@link DefiniteError}: this unit's answer is final; recorded failed,
 *   never retried (for plugins: msgflow's own errors say it by their code).
 * - An interruption of the run ({@link isRunInterruption}): the store stopped
 *   answering, or another process owns the run now; the run stops
 *   `interrupted`, resumable, nothing recorded as failed.
 */
import { MsgflowError, RateLimitError } from '../api/errors.js';

export { RateLimitError };

/** What a pause says about itself; the record behind it is engine/run/pauses.ts's PauseRecord. */
export interface PauseInfo {
  /** What the pause holds, e.g. `checkAccount` (its PauseRule's scope). */
  scope: string;
  /** Config name and identity of the paused instance. */
  instance: string;
  identity: string;
  /** End, ms since the epoch. */
  until: number;
  /** Why, never when: `rate_limit_exceeded (retryAfter 2h)`. */
  reason: string;
  /** This call's answer raised (or extended) the pause; absent when the call met a pause already in force. */
  raised?: { retryAfterMs: number };
}

/**
 * An instance-wide pause holds the call: it was not made (or, `raised`, its
 * answer raised the pause). Wait until `until`, then call again.
 */
export class PauseError extends MsgflowError {
  readonly pause: Readonly<PauseInfo>;

  constructor(pause: PauseInfo, options: { cause?: unknown } = {}) {
    super('INSTANCE_PAUSED', { ...pause, until: new Date(pause.until).toISOString() }, options);
    this.name = 'PauseError';
    this.pause = Object.freeze({ ...pause });
  }

  get until(): number {
    return this.pause.until;
  }
}

/**
 * A failure trying again cannot change (a record the service refused for
 * good): the engine records it and never retries it, whatever the step's
 * `retry:`. For plugins; msgflow's own errors say so by their code.
 *
 * @example throw new DefiniteError(`${row.phone}: not a mobile number`)
 */
export class DefiniteError extends MsgflowError {
  constructor(reason: string, options: { cause?: unknown } = {}) {
    super('DEFINITE_FAILURE', { reason }, options);
    this.name = 'DefiniteError';
  }
}

/** Errors that stop the run as `interrupted` (resumable), never `failed`: the store is down, or another process owns the run now. */
export function isRunInterruption(e: unknown): boolean {
  return e instanceof MsgflowError && (e.code === 'STORE_UNAVAILABLE' || e.code === 'RUN_OWNERSHIP_LOST');
}
