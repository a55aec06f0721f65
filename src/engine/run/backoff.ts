import type { RetryPolicy } from '../flow-types.js';

/**
 * Delay before the next attempt after attempt `attempt` (1-based) failed.
 * Exponential doubles from `delayMs`; both are capped at `maxDelayMs`; jitter
 * picks uniformly in [d/2, d] so that many items failing together do not
 * retry in lockstep.
 *
 * @example retryDelay({ backoff: 'exponential', delayMs: 2000, maxDelayMs: 600000, jitter: false, maxAttempts: 5 }, 3) // 8000
 */
export function retryDelay(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const base = policy.backoff === 'fixed' ? policy.delayMs : policy.delayMs * 2 ** Math.max(0, attempt - 1);
  const capped = Math.min(base, policy.maxDelayMs);
  const d = policy.jitter ? capped / 2 + random() * (capped / 2) : capped;
  return Math.max(0, Math.round(d));
}
