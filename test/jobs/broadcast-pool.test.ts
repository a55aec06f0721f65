import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { messagesBroadcast } from '../../src/actions/messages-broadcast.js';
import { createActionTestContext, runAction } from '../../src/actions/testing.js';
import type { InstanceApi } from '../../src/api/types.js';
import { createClient } from '../../src/client/client.js';
import { liftPauses, listPauses } from '../../src/engine/run/pauses.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { EngineStore } from '../../src/store/types.js';
import type { ActionRunPlan } from '../../src/engine/action.js';
import { B, localConfig, ratesOff, tempDir, closedAfterEach } from '../support/local-service.js';

const { local, virtualClock } = closedAfterEach();

/** `npm run trials` runs 20 (MSGFLOW_TRIALS); one by default. */
const TRIALS = Number(process.env.MSGFLOW_TRIALS ?? 1);

const PEOPLE = Array.from({ length: 8 }, (_, i) => ({ phone: `7901000001${i}`, firstName: `P${i}` }));
const CHATS = PEOPLE.map((p) => `${p.phone}@c.us`);

/** Instances A and B of one local service on a virtual clock (UTC), every 7901 number with an account; A's failures as given. */
async function pool(o: { failuresA?: Record<string, unknown>; at?: number } = {}) {
  const dir = await tempDir();
  const clock = virtualClock(o.at ?? Date.parse('2026-03-02T10:00:00Z'), { timeZone: 'UTC' });
  const base = localConfig();
  const config = {
    ...base,
    network: { ...base.network, population: [{ prefix: '7901', share: 1 }] },
    instances: [
      { ...base.instances[0]!, ...(o.failuresA ? { failures: { states: [], webhookDown: [], ...o.failuresA } } : {}) },
      { ...base.instances[0]!, ...B, rateLimits: ratesOff() },
    ],
  } as typeof base;
  const l = await local({ dir, clock, config });
  const b: InstanceApi = createClient({ ...B, transport: l.transportFor(B), rateLimit: false, retries: 0 });
  const store = createMemoryStore();
  const t = (runId = 'run-1', more: { dryRun?: boolean; plan?: ActionRunPlan } = {}) =>
    createActionTestContext({
      ...more,
      client: l.client,
      clock,
      store,
      baseDir: dir,
      runId,
      instance: { name: 'a', identity: 'inst-a' },
      instances: { a: l.client, b },
      waitRecheckMs: 20,
    });
  return { dir, clock, l, a: l.client, b, store, t };
}

/** Messages per chat on an instance, queued ones included (lastOutgoingMessages lists them). */
async function perChat(api: InstanceApi): Promise<Map<string, number>> {
  const m = new Map<string, number>();
  for (const msg of await api.lastOutgoingMessages({ minutes: 60 * 24 * 7 })) m.set(msg.chatId, (m.get(msg.chatId) ?? 0) + 1);
  return m;
}

const input = {
  recipients: PEOPLE,
  message: { text: 'Hello ${{ row.firstName }}' },
  follow: { deadline: 0 },
  reconcile: { sendInterval: 500, grace: 1000, clockSkew: 2000 },
  report: 'reports/pool.csv',
};

const pauses = async (store: EngineStore) => (await listPauses(store)).map(([, p]) => p);

describe('messages.broadcast over a pool of instances', () => {
  it(
    `an instance turning yellowCard mid-campaign is paused with the reason; its remaining recipients move to the other, none twice (${TRIALS} trial(s))`,
    async () => {
      // Each trial turns A yellowCard after another number of its sends: the guard meets it at another point of the campaign.
      for (let i = 0; i < TRIALS; i++) await yellowCardTrial(1 + (i % 3));
    },
    30_000 * TRIALS,
  );

  async function yellowCardTrial(afterSends: number) {
    const { dir, a, b, store, t } = await pool({ failuresA: { states: [{ state: 'yellowCard', afterSends }] } });
    const ctx = t();
    const s = await runAction(messagesBroadcast, ctx, {
      ...input,
      campaign: 'spring',
      pool: { instances: ['a', 'b'], pace: { delay: '1s', jitter: 0 }, onUnhealthy: 'move' },
      guard: { checkEvery: 0 },
    });
    expect(s).toMatchObject({ recipients: 8, sent: 8, failed: 0 });
    const [onA, onB] = [await perChat(a), await perChat(b)];
    for (const chat of CHATS) expect((onA.get(chat) ?? 0) + (onB.get(chat) ?? 0), chat).toBe(1);
    expect(onA.size).toBeGreaterThanOrEqual(afterSends);
    // Nothing goes to A after the guard met its state (checked before every send): at most one was on its way.
    expect(onA.size).toBeLessThanOrEqual(afterSends + 1);
    // The pause: on A, the campaign's scope, the reason, as `msgflow pauses` lists it; and the event flows see.
    expect(await pauses(store)).toEqual([expect.objectContaining({ instance: 'a', identity: 'inst-a', scope: 'campaign:spring' })]);
    expect((await pauses(store))[0]!.reason).toMatch(/^state yellowCard/);
    expect(ctx.events).toContainEqual({
      name: 'campaign.paused',
      payload: expect.objectContaining({ instance: 'a', reason: 'state yellowCard' }),
    });
    // The report names each recipient's sender.
    const rows = (await readFile(path.join(dir, 'reports/pool.csv'), 'utf8')).split('\r\n').slice(1, -1);
    expect(rows.filter((r) => r.includes(',a,')).length).toBe(onA.size);
    expect(rows.filter((r) => r.includes(',b,')).length).toBe(onB.size);
  }

  it('each recipient keeps its sender across campaigns', async () => {
    const { a, b, t } = await pool();
    const p = { instances: ['a', 'b'], pace: { delay: '1s', jitter: 0 } };
    await runAction(messagesBroadcast, t('run-1'), { ...input, campaign: 'one', pool: p });
    const first = [await perChat(a), await perChat(b)];
    // Both send (each has its own pace).
    expect(first[0]!.size).toBeGreaterThan(0);
    expect(first[1]!.size).toBeGreaterThan(0);
    await runAction(messagesBroadcast, t('run-2'), { ...input, campaign: 'two', pool: p });
    const second = [await perChat(a), await perChat(b)];
    for (const chat of CHATS) {
      const on = first[0]!.has(chat) ? 0 : 1;
      expect(second[on]!.get(chat), chat).toBe(2);
      expect(second[1 - on]!.get(chat) ?? 0, chat).toBe(0);
    }
  });

  it('without a pace or caps the pool still shares the work: its instances take turns, and the plan says the same', async () => {
    const { dir, a, b, t } = await pool();
    const p = { instances: ['a', 'b'] };
    const path = `${dir}/plan.json`;
    const planned = await runAction(messagesBroadcast, t('plan', { dryRun: true, plan: { mode: 'write', path, flowHash: 'x' } }), {
      ...input,
      pool: p,
    });
    expect(planned.planned?.byInstance).toEqual({ a: 4, b: 4 });
    await runAction(messagesBroadcast, t('run-1'), { ...input, pool: p });
    const [onA, onB] = [await perChat(a), await perChat(b)];
    expect([onA.size, onB.size]).toEqual([4, 4]);
    // In turns, row by row: a, b, a, b ...
    expect(CHATS.map((c) => (onA.has(c) ? 'a' : 'b')).join('')).toBe('abababab');
  });

  it('onUnhealthy wait: the campaign waits durably on the pause and goes on with the same sender once it is lifted', async () => {
    const { l, a, b, store, t } = await pool({ failuresA: { states: [{ state: 'yellowCard', afterSends: 2 }] } });
    const ctx = t();
    const done = runAction(messagesBroadcast, ctx, {
      ...input,
      campaign: 'patient',
      pool: { instances: ['a'], pace: { delay: '1s', jitter: 0 }, onUnhealthy: 'wait' },
      guard: { checkEvery: 0 },
    });
    const w = await ctx.waiting;
    expect(w.reason).toMatch(/^campaign:patient paused by state yellowCard/);
    // The account recovers; the pause is lifted (msgflow pauses lift a).
    expect((await l.admin('state', { state: 'authorized' })).status).toBe(200);
    expect(await liftPauses(store, { name: 'a' })).toHaveLength(1);
    const s = await done;
    expect(s).toMatchObject({ sent: 8 });
    const onA = await perChat(a);
    for (const chat of CHATS) expect(onA.get(chat), chat).toBe(1);
    expect((await perChat(b)).size).toBe(0);
  });

  it("a daily cap and a new number's warm-up ramp spread the sends over days", async () => {
    const { a, t } = await pool();
    const s = await runAction(messagesBroadcast, t(), {
      ...input,
      pool: { instances: ['a'], warmup: { from: 2, to: 6, days: 2 }, dailyCap: 5 },
    });
    expect(s).toMatchObject({ sent: 8 });
    const days = new Map<string, number>();
    for (const m of await a.lastOutgoingMessages({ minutes: 60 * 24 * 7 })) {
      const day = new Date(m.timestamp * 1000).toISOString().slice(0, 10);
      days.set(day, (days.get(day) ?? 0) + 1);
    }
    // 2 on the first day, 4 on the second (the ramp), the last 2 on the third (5 allowed by the cap).
    expect(Object.fromEntries(days)).toEqual({ '2026-03-02': 2, '2026-03-03': 4, '2026-03-04': 2 });
  });
});
