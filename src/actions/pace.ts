/**
 * Pacing between calls, with jitter: evenly spaced requests look automated
 * to the messenger, so each pause is drawn from [delay·(1−jitter), delay·(1+jitter)].
 */
import { jitterDelay } from '../util/backoff.js';
import type { Clock } from '../util/clock.js';
import type { Pace } from '../util/pace.js';

export { PaceSchema, type Pace } from '../util/pace.js';

/** One pause: `delay` ± `jitter`·`delay` (util/backoff.ts `spread`). */
export function paceDelay(pace: Pace, random: () => number = Math.random): number {
  return jitterDelay(pace.delay, { spread: pace.jitter }, random);
}

export async function pause(clock: Clock, pace: Pace, signal?: AbortSignal): Promise<void> {
  const ms = paceDelay(pace);
  if (ms > 0) await clock.sleep(ms, signal);
}
