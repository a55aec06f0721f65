/**
 * How long to wait before a retry: exponential backoff with jitter (the one
 * implementation, in util/backoff.ts), and the server's Retry-After when it
 * gives one.
 */
import { backoffDelay } from '../util/backoff.js';
import type { JitterMode } from './options.js';

export interface BackoffOptions {
  /** Delay of the first retry before jitter, ms. */
  baseMs: number;
  /** Cap of the exponential delay, ms. */
  maxMs: number;
  jitter: JitterMode;
}

/**
 * The delay before retry number `retry` (1-based): `d = min(maxMs, baseMs * 2^(retry-1))`,
 * then `full` jitter picks uniformly in [0, d], `equal` jitter in [d/2, d] (util/backoff.ts).
 *
 * @param random a source of uniform numbers in [0, 1). @default Math.random
 * @example
 * computeBackoff(3, { baseMs: 500, maxMs: 30_000, jitter: 'equal' }); // in [1000, 2000]
 */
export function computeBackoff(retry: number, opts: BackoffOptions, random: () => number = Math.random): number {
  return backoffDelay({ baseMs: opts.baseMs, maxMs: opts.maxMs, jitter: opts.jitter }, retry, random);
}

/**
 * Parses a Retry-After header: delay-seconds (`120`) or an HTTP-date, the
 * latter measured against `now` (the client's clock). Undefined when absent
 * or unreadable; never negative.
 */
export function parseRetryAfter(header: string | undefined, now: number): number | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  // Only a real date: Date.parse also reads bare numbers such as "-5" as years.
  if (!/[A-Za-z]/.test(value)) return undefined;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
