/**
 * Exponential backoff with jitter (so that many callers failing together do
 * not retry together): shared by the client's retries and the local
 * service's webhook pushes.
 */
export type JitterMode = 'full' | 'equal';

export interface BackoffOptions {
  /** Delay of the first retry before jitter, ms. */
  baseMs: number;
  /** Cap of the exponential delay, ms. */
  maxMs: number;
  jitter: JitterMode;
}

/**
 * The delay before retry number `retry` (1-based): `d = min(maxMs, baseMs * 2^(retry-1))`,
 * then `full` jitter picks uniformly in [0, d], `equal` jitter in [d/2, d].
 *
 * @param random a source of uniform numbers in [0, 1). @default Math.random
 * @example
 * computeBackoff(3, { baseMs: 500, maxMs: 30_000, jitter: 'equal' }); // in [1000, 2000]
 */
export function computeBackoff(retry: number, opts: BackoffOptions, random: () => number = Math.random): number {
  const exp = Math.min(opts.maxMs, opts.baseMs * 2 ** Math.max(0, retry - 1));
  const r = Math.min(1, Math.max(0, random()));
  return Math.round(opts.jitter === 'equal' ? exp / 2 + (r * exp) / 2 : r * exp);
}

