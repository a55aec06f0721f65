/**
 * The Redis server the tests use (127.0.0.1:6379 unless MSGFLOW_TEST_REDIS_URL),
 * and one probe for whether it answers, so every Redis suite decides the same way.
 */
import { Redis } from 'ioredis';

export const redisUrl = process.env.MSGFLOW_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** True when the server answers PING within half a second; never retries, never throws. */
export async function redisReachable(url = redisUrl): Promise<boolean> {
  const probe = new Redis(url, { lazyConnect: true, connectTimeout: 500, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}
