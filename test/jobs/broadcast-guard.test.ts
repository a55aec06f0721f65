/**
 * The health guard's thresholds (actions/broadcast-guard.ts): the windows as
 * a computation, then a campaign against the local service whose recipients
 * partly have no account, paused on the instance with the reason, its
 * windows kept across a restart of the run.
 */
import { describe, expect, it } from 'vitest';
import { HealthWindow, rulesOf, SenderHealth, type HealthEntry } from '../../src/actions/broadcast-guard.js';
import { GuardSchema } from '../../src/actions/broadcast-pool.js';
import { messagesBroadcast } from '../../src/actions/messages-broadcast.js';
import { createActionTestContext, runAction } from '../../src/actions/testing.js';
import { liftPauses, listPauses } from '../../src/engine/run/pauses.js';
import { BROADCAST_HEALTH_NS, sharedState } from '../../src/engine/shared.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { localConfig, tempDir, closedAfterEach } from '../support/local-service.js';
import { network } from '../support/network.js';

const { local, virtualClock } = closedAfterEach();

const rules = (guard: Record<string, unknown>) => rulesOf(GuardSchema.parse(guard));
const entry = (i: number, o: Partial<HealthEntry> = {}): HealthEntry => ({
  chatId: `7900000000${i}@c.us`,
  idMessage: `m${i}`,
  sentAt: i * 1000,
  ...o,
});

describe('the health guard windows', () => {
  it('a share crosses only with the minimum sample, over the last `window` sends whose outcome is known', () => {
    const w = new HealthWindow(rules({ noAccount: { maxShare: 0.2, window: 5, minSample: 3 } }));
    const sends = Array.from({ length: 8 }, (_, i) => entry(i));
    for (const e of sends) w.push(e);
    // Two outcomes known, both noAccount: 100%, but under the minimum sample.
    w.change(sends[3]!, { outcome: 'noAccount' });
    w.change(sends[4]!, { outcome: 'noAccount' });
    w.slide(10_000);
    expect(w.crossed()).toBeUndefined();
    w.change(sends[5]!, { outcome: 'ok' });
    expect(w.crossed()).toEqual({ metric: 'noAccount', reason: 'noAccount 2/3 (66.7%) > 20%' });
    // The window holds the last 5 sends (3..7): sends 0..2 left it, their outcomes do not count.
    w.change(sends[0]!, { outcome: 'noAccount' });
    expect(w.tally('noAccount')).toEqual({ sample: 3, hits: 2 });
    // Four more sends, all reaching an account: the noAccount ones slide out.
    for (let i = 8; i < 12; i++) {
      const e = entry(i, { outcome: 'ok' });
      w.push(e);
    }
    expect(w.slide(12_000).map((e) => e.idMessage)).toEqual(['m3', 'm4', 'm5', 'm6']);
    expect(w.tally('noAccount')).toEqual({ sample: 4, hits: 0 });
    expect(w.crossed()).toBeUndefined();
  });

  it('`within` keeps only the sends of the last while', () => {
    const w = new HealthWindow(rules({ failed: { maxShare: 0.5, window: 100, minSample: 2, within: '5s' } }));
    for (let i = 0; i < 6; i++) w.push(entry(i, { outcome: i < 3 ? 'failed' : 'ok' }));
    w.slide(5000);
    // 3/6 is not more than half.
    expect(w.crossed()).toBeUndefined();
    expect(w.tally('failed')).toEqual({ sample: 6, hits: 3 });
    // At 8 s only the sends from 3 s on count: none failed.
    w.slide(8000);
    expect(w.tally('failed')).toEqual({ sample: 3, hits: 0 });
  });

  it('responses count once their `after` has passed, only for sends that reached an account; the reply rate is a floor', () => {
    const w = new HealthWindow(rules({ replies: { minRate: 0.3, after: '10s', window: 10, minSample: 4 } }));
    const sends = Array.from({ length: 6 }, (_, i) => entry(i, { outcome: i === 1 ? 'noAccount' : 'ok' }));
    for (const e of sends) w.push(e);
    // At 12 s the sends of 0, 1 and 2 s are due (10 s after), in order.
    const due: string[] = [];
    for (let e = w.due('replies', 12_000); e; e = w.due('replies', 12_000)) {
      due.push(e.idMessage);
      w.responded('replies', e, e.outcome === 'ok' ? false : null);
    }
    expect(due).toEqual(['m0', 'm1', 'm2']);
    expect(w.tally('replies')).toEqual({ sample: 2, hits: 0 });
    for (let e = w.due('replies', 20_000); e; e = w.due('replies', 20_000)) w.responded('replies', e, e.idMessage === 'm3');
    expect(w.tally('replies')).toEqual({ sample: 5, hits: 1 });
    expect(w.crossed()).toEqual({ metric: 'replies', reason: 'replies 1/5 (20%) < 30%' });
  });

  it('after a trip the window starts afresh: the sends before it no longer count', () => {
    const w = new HealthWindow(rules({ noAccount: { maxShare: 0.2, window: 10, minSample: 2 } }));
    for (let i = 0; i < 3; i++) w.push(entry(i, { outcome: 'noAccount' }));
    expect(w.crossed()?.metric).toBe('noAccount');
    w.restart('noAccount', 3000);
    w.slide(3000);
    expect(w.crossed()).toBeUndefined();
    w.push(entry(3, { outcome: 'ok' }));
    w.push(entry(4, { outcome: 'noAccount' }));
    expect(w.tally('noAccount')).toEqual({ sample: 2, hits: 1 });
  });

  it('the windows are durable: loaded again, they hold what they held, and a send out of every window is deleted', async () => {
    const store = createMemoryStore();
    const ctx = { shared: (ns: Parameters<typeof sharedState>[1]) => sharedState(store, ns) };
    const guard = GuardSchema.parse({
      noAccount: { maxShare: 0.5, window: 4, minSample: 2 },
      optOut: { maxRate: 0.5, after: '5s', window: 4, minSample: 1 },
    });
    const h = await SenderHealth.load(ctx, 'inst-a', 'campaign:x', guard, 0);
    const look = {
      outcome: async (e: HealthEntry) => (Number(e.idMessage.slice(1)) % 2 === 0 ? ('noAccount' as const) : ('ok' as const)),
      optedOut: async (e: HealthEntry) => e.idMessage === 'm1',
      replied: async () => null,
    };
    for (let i = 0; i < 6; i++) await h.sent(`7900000000${i}@c.us`, `m${i}`, i * 1000);
    // The last 4 sends: 2 without an account, not more than half; of the 3 whose 5 s passed, 1 reached an account and opted out.
    expect(await h.check(look, 7000)).toEqual({ metric: 'optOut', reason: 'optOut 1/1 (100%) > 50%' });
    expect(h.window.tally('noAccount')).toEqual({ sample: 4, hits: 2 });
    expect(h.window.tally('optOut')).toEqual({ sample: 1, hits: 1 });
    const again = await SenderHealth.load(ctx, 'inst-a', 'campaign:x', guard, 7000);
    expect(again.window.tally('noAccount')).toEqual({ sample: 4, hits: 2 });
    expect(again.window.tally('optOut')).toEqual({ sample: 1, hits: 1 });
    // Sends 0 and 1 left the noAccount window, but the optOut window still holds 1 (m0 reached no account, uncounted).
    const keys = (await sharedState(store, BROADCAST_HEALTH_NS).entries('inst-a|campaign:x|e|')).map(
      ([, e]) => (e as HealthEntry).idMessage,
    );
    expect(keys).toEqual(['m0', 'm1', 'm2', 'm3', 'm4', 'm5']);
    await again.check(look, 20_000);
    const left = (await sharedState(store, BROADCAST_HEALTH_NS).entries('inst-a|campaign:x|e|')).map(
      ([, e]) => (e as HealthEntry).idMessage,
    );
    expect(left).toEqual(['m2', 'm3', 'm4', 'm5']);
  });

  it('refuses a minimum sample the window cannot hold, naming the field', () => {
    const r = GuardSchema.safeParse({ noAccount: { maxShare: 0.2, window: 10, minSample: 20 } });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]).toMatchObject({
      path: ['noAccount', 'minSample'],
      message: 'minSample must not exceed window (it could never trip)',
    });
  });
});

/** Numbers 79020000000..: 1, 3 and 5 without an account. */
const PEOPLE = Array.from({ length: 12 }, (_, i) => ({ phone: `790200000${String(i).padStart(2, '0')}`, firstName: `P${i}` }));
const HAS_ACCOUNT = (i: number) => i % 2 === 0 || i >= 6;

async function campaign() {
  const dir = await tempDir();
  const clock = virtualClock(Date.parse('2026-03-02T10:00:00Z'), { timeZone: 'UTC' });
  const accounts = PEOPLE.filter((_, i) => HAS_ACCOUNT(i)).map((p) => ({ phone: Number(p.phone) }));
  const l = await local({ dir, clock, config: localConfig({ network: network({ deliveredAfterMs: 200 }, accounts) }) });
  const store = createMemoryStore();
  const t = (runId = 'run-1') =>
    createActionTestContext({
      client: l.client,
      clock,
      store,
      baseDir: dir,
      runId,
      instance: { name: 'a', identity: 'inst-a' },
      waitRecheckMs: 20,
    });
  return { dir, clock, l, store, t };
}

const input = {
  recipients: PEOPLE,
  campaign: 'numbers',
  message: { text: 'Hello ${{ row.firstName }}' },
  pace: { delay: '1s', jitter: 0 },
  follow: { deadline: 0 },
  reconcile: { sendInterval: 500, grace: 1000, clockSkew: 2000 },
  report: 'reports/guard.csv',
};

describe('messages.broadcast under the noAccount threshold', () => {
  it('pauses the campaign on the instance with the share in the reason once too many recipients have no account; the lift resumes it', async () => {
    const { l, store, t } = await campaign();
    const ctx = t();
    const done = runAction(messagesBroadcast, ctx, {
      ...input,
      guard: { checkEvery: '1h', noAccount: { maxShare: 0.3, window: 10, minSample: 4 }, pauseFor: '2h' },
    });
    const w = await ctx.waiting;
    // Sends 0..3: 1 and 3 have no account; each status is known before the next send (1 s pace, 500 ms queue).
    expect(w.reason).toBe('campaign:numbers paused by noAccount 2/4 (50%) > 30%');
    const [pause] = (await listPauses(store)).map(([, p]) => p);
    expect(pause).toMatchObject({ instance: 'a', scope: 'campaign:numbers', reason: 'noAccount 2/4 (50%) > 30%' });
    expect(ctx.events).toContainEqual({
      name: 'campaign.paused',
      payload: expect.objectContaining({ reason: 'noAccount 2/4 (50%) > 30%' }),
    });
    expect((await l.client.lastOutgoingMessages({ minutes: 60 })).length).toBe(4);
    // Lifted: the window starts afresh (5 is noAccount, then everyone has an account: 1/7 stays under 30%).
    expect(await liftPauses(store, { name: 'a' })).toHaveLength(1);
    const s = await done;
    expect(s).toMatchObject({ recipients: 12, sent: 12 });
    expect((await l.client.lastOutgoingMessages({ minutes: 600 })).length).toBe(12);
    expect((await listPauses(store)).length).toBe(0);
  });

  it("a campaign's next run keeps the instance's window: it trips on the sends of the run before", async () => {
    const { l, t } = await campaign();
    const guard = { checkEvery: '1h', noAccount: { maxShare: 0.4, window: 10, minSample: 6 } };
    // The first run sends to 0..3 (2 without an account): under the minimum sample.
    const first = await runAction(messagesBroadcast, t('run-1'), { ...input, recipients: PEOPLE.slice(0, 4), guard });
    expect(first).toMatchObject({ sent: 4 });
    // The next run of the campaign: 4 reaches an account, 5 does not: 3/6 (50%) with the first run's sends.
    const ctx = t('run-2');
    void runAction(messagesBroadcast, ctx, { ...input, recipients: PEOPLE.slice(0, 8), guard }).catch(() => undefined);
    const w = await ctx.waiting;
    expect(w.reason).toBe('campaign:numbers paused by noAccount 3/6 (50%) > 40%');
    expect((await l.client.lastOutgoingMessages({ minutes: 60 })).length).toBe(6);
    ctx.abort();
  });
});
