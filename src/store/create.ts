/**
 * Picks the flow engine's store driver (lowdb, memory, redis) named in
 * config.yaml `store:`; the interface every driver implements is in types.ts.
 */
import { createHash } from 'node:crypto';
import { basename, isAbsolute, resolve } from 'node:path';
import { ConfigError } from '../api/errors.js';
import type { Logger } from '../util/logger.js';
import type { StoreConfig } from './config.js';
import { createLowdbStore } from './lowdb-store.js';
import { createMemoryStore } from './memory-store.js';
import { createRedisStore } from './redis-store.js';
import type { EngineStore } from './types.js';

export interface CreateStoreOptions {
  /** Where a driver reports an outage of its backend and its recovery. @default stderr */
  logger?: Logger;
}

/**
 * The default Redis key prefix of a project: its directory's name (readable
 * in redis-cli) and a hash of its absolute path (two `app` directories differ).
 *
 * @example defaultRedisPrefix('/srv/shop') // 'msgflow:shop-3f9a1c2b:'
 */
export function defaultRedisPrefix(baseDir: string): string {
  const abs = resolve(baseDir);
  return `msgflow:${basename(abs) || 'root'}-${createHash('sha256').update(abs).digest('hex').slice(0, 8)}:`;
}

/**
 * The store config.yaml asks for. `store.dir` resolves against `baseDir`
 * (the config file's directory); so does the default Redis prefix.
 *
 * @example
 * const store = createStore(config.store, dirname(configFile), { logger });
 */
export function createStore(config: StoreConfig, baseDir: string, options: CreateStoreOptions = {}): EngineStore {
  switch (config.driver) {
    case 'lowdb':
      return createLowdbStore({ dir: isAbsolute(config.dir) ? config.dir : resolve(baseDir, config.dir) });
    case 'memory':
      return createMemoryStore();
    case 'redis':
      return createRedisStore({
        ...(config.url === undefined ? {} : { url: config.url }),
        prefix: config.prefix ?? defaultRedisPrefix(baseDir),
        ...(options.logger ? { logger: options.logger } : {}),
      });
    default:
      throw new ConfigError('CONFIG_INVALID', {
        location: 'config.yaml',
        path: 'store.driver',
        reason: `unknown driver '${String(config.driver)}' (expected lowdb, memory or redis)`,
      });
  }
}
