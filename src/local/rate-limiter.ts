/**
 * Per-method requests/second of one instance. A fixed one-second window read
 * from the Clock: exact under a ManualClock, and one Map lookup per request.
 */
import { API_METHODS, type ApiMethod, type RateLimits, defaultRateLimits } from '../api/methods.js';
import type { Clock } from '../util/clock.js';

export type RateDecision = { ok: true } | { ok: false; limit: number; retryAfterSeconds: number };

export class RateLimiter {
  private readonly limits: Record<ApiMethod, number>;
  private readonly windows = new Map<ApiMethod, { start: number; count: number }>();

  /** @param overrides requests/second per method; 0 = unlimited; missing = the published limit. */
  constructor(overrides: RateLimits, private readonly clock: Clock) {
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
