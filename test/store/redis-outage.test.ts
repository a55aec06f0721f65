/**
 * The Redis driver through outages and beside other projects:
 * a TCP proxy (node:net) between the store and Redis is killed and restored;
 * two projects on one Redis database never see each other.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { deleteKeys, RedisProxy, redisReachable, redisUrl } from '../support/redis.js';
import { waitFor } from '../support/wait.js';
import { createRedisStore } from '../../src/store/redis-store.js';
import { createStore, defaultRedisPrefix } from '../../src/store/create.js';
import type { Logger } from '../../src/util/logger.js';
import { makeRun } from './conformance.js';

const url = redisUrl;

const up = await redisReachable();
const prefixes: string[] = [];

afterAll(async () => {
  if (up) for (const p of prefixes) await deleteKeys(p, url);
});

function recordingLogger() {
  const lines: Array<{ level: string; message: string }> = [];
  const at = (level: string) => (message: string) => void lines.push({ level, message });
  const logger: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
  return { logger, lines };
}

// The reconnection backoff's cap (the store's maxReconnectDelayMs option): a
// call made during an outage fails after two attempts, ~2 x this.
const RECONNECT_MS = 20;

async function eventually<T>(op: () => Promise<T>, what: string, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      return await op();
    } catch (e) {
      if (Date.now() > end) throw new Error(`${what}: ${(e as Error).message}`);
      await new Promise((r) => setTimeout(r, RECONNECT_MS));
    }
  }
}

describe.skipIf(!up)('redis store: outages', () => {
  it('calls during an outage fail with STORE_UNAVAILABLE, one line per outage and recovery, calls after it succeed', async () => {
    const proxy = new RedisProxy();
    await proxy.start();
    const prefix = `msgflow-test:${randomBytes(6).toString('hex')}:`;
    prefixes.push(prefix);
    const { logger, lines } = recordingLogger();
    const store = createRedisStore({ url: `redis://127.0.0.1:${proxy.port}`, prefix, logger, maxReconnectDelayMs: RECONNECT_MS });
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      await store.createRun(makeRun());
      await store.kv('shared:pauses').set('a', { until: 1 });

      await proxy.kill();
      const failures = [];
      for (let i = 0; i < 3; i++) {
        failures.push(
          await store
            .kv('shared:pauses')
            .get('a')
            .then(
              () => 'answered',
              (e: unknown) => e,
            ),
        );
        failures.push(
          await store.updateRun('run-1', { itemsDone: i }).then(
            () => 'answered',
            (e: unknown) => e,
          ),
        );
      }
      for (const f of failures) expect(f).toMatchObject({ name: 'MsgflowError', code: 'STORE_UNAVAILABLE', params: { driver: 'redis' } });
      expect((failures[0] as Error).message).toMatch(/^the redis store is unavailable: /);
      const journal = (async () => {
        for await (const _ of store.readJournal('run-1', 's/-')) void _;
      })();
      await expect(journal).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      // Several more reconnection attempts while down and no call waits (the calls above made a dozen).
      await new Promise((r) => setTimeout(r, 8 * RECONNECT_MS));

      await proxy.start();
      await eventually(() => store.kv('shared:pauses').set('b', { until: 2 }), 'a write after the restore');
      expect(await store.kv('shared:pauses').entries()).toEqual([
        ['a', { until: 1 }],
        ['b', { until: 2 }],
      ]);
      expect((await store.updateRun('run-1', { itemsDone: 9 })).itemsDone).toBe(9);

      const warns = lines.filter((l) => l.level === 'warn');
      const infos = lines.filter((l) => l.level === 'info');
      expect(warns).toHaveLength(1);
      expect(warns[0].message).toMatch(new RegExp(`^redis store at 127\\.0\\.0\\.1:${proxy.port} unavailable \\(.+\\); reconnecting`));
      expect(infos).toHaveLength(1);
      expect(infos[0].message).toMatch(/reachable again after \d+\.\d s$/);
      expect(lines.filter((l) => l.level === 'error')).toEqual([]);

      // A second outage: again one line each.
      await proxy.kill();
      await expect(store.getRun('run-1')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      await proxy.start();
      await eventually(() => store.getRun('run-1'), 'a read after the second restore');
      expect(lines.filter((l) => l.level === 'warn')).toHaveLength(2);
      expect(lines.filter((l) => l.level === 'info')).toHaveLength(2);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await store.close();
      await proxy.kill();
    }
  }, 60_000);

  it("the store's connection says at once when Redis is unreachable, and tells its listeners each time it answers again", async () => {
    const proxy = new RedisProxy();
    await proxy.start();
    const store = createRedisStore({
      url: proxy.url,
      prefix: 'msgflow-test:conn:',
      logger: recordingLogger().logger,
      maxReconnectDelayMs: RECONNECT_MS,
    });
    let back = 0;
    const stop = store.connection!.onReachable(() => back++);
    try {
      await store.getRun('none');
      expect(store.connection!.reachable).toBe(true);
      await proxy.kill();
      await waitFor('the connection to be known down', () => !store.connection!.reachable);
      expect(back).toBe(0);
      await proxy.start();
      await waitFor('the listener to be told', () => back === 1);
      expect(store.connection!.reachable).toBe(true);
      await proxy.kill();
      await waitFor('the connection to be known down again', () => !store.connection!.reachable);
      await proxy.start();
      await waitFor('the listener to be told again', () => back === 2);
    } finally {
      stop();
      await store.close();
      await proxy.kill();
    }
  });

  it('a store whose Redis is down from the start fails its calls with STORE_UNAVAILABLE and closes', async () => {
    const proxy = new RedisProxy();
    await proxy.start();
    const port = proxy.port;
    await proxy.kill();
    const { logger, lines } = recordingLogger();
    const store = createRedisStore({
      url: `redis://127.0.0.1:${port}`,
      prefix: 'msgflow-test:never:',
      logger,
      maxReconnectDelayMs: RECONNECT_MS,
    });
    await expect(store.listRuns({ limit: 1 })).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    await store.close();
    expect(lines.filter((l) => l.level === 'warn')).toHaveLength(1);
  });
});

describe.skipIf(!up)('redis store: one Redis database, two projects', () => {
  it("the default prefix comes from the project directory; projects never see each other's runs or caches", async () => {
    const a = await mkdtemp(join(tmpdir(), 'msgflow-proj-'));
    const b = await mkdtemp(join(tmpdir(), 'msgflow-proj-'));
    prefixes.push(defaultRedisPrefix(a), defaultRedisPrefix(b), 'msgflow-test-shared:');
    try {
      expect(defaultRedisPrefix(a)).toMatch(/^msgflow:msgflow-proj-\w+-[0-9a-f]{8}:$/);
      expect(defaultRedisPrefix(a)).not.toBe(defaultRedisPrefix(b));
      expect(defaultRedisPrefix(join(a, '.'))).toBe(defaultRedisPrefix(a));
      const sa = createStore({ driver: 'redis', dir: '.msgflow/state', url }, a);
      const sb = createStore({ driver: 'redis', dir: '.msgflow/state', url }, b);
      await sa.createRun(makeRun({ id: 'same-id', flow: 'a-flow' }));
      await sa.kv('shared:pauses').set('x:checkAccount', { until: 1 });
      expect(await sb.listRuns()).toEqual([]);
      expect(await sb.getRun('same-id')).toBeUndefined();
      expect(await sb.kv('shared:pauses').get('x:checkAccount')).toBeUndefined();
      await sb.createRun(makeRun({ id: 'same-id', flow: 'b-flow' }));
      expect((await sa.getRun('same-id'))?.flow).toBe('a-flow');
      // An explicit prefix is how two projects choose to share.
      const s1 = createStore({ driver: 'redis', dir: 'x', url, prefix: 'msgflow-test-shared:' }, a);
      const s2 = createStore({ driver: 'redis', dir: 'x', url, prefix: 'msgflow-test-shared:' }, b);
      await s1.kv('shared:pauses').set('k', 1);
      expect(await s2.kv('shared:pauses').get('k')).toBe(1);
      for (const s of [sa, sb, s1, s2]) await s.close();
    } finally {
      await rm(a, { recursive: true, force: true });
      await rm(b, { recursive: true, force: true });
    }
  });
});
