/** The `store:` section of config.yaml: which driver keeps the engine's runs and state. */
import { z } from 'zod';

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
});

export type StoreConfig = z.output<typeof StoreSchema>;
