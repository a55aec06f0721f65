/**
 * Client-side pacing. The service limits requests per second per method and
 * answers 429 beyond that; spacing our own requests keeps us under the limit
 * instead of spending retries on it. Requests beyond the rate wait their turn,
 * in call order; none is rejected.
 */
import type { ApiMethod } from '../api/methods.js';
import type { Clock } from '../util/clock.js';

export interface RateLimiter {
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
export function createRateLimiter(ratePerSecond: number, clock: Clock): RateLimiter {
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
): (method: ApiMethod, signal?: AbortSignal) => Promise<void> {
  const limiters = new Map<ApiMethod, RateLimiter>();
  return (method, signal) => {
    if (!enabled) return signal?.aborted ? Promise.reject(signal.reason) : Promise.resolve();
    let limiter = limiters.get(method);
    if (!limiter) {
      limiter = createRateLimiter(limits[method] ?? 0, clock);
      limiters.set(method, limiter);
    }
    return limiter.acquire(signal);
  };
}
