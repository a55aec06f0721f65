/**
 * Storage of the flow engine: one small interface ({@link EngineStore}) and
 * its drivers (lowdb, memory, redis). `createStore` picks the driver named in
 * config.yaml `store:`.
 */
import { isAbsolute, resolve } from 'node:path';
import { ConfigError } from '../api/errors.js';
import type { StoreConfig } from './config.js';
import { createLowdbStore } from './lowdb-store.js';
import { createMemoryStore } from './memory-store.js';
import { createRedisStore } from './redis-store.js';
import type { EngineStore } from './types.js';

export * from './types.js';
export { createLowdbStore, type LowdbStoreOptions } from './lowdb-store.js';
export { createMemoryStore, memoryState } from './memory-store.js';
export { createRedisStore, type RedisStoreOptions } from './redis-store.js';
export { ItemLog, readLog, truncateTornTail, type ReadLogResult } from './item-log.js';
export { prefixedState } from './prefixed-state.js';

/**
 * The store config.yaml asks for. `store.dir` resolves against `baseDir`
 * (the config file's directory).
 *
 * @example
 * const store = createStore(config.store, dirname(configFile));
 */
export function createStore(config: StoreConfig, baseDir: string): EngineStore {
  switch (config.driver) {
    case 'lowdb':
      return createLowdbStore({ dir: isAbsolute(config.dir) ? config.dir : resolve(baseDir, config.dir) });
    case 'memory':
      return createMemoryStore();
    case 'redis':
      return createRedisStore(config.url === undefined ? {} : { url: config.url });
    default:
      throw new ConfigError('CONFIG_INVALID', {
        location: 'config.yaml',
        path: 'store.driver',
        reason: `unknown driver '${String(config.driver)}' (expected lowdb, memory or redis)`,
      });
  }
}
