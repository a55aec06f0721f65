/**
 * The shape of a pace between calls, `{ delay, jitter }`: what an action's
 * `with:` and config.yaml's pools write (actions/pace.ts draws each pause).
 */
import { z } from 'zod';
import { durationSchema } from './duration.js';

export const PaceSchema = z
  .strictObject({
    delay: durationSchema('Pause between two calls to the service. @default 1s').default(1000),
    jitter: z.number().min(0).max(1).default(0.3).describe('Randomises each pause by ± this fraction of `delay` (0: exact). @default 0.3'),
  })
  .describe('Pacing between calls: `{ delay, jitter }`.');

export type Pace = z.output<typeof PaceSchema>;
