/**
 * Handovers on every store driver: a chat handed to a human stays so until
 * its time passes or it is ended, survives reopening the store, and is keyed
 * by the instance's identity.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Handovers } from '../../src/engine/conversation/handover.js';
import { HANDOVER_NS, sharedRecords } from '../../src/engine/shared.js';
import { createLowdbStore } from '../../src/store/lowdb-store.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { createRedisStore } from '../../src/store/redis-store.js';
import type { EngineStore } from '../../src/store/types.js';
import { ManualClock } from '../../src/util/clock.js';
import { redisReachable, redisUrl } from '../support/redis.js';

const T0 = Date.parse('2026-03-02T09:00:00Z');
const CHAT = '79001112233@c.us';
const up = await redisReachable();

interface Driver {
  open(): EngineStore;
  cleanup(): Promise<void>;
}

async function lowdb(): Promise<Driver> {
  const dir = await mkdtemp(join(tmpdir(), 'msgflow-handover-'));
  return { open: () => createLowdbStore({ dir }), cleanup: () => rm(dir, { recursive: true, force: true }) };
}

function redis(): Driver {
  const prefix = `msgflow-test:h26run:${randomBytes(6).toString('hex')}:`;
  return {
    open: () => createRedisStore({ url: redisUrl, prefix }),
    cleanup: async () => {
      const s = createRedisStore({ url: redisUrl, prefix });
      const kv = s.kv(`shared:${HANDOVER_NS.name}`);
      for (const [k] of await kv.entries()) await kv.delete(k);
      await s.close();
    },
  };
}

const drivers: Array<[string, () => Promise<Driver>]> = [
  ['memory', async () => ({ open: createMemoryStore, cleanup: async () => {} })],
  ['lowdb', lowdb],
];
if (up) drivers.push(['redis', async () => redis()]);

describe.each(drivers)('handovers (%s store)', (name, make) => {
  const opened: Array<{ store: EngineStore; d: Driver }> = [];
  afterEach(async () => {
    for (const { store, d } of opened.splice(0)) {
      await store.close();
      await d.cleanup();
    }
  });

  async function setup(clock = new ManualClock(T0)) {
    const d = await make();
    const store = d.open();
    opened.push({ store, d });
    return { d, store, clock, handovers: new Handovers({ store, clock, identityFor: (n) => `id-${n}` }) };
  }

  it('keeps a chat handed over for its time, then reads it as not handed over', async () => {
    const { handovers, clock, store } = await setup();
    const h = await handovers.begin('default', CHAT, { by: 'operator', reason: 'the operator wrote', forMs: 30 * 60_000 });
    expect(h).toEqual({
      instance: 'default',
      chatId: CHAT,
      since: T0,
      until: T0 + 30 * 60_000,
      by: 'operator',
      reason: 'the operator wrote',
    });
    expect(await handovers.active('default', CHAT)).toEqual(h);
    expect(await handovers.active('default', '79009998877@c.us')).toBeUndefined();
    expect(await handovers.active('other', CHAT)).toBeUndefined();
    // Keyed by the identity, never the config name.
    expect(await sharedRecords(store, HANDOVER_NS).get(`id-default:${CHAT}`)).toEqual(h);
    clock.advance(30 * 60_000 - 1);
    expect(await handovers.active('default', CHAT)).toEqual(h);
    clock.advance(1);
    expect(await handovers.active('default', CHAT)).toBeUndefined();
    expect(await handovers.list()).toEqual([]);
    // Read as expired: the record is gone, nothing sweeps.
    expect(await sharedRecords(store, HANDOVER_NS).get(`id-default:${CHAT}`)).toBeUndefined();
  });

  it('extends a handover begun again, keeping when it began, and ends it on request', async () => {
    const { handovers, clock } = await setup();
    await handovers.begin('default', CHAT, { by: 'operator', forMs: 60_000 });
    clock.advance(50_000);
    const again = await handovers.begin('default', CHAT, { by: 'operator', forMs: 60_000 });
    expect(again).toMatchObject({ since: T0, until: T0 + 110_000 });
    clock.advance(59_000);
    expect(await handovers.active('default', CHAT)).toMatchObject({ until: T0 + 110_000 });
    await handovers.end('default', CHAT);
    expect(await handovers.active('default', CHAT)).toBeUndefined();
    // Ending a chat that is not handed over is no error.
    await handovers.end('default', CHAT);
  });

  it('lists the chats in force, oldest first, and keeps one without an end until it is ended', async () => {
    const { handovers, clock } = await setup();
    await handovers.begin('default', 'b@c.us', { by: 'dialog', reason: 'asked for a human' });
    clock.advance(1000);
    await handovers.begin('default', 'a@c.us', { by: 'api', forMs: 5000 });
    clock.advance(1000);
    await handovers.begin('shop', 'c@c.us', { by: 'command', forMs: 500 });
    expect((await handovers.list()).map((h) => `${h.instance}/${h.chatId}`)).toEqual(['default/b@c.us', 'default/a@c.us', 'shop/c@c.us']);
    clock.advance(365 * 24 * 3_600_000);
    expect(await handovers.list()).toEqual([
      { instance: 'default', chatId: 'b@c.us', since: T0, by: 'dialog', reason: 'asked for a human' },
    ]);
  });

  it('refuses a duration that is not a positive number of milliseconds', async () => {
    const { handovers } = await setup();
    await expect(handovers.begin('default', CHAT, { by: 'api', forMs: 0 })).rejects.toThrow(/forMs must be a positive number/);
    await expect(handovers.begin('default', CHAT, { by: 'api', forMs: Number.NaN })).rejects.toThrow(/forMs/);
    expect(await handovers.active('default', CHAT)).toBeUndefined();
  });

  it.runIf(name !== 'memory')('survives reopening the store', async () => {
    const { d, store, clock } = await setup();
    await new Handovers({ store, clock }).begin('default', CHAT, { by: 'operator', forMs: 60_000 });
    await store.close();
    opened.length = 0;
    const again = d.open();
    opened.push({ store: again, d });
    expect(await new Handovers({ store: again, clock }).active('default', CHAT)).toMatchObject({ by: 'operator', until: T0 + 60_000 });
  });
});
