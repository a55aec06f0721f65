/**
 * The Redis driver through the conformance suite, against the Redis on
 * 127.0.0.1:6379 (MSGFLOW_TEST_REDIS_URL overrides). Skipped, saying so,
 * only when no server answers.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { deleteKeys, redisReachable, redisUrl } from '../support/redis.js';
import { createRedisStore } from '../../src/store/redis-store.js';
import { describeStoreConformance, makeRun } from './conformance.js';

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
      cleanup: () => deleteKeys(prefix, url),
    };
  });

  describe('redis driver: run updates', () => {
    it('an update after another process changed the run starts from what Redis holds: neither change is lost', async () => {
      const prefix = `msgflow-test:${randomBytes(6).toString('hex')}:`;
      const a = createRedisStore({ url, prefix });
      const b = createRedisStore({ url, prefix });
      try {
        await a.createRun(makeRun({ status: 'running' }));
        await a.updateRun('run-1', { itemsDone: 1 });
        await b.updateRun('run-1', { itemsFailed: 2 });
        const after = await a.updateRun('run-1', { itemsDone: 3 });
        expect([after.itemsDone, after.itemsFailed]).toEqual([3, 2]);
        expect(await b.getRun('run-1')).toEqual(after);
      } finally {
        await a.close();
        await b.close();
        const r = new Redis(url);
        const keys = await r.keys(`${prefix}*`);
        if (keys.length) await r.del(...keys);
        await r.quit();
      }
    });
  });
}
