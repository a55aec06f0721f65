/**
 * Plan, then apply, in-process (the CLI's side: test/jobs/e2e/plan-apply.test.ts):
 * a broadcast run with a plan to write is a dry run that writes who gets
 * what, from which instance and when; one that applies a plan sends exactly
 * it, and writes how the outcomes differ from it. A pool of two instances of
 * one local service on a virtual clock.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { messagesBroadcast } from '../../src/actions/messages-broadcast.js';
import { optOutKey, optOutList } from '../../src/actions/opt-out.js';
import { readPlan, type PlanEntry } from '../../src/actions/broadcast-plan.js';
import { createActionTestContext, runAction } from '../../src/actions/testing.js';
import type { InstanceApi } from '../../src/api/types.js';
import { createClient } from '../../src/client/client.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { B, localConfig, ratesOff, tempDir, writeData, closedAfterEach } from '../support/local-service.js';

const { local, virtualClock } = closedAfterEach();

/** Monday 10:00 UTC. */
const T0 = Date.parse('2026-03-02T10:00:00Z');

const CSV = `phone,firstName,tz
79010000010,P0,UTC
79010000011,P1,UTC
79010000012,P2,UTC
79010000013,P3,UTC
79010000014,P4,UTC
79010000015,P5,Asia/Tokyo
not-a-number,P6,UTC
79010000010,P0 again,UTC
79010000017,P7,UTC
`;

/** Instances a and b of one local service on a virtual clock at T0; the campaign's CSV written. */
async function pool() {
  const dir = await tempDir('msgflow-plan-');
  await writeData(dir, 'data/people.csv', CSV);
  const clock = virtualClock(T0, { timeZone: 'UTC' });
  const base = localConfig();
  const config = {
    ...base,
    network: { ...base.network, population: [{ prefix: '7901', share: 1 }] },
    instances: [base.instances[0]!, { ...base.instances[0]!, ...B, rateLimits: ratesOff() }],
  } as typeof base;
  const l = await local({ dir, clock, config });
  const b: InstanceApi = createClient({ ...B, transport: l.transportFor(B), rateLimit: false, retries: 0 });
  const store = createMemoryStore();
  const planFile = path.join(dir, 'plan.json');
  const t = (runId: string, mode?: 'write' | 'apply') =>
    createActionTestContext({
      client: l.client,
      clock,
      store,
      baseDir: dir,
      runId,
      flow: 'promo',
      step: 'send',
      dryRun: mode === 'write',
      ...(mode ? { plan: { mode, path: planFile, flowHash: 'flow-v1', inputs: { audience: 'spring' } } } : {}),
      instance: { name: 'a', identity: 'inst-a' },
      instances: { a: l.client, b },
      waitRecheckMs: 20,
    });
  return { dir, clock, a: l.client, b, store, t, planFile };
}

const entriesOf = async (file: string) => {
  const entries: PlanEntry[] = [];
  const head = await readPlan(file, file, (e) => entries.push(e));
  return { head, entries };
};

/** Messages per chat on an instance, queued ones included. */
async function perChat(api: InstanceApi): Promise<Map<string, number>> {
  const m = new Map<string, number>();
  for (const msg of await api.lastOutgoingMessages({ minutes: 60 * 24 * 7 })) m.set(msg.chatId, (m.get(msg.chatId) ?? 0) + 1);
  return m;
}

const chat = (i: number) => `7901000001${i}@c.us`;

describe('messages.broadcast: plan, then apply', () => {
  it('a plan says who gets what from which instance and when, within recipient hours, paces and the warm-up; skipped rows with their reason', async () => {
    const { t, planFile, a, b } = await pool();
    const ctx = t('plan-1', 'write');
    await optOutList(ctx.ctx).set(optOutKey('inst-a', chat(7)), { at: T0 });
    const out = await runAction(messagesBroadcast, ctx, {
      file: 'data/people.csv',
      campaign: 'spring',
      variants: [
        { name: 'short', weight: 1, message: { text: 'Hi ${{ row.firstName }}' } },
        { name: 'long', weight: 1, message: { text: 'Hello ${{ row.firstName }}, spring prices are in' } },
      ],
      recipientTime: { hours: { default: '09:00-18:00' } },
      pool: { instances: ['a', 'b'], pace: { delay: '10m', jitter: 0 }, warmup: { from: 2, to: 4, days: 2 } },
      follow: { deadline: 0 },
      report: 'reports/promo.csv',
    });
    const { head, entries } = await entriesOf(planFile);
    const sends = entries.filter((e) => !('skipped' in e)) as Extract<PlanEntry, { at: string }>[];
    // Today's warm-up cap is 2 per number, each number every 10 minutes: P0-P3 now; P4 tomorrow at 09:00
    // in its own hours (day 2: 3 each), P5 as Tokyo's 09:00 opens (00:00 UTC).
    expect(sends.map((e) => [e.chatId, e.instance, e.at, e.row])).toEqual([
      [chat(0), 'a', '2026-03-02T10:00:00.000Z', 'data/people.csv:2'],
      [chat(1), 'b', '2026-03-02T10:00:00.000Z', 'data/people.csv:3'],
      [chat(2), 'a', '2026-03-02T10:10:00.000Z', 'data/people.csv:4'],
      [chat(3), 'b', '2026-03-02T10:10:00.000Z', 'data/people.csv:5'],
      [chat(5), 'a', '2026-03-03T00:00:00.000Z', 'data/people.csv:7'],
      [chat(4), 'b', '2026-03-03T09:00:00.000Z', 'data/people.csv:6'],
    ]);
    for (const e of sends) {
      expect(e.kind).toBe('text');
      const name = /(P\d)/.exec(e.summary)![1];
      expect(e.summary).toBe(e.variant === 'short' ? `Hi ${name}` : `Hello ${name}, spring prices are in`);
    }
    expect(entries.filter((e) => 'skipped' in e)).toEqual([
      { row: 'data/people.csv:8', skipped: 'invalid', reason: expect.any(String) },
      { row: 'data/people.csv:9', chatId: chat(0), skipped: 'duplicate' },
      { row: 'data/people.csv:10', chatId: chat(7), skipped: 'optedOut' },
    ]);
    expect(head).toMatchObject({ flow: 'promo', step: 'send', action: 'messages.broadcast', inputs: { audience: 'spring' } });
    expect(head.fingerprint).toMatchObject({ flow: 'flow-v1', recipients: { 'data/people.csv': expect.any(String) } });
    expect(out.planned).toMatchObject({
      recipients: 6,
      byInstance: { a: 3, b: 3 },
      skipped: { invalid: 1, duplicate: 1, optedOut: 1 },
      firstAt: '2026-03-02T10:00:00.000Z',
      lastAt: '2026-03-03T09:00:00.000Z',
      durationMs: 23 * 3_600_000,
    });
    expect(Object.values(out.planned!.byVariant).reduce((x, y) => x + y)).toBe(6);
    // A dry run: nothing sent.
    expect((await perChat(a)).size + (await perChat(b)).size).toBe(0);
  });

  it('applying a plan sends exactly its recipients, each from its planned instance with its planned variant; the diff lists none; without a campaign name it is applied once', async () => {
    const { t, planFile, a, b, dir } = await pool();
    const input = {
      file: 'data/people.csv',
      variants: [
        { name: 'short', weight: 1, message: { text: 'Hi ${{ row.firstName }}' } },
        { name: 'long', weight: 3, message: { text: 'Hello ${{ row.firstName }}' } },
      ],
      pool: { instances: ['a', 'b'], pace: { delay: '1m', jitter: 0 } },
      follow: { deadline: 0 },
      reconcile: { sendInterval: 500, grace: 1000, clockSkew: 2000 },
      report: 'reports/promo.csv',
    };
    await runAction(messagesBroadcast, t('plan-1', 'write'), input);
    const { entries } = await entriesOf(planFile);
    const planned = entries.filter((e) => !('skipped' in e)) as Extract<PlanEntry, { at: string }>[];
    // Without a campaign the variant's draw is seeded by the run: the plan's, not the apply's.
    const s = await runAction(messagesBroadcast, t('apply-1', 'apply'), input);
    expect(s).toMatchObject({ sent: 7, planDiff: { planned: 7, asPlanned: 7, notSent: 0, otherInstance: 0, late: 0, unplanned: 0 } });
    const [onA, onB] = [await perChat(a), await perChat(b)];
    for (const e of planned) expect((e.instance === 'a' ? onA : onB).get(e.chatId), e.chatId).toBe(1);
    expect(onA.size + onB.size).toBe(7);
    const report = await readFile(path.join(dir, 'reports/promo.csv'), 'utf8');
    for (const e of planned) expect(report).toContain(`${e.chatId},${e.row},${e.variant},text,sent`);
    expect((await readFile(path.join(dir, 'reports/promo.plan-diff.csv'), 'utf8')).trim().split('\r\n')).toHaveLength(1);
    // Without a campaign name the records are the run's: a second run applying the plan would send everyone again.
    await expect(runAction(messagesBroadcast, t('apply-2', 'apply'), input)).rejects.toThrow(
      /plan\.json: createdAt: applied already by run apply-1/,
    );
    expect((await perChat(a)).size + (await perChat(b)).size).toBe(7);
  });

  it('a plan whose recipients file changed since is refused before anything is sent, naming the file', async () => {
    const { t, dir, a, b } = await pool();
    const input = {
      file: 'data/people.csv',
      message: { text: 'Hi ${{ row.firstName }}' },
      pool: { instances: ['a', 'b'] },
      follow: { deadline: 0 },
    };
    await runAction(messagesBroadcast, t('plan-1', 'write'), input);
    await writeFile(path.join(dir, 'data/people.csv'), CSV + '79010000019,P9,UTC\n');
    await expect(runAction(messagesBroadcast, t('apply-1', 'apply'), input)).rejects.toThrow(
      /plan\.json is out of date: data\/people\.csv changed since it was made \(2026-03-02T10:00:00\.000Z\); make a new one with 'msgflow run promo --plan/,
    );
    expect((await perChat(a)).size + (await perChat(b)).size).toBe(0);
  });

  it('a plan file that is not one is refused naming the file and the field', async () => {
    const { t, planFile } = await pool();
    await writeFile(
      planFile,
      JSON.stringify({ format: 'msgflow-campaign-plan/1', flow: 'promo', recipients: [{ row: 'x:2', chatId: 'c' }] }),
    );
    await expect(readPlan(planFile, 'plan.json')).rejects.toThrow('plan.json: recipients[0].instance: missing');
    await writeFile(planFile, '{"format": "something else"}');
    await expect(
      runAction(messagesBroadcast, t('apply-1', 'apply'), { recipients: ['79010000010'], message: { text: 'x' } }),
    ).rejects.toThrow(/plan\.json: format: expected 'msgflow-campaign-plan\/1'/);
  });
});
