/**
 * Per-method request rates, both sides of one limit (requests/second per API
 * method, 0 = unlimited; api/methods.ts publishes the service's):
 *
 * - the client paces itself ({@link createRateLimiter}): the service answers
 *   429 beyond its rate, so spacing our own requests keeps us under it instead
 *   of spending retries on it. Requests beyond the rate wait their turn, in
 *   call order; none is rejected.
 * - the local service admits or refuses ({@link RateLimiter}): a fixed
 *   one-second window read from the Clock, exact under a ManualClock, one Map
 *   lookup per request.
 *
 * Spacing and a window are different answers (wait vs 429), so they are two
 * functions, but one module: a change to how msgflow counts a rate lands in
 * both.
 */
import { API_METHODS, type ApiMethod, type RateLimits, defaultRateLimits } from '../api/methods.js';
import type { Clock } from './clock.js';

export interface Pacer {
  /** Resolves when the caller may send. Rejects with the signal's reason when aborted while waiting. */
  acquire(signal?: AbortSignal): Promise<void>;
}

/**
 * A spacing limiter: at `ratePerSecond` requests/second, consecutive
 * requests are at least `1000 / ratePerSecond` ms apart. Each caller reserves
 * the next free slot synchronously, so concurrent callers queue up in order
 * without a shared timer. No burst is allowed: a burst is what the service's
 * per-second window would reject.
 *
 * @param ratePerSecond requests/second; 0 (or less) means unlimited.
 * @example
 * const limiter = createRateLimiter(1, systemClock);
 * await limiter.acquire(); // at once
 * await limiter.acquire(); // about 1 s later
 */
export function createRateLimiter(ratePerSecond: number, clock: Clock): Pacer {
  if (!(ratePerSecond > 0)) return { acquire: async (signal) => signal?.throwIfAborted() };
  const interval = 1000 / ratePerSecond;
  let nextFree = Number.NEGATIVE_INFINITY;
  return {
    async acquire(signal) {
      signal?.throwIfAborted();
      const now = clock.now();
      const slot = Math.max(now, nextFree);
      nextFree = slot + interval;
      const wait = slot - now;
      if (wait <= 0) return;
      try {
        await clock.sleep(wait, signal);
      } catch (err) {
        // Give the slot back if nobody queued behind it, so that an aborted
        // call does not delay the next one for nothing.
        if (nextFree === slot + interval) nextFree = slot;
        throw err;
      }
    },
  };
}

/** One limiter per method, or none at all when limiting is off. */
export function createMethodRateLimiters(
  limits: Readonly<Record<ApiMethod, number>>,
  enabled: boolean,
  clock: Clock,
): (method: ApiMethod, signal?: AbortSignal) => Promise<void> | undefined {
  const limiters = new Map<ApiMethod, Pacer>();
  // Undefined: nothing to wait for (limits off), so a caller need not await (a bulk job calls it a million times).
  return (method, signal) => {
    if (!enabled) return signal?.aborted ? Promise.reject(signal.reason) : undefined;
    let limiter = limiters.get(method);
    if (!limiter) {
      limiter = createRateLimiter(limits[method] ?? 0, clock);
      limiters.set(method, limiter);
    }
    return limiter.acquire(signal);
  };
}

export type RateDecision = { ok: true } | { ok: false; limit: number; retryAfterSeconds: number };

export class RateLimiter {
  private readonly limits: Record<ApiMethod, number>;
  private readonly windows = new Map<ApiMethod, { start: number; count: number }>();

  /** @param overrides requests/second per method; 0 = unlimited; missing = the published limit. */
  constructor(
    overrides: RateLimits,
    private readonly clock: Clock,
  ) {
    this.limits = defaultRateLimits();
    for (const m of API_METHODS) {
      const v = overrides[m];
      if (v !== undefined) this.limits[m] = v;
    }
  }

  limitOf(method: ApiMethod): number {
    return this.limits[method];
  }

  take(method: ApiMethod): RateDecision {
    const limit = this.limits[method];
    if (limit === 0) return { ok: true };
    const now = this.clock.now();
    const start = Math.floor(now / 1000) * 1000;
    let w = this.windows.get(method);
    if (!w || w.start !== start) {
      w = { start, count: 0 };
      this.windows.set(method, w);
    }
    if (w.count >= limit) {
      return { ok: false, limit, retryAfterSeconds: Math.max(1, Math.ceil((start + 1000 - now) / 1000)) };
    }
    w.count++;
    return { ok: true };
  }
}
