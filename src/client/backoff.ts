/**
 * How long to wait before a retry: exponential backoff with jitter (the one
 * implementation, in util/backoff.ts), and the server's Retry-After when it
 * gives one.
 */
export { computeBackoff, type BackoffOptions } from '../util/backoff.js';

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
