/** The `store:` section of config.yaml: which driver keeps the engine's runs and state. */
import { z } from 'zod';
import { DURATION_HINT, parseDuration } from '../util/duration.js';

/**
 * The shortest run retention: a run that a notification started is known by
 * its id, derived from the notification, and the service redelivers a
 * notification it did not see deleted for up to 24 hours.
 */
export const MIN_RETENTION_MS = 24 * 3_600_000;

export const StoreSchema = z.strictObject({
  /** Storage driver of the flow engine. @default lowdb */
  driver: z.enum(['lowdb', 'memory', 'redis']).default('lowdb'),
  /** Directory of the lowdb driver (relative to the config file). @default .msgflow/state */
  dir: z.string().default('.msgflow/state'),
  /** Redis URL for the redis driver. @default redis://127.0.0.1:6379 */
  url: z.string().optional(),
  /**
   * Prefix of every Redis key of this project (redis driver), so that two
   * projects on one Redis database never see each other's runs and caches.
   * Projects that must share runs and caches set the same prefix.
   * @default msgflow:<name of the config file's directory>-<8 hex digits of a hash of its absolute path>:
   */
  prefix: z.string().min(1).optional(),
  /**
   * How long finished runs (succeeded, failed, cancelled) are kept, e.g. 30d:
   * `msgflow start` deletes older ones, with their items, journals and state,
   * at start and every hour (`msgflow runs prune` does it once). Unfinished
   * runs are never deleted. At least 1d: the service redelivers a
   * notification for up to 24 hours, and the run it started is how msgflow
   * knows it answered it. `msgflow init` writes 30d.
   * @default none (runs are kept for good)
   */
  retention: z
    .union([z.string(), z.number()])
    .refine((v) => parseDuration(v) !== undefined, { error: `expected a duration: ${DURATION_HINT}, or days such as 30d` })
    .transform((v) => parseDuration(v)!)
    .refine((ms) => ms >= MIN_RETENTION_MS, { error: 'expected at least 1d: the service redelivers a notification for up to 24 hours' })
    .optional(),
});

export type StoreConfig = z.output<typeof StoreSchema>;
