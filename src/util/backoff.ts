/**
 * The one backoff-and-jitter rule of msgflow. A delay grows from `baseMs`
 * (doubling per retry, or fixed), is capped at `maxMs`, then randomised so
 * that many callers failing or pacing together do not act in lockstep. Three
 * jitter shapes, each kept by the caller that documents it:
 *
 * - `full`: uniform in [0, d] (the client's default: retries spread widest);
 * - `equal`: uniform in [d/2, d] (the client's option; a flow step's `retry.jitter: true`);
 * - `{ spread: f }`: uniform in [d·(1−f), d·(1+f)] (a job's pacing: `pace.jitter`,
 *   centred on the delay, because evenly spaced calls look automated).
 */

export type Jitter = 'none' | 'full' | 'equal' | { spread: number };

export interface BackoffRule {
  /** The first delay, ms. */
  baseMs: number;
  /** Cap of one delay before jitter, ms. @default Infinity */
  maxMs?: number;
  /** Double per retry (`exponential`) or keep `baseMs` (`fixed`). @default exponential */
  growth?: 'exponential' | 'fixed';
  /** @default none */
  jitter?: Jitter;
}

/**
 * The delay before retry number `retry` (1-based), in whole ms, never negative.
 *
 * @param random uniform numbers in [0, 1). @default Math.random
 * @example backoffDelay({ baseMs: 500, maxMs: 30_000, jitter: 'equal' }, 3) // in [1000, 2000]
 */
export function backoffDelay(rule: BackoffRule, retry: number, random: () => number = Math.random): number {
  const grown = rule.growth === 'fixed' ? rule.baseMs : rule.baseMs * 2 ** Math.max(0, retry - 1);
  return jitterDelay(Math.min(grown, rule.maxMs ?? Infinity), rule.jitter ?? 'none', random);
}

/** `d` randomised by `jitter` (see the file comment), rounded, never negative. */
export function jitterDelay(d: number, jitter: Jitter, random: () => number = Math.random): number {
  const r = Math.min(1, Math.max(0, random()));
  let out: number;
  if (jitter === 'none') out = d;
  else if (jitter === 'full') out = r * d;
  else if (jitter === 'equal') out = d / 2 + (r * d) / 2;
  else out = d - d * jitter.spread + r * 2 * d * jitter.spread;
  return Math.max(0, Math.round(out));
}

/** The jitter shapes a client's retry policy may name (ClientOptions.jitter). */
export type JitterMode = 'full' | 'equal';
