import type { ManualClock } from '../../src/util/clock.js';

/**
 * Runs `f` while `clock` moves on (100 ms of it every 5 ms), as time goes on
 * for a daemon that is stopping: a test on a ManualClock that stops
 * notification consumers must not freeze their last call, e.g. the delete of
 * the last notification waiting its turn at the client's rate limiter, which
 * counts on the same clock.
 */
export async function whileTimePasses<T>(clock: ManualClock, f: () => Promise<T>): Promise<T> {
  const ticking = setInterval(() => void clock.advance(100), 5);
  try {
    return await f();
  } finally {
    clearInterval(ticking);
  }
}
