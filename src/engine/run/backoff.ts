import { backoffDelay } from '../../util/backoff.js';
import type { RetryPolicy } from '../flow/types.js';

/**
 * Delay before the next attempt after attempt `attempt` (1-based) failed.
 * Exponential doubles from `delayMs`; both are capped at `maxDelayMs`; jitter
 * picks uniformly in [d/2, d] (util/backoff.ts `equal`) so that many items
 * failing together do not retry in lockstep.
 *
 * @example retryDelay({ backoff: 'exponential', delayMs: 2000, maxDelayMs: 600000, jitter: false, maxAttempts: 5 }, 3) // 8000
 */
export function retryDelay(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  return backoffDelay(
    { baseMs: policy.delayMs, maxMs: policy.maxDelayMs, growth: policy.backoff, jitter: policy.jitter ? 'equal' : 'none' },
    attempt,
    random,
  );
}
