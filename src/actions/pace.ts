/**
 * Pacing between calls, with jitter: evenly spaced requests look automated
 * to the messenger, so each pause is drawn from [delay·(1−jitter), delay·(1+jitter)].
 */
import { z } from 'zod';
import { duration } from './duration.js';
import { jitterDelay } from '../util/backoff.js';
import type { Clock } from '../util/clock.js';

export const PaceSchema = z
  .strictObject({
    delay: duration('Pause between two calls to the service. @default 1s').default(1000),
    jitter: z.number().min(0).max(1).default(0.3).describe('Randomises each pause by ± this fraction of `delay` (0: exact). @default 0.3'),
  })
  .describe('Pacing between calls: `{ delay, jitter }`.');

export type Pace = z.output<typeof PaceSchema>;

/** One pause: `delay` ± `jitter`·`delay` (util/backoff.ts `spread`). */
export function paceDelay(pace: Pace, random: () => number = Math.random): number {
  return jitterDelay(pace.delay, { spread: pace.jitter }, random);
}

export async function pause(clock: Clock, pace: Pace, signal?: AbortSignal): Promise<void> {
  const ms = paceDelay(pace);
  if (ms > 0) await clock.sleep(ms, signal);
}
