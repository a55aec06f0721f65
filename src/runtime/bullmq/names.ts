/**
 * Names shared by every process of a BullMQ deployment: the queues, the job
 * ids and the Redis connections. Two processes that compute them differently
 * would work different queues, so they live in one place.
 */
import { Redis } from 'ioredis';
import type { Config } from '../../config/load.js';
import { defaultRedisPrefix } from '../../store/create.js';

/** The forEach items of one instance identity: one queue, so its limiter and pauses hold across workers. */
export const itemQueueName = (identity: string) => `items-${identity}`;

/** The queue whose job schedulers fire `on.schedule` (one job per slot, whichever replica takes it). */
export const SCHEDULE_QUEUE = 'schedules';

/** BullMQ refuses ':' in custom job ids. */
const safe = (s: string) => s.replace(/:/g, '_');

/** The id of an item's job: derived from run, step and item, so adding it again is a no-op. */
export const itemJobId = (runId: string, step: string, index: number) => `${safe(runId)}.${safe(step)}.${index}`;

/**
 * The id of a single step's job (a job action, a dialog step on workers):
 * derived from run and step, so adding it again (a resumed run) is a no-op.
 * Never an item's: step ids start with a letter, item ids end in a number.
 */
export const stepJobId = (runId: string, step: string) => `${safe(runId)}.${safe(step)}`;

/** Where the queues live and under which key prefix. */
export interface BullmqTarget {
  url: string;
  prefix: string;
}

export function bullmqTarget(config: Config): BullmqTarget {
  const ex = config.executor;
  const storePrefix = config.store.prefix ?? defaultRedisPrefix(config.baseDir);
  return {
    url: ex.url ?? config.store.url ?? 'redis://127.0.0.1:6379',
    prefix: ex.prefix ?? `${storePrefix.replace(/:+$/, '')}:bull`,
  };
}

/** A connection as BullMQ wants it: commands wait for a reconnect instead of failing (a Redis restart is survived). */
export function bullmqConnection(url: string): Redis {
  const r = new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true });
  r.on('error', () => {}); // reconnects on its own; the store's own connection reports outages
  return r;
}
