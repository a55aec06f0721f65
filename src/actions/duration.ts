/**
 * Durations in action inputs: milliseconds as a number, or text such as
 * `500ms`, `30s`, `10m`, `2h`, `1d`, `1h30m` (the same units flow files use
 * for retry delays and timeouts). The schema is util's (config.yaml's pools
 * read durations the same way).
 */
import { durationSchema } from '../util/duration.js';

/** A zod schema accepting a number of ms or a duration text; outputs ms. */
export const duration = durationSchema;
