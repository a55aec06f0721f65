/**
 * The Redis driver through the conformance suite, against the Redis on
 * 127.0.0.1:6379 (MSGFLOW_TEST_REDIS_URL overrides). Skipped, saying so,
 * only when no server answers.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { describe, it } from 'vitest';
import { redisReachable, redisUrl } from '../support/redis.js';
import { createRedisStore } from '../../src/store/redis-store.js';
import { describeStoreConformance } from './conformance.js';

const url = redisUrl;

const up = await redisReachable();

if (!up) {
  describe('EngineStore conformance: redis', () => {
    it.skip(`skipped: no Redis server answers at ${url} (set MSGFLOW_TEST_REDIS_URL)`, () => {});
  });
} else {
  describeStoreConformance('redis', async () => {
    // A fresh key prefix per test: tests never see each other's data, and cleanup removes only ours.
    const prefix = `msgflow-test:${randomBytes(6).toString('hex')}:`;
    return {
      store: createRedisStore({ url, prefix }),
      reopen: async () => createRedisStore({ url, prefix }),
      cleanup: async () => {
        const r = new Redis(url);
        let cursor = '0';
        do {
          const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
          if (keys.length) await r.del(...keys);
          cursor = next;
        } while (cursor !== '0');
        await r.quit();
      },
    };
  });
}
