/**
 * The Redis server the tests use (127.0.0.1:6379 unless MSGFLOW_TEST_REDIS_URL),
 * one probe for whether it answers, so every Redis suite decides the same way,
 * and a TCP proxy to it that a test cuts and restores (an outage).
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
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

/**
 * Deletes every key under `prefix` (SCAN, then DEL a page at a time), the
 * prefix matched literally: its glob characters are escaped. For the tests
 * and benches that each keep their keys under a prefix of their own.
 */
export async function deleteKeys(prefix: string, url = redisUrl): Promise<void> {
  const r = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    const match = `${prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}*`;
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', match, 'COUNT', 1000);
      if (keys.length > 0) await r.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
}

/**
 * A TCP proxy to the tests' Redis that a test can kill (closing every
 * connection: an outage) and start again on the same port.
 *
 * @example
 * const proxy = new RedisProxy();
 * await proxy.start(); // redis://127.0.0.1:${proxy.port}
 * await proxy.kill();  // Redis is gone for whoever uses the proxy
 * await proxy.start(); // and back
 */
export class RedisProxy {
  private server: Server | undefined;
  private sockets = new Set<Socket>();
  port = 0;

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const target = new URL(redisUrl);
    const server = createServer((client) => {
      const upstream = createConnection({ host: target.hostname, port: Number(target.port || 6379) });
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  async kill(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  }
}
