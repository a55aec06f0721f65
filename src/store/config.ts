/** The `store:` section of config.yaml: which driver keeps the engine's runs and state. */
import { z } from 'zod';

export const StoreSchema = z.strictObject({
  /** Storage driver of the flow engine. @default lowdb */
  driver: z.enum(['lowdb', 'memory', 'redis']).default('lowdb'),
  /** Directory of the lowdb driver (relative to the config file). @default .msgflow/state */
  dir: z.string().default('.msgflow/state'),
  /** Redis URL for the redis driver. @default redis://127.0.0.1:6379 */
  url: z.string().optional(),
});

export type StoreConfig = z.output<typeof StoreSchema>;
