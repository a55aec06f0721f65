import { describe, expect, it } from 'vitest';
import { RateLimitError } from '../../src/api/errors.js';
import { retryDelay } from '../../src/engine/run/backoff.js';
import { ManualClock } from '../../src/util/clock.js';
import { action, flow, registryWith, step, testEngine } from './helpers.js';
import { waitFor } from '../support/wait.js';

const T0 = Date.parse('2026-01-05T09:00:00Z');

describe('runner: concurrency, retry, rate limits, timeouts', () => {
  it('forEach keeps at most `concurrency` items in flight', async () => {
    let inFlight = 0;
    let max = 0;
    const release: Array<() => void> = [];
    const slow = action('slow', async () => {
      inFlight++;
      max = Math.max(max, inFlight);
      await new Promise<void>((r) => release.push(r));
      inFlight--;
      return null;
    });
    const t = testEngine(registryWith(slow));
    const { done } = await t.engine.start(
      flow([step({ id: 's', uses: 'slow', forEach: Array.from({ length: 10 }, (_, i) => i), concurrency: 3 })]),
    );
    for (let served = 0; served < 10; served++) {
      await waitFor('an item in flight', () => release.length > 0);
      // Let every worker that could start do so before releasing one.
      for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
      expect(inFlight).toBeLessThanOrEqual(3);
      release.shift()!();
    }
    const run = await done;
    expect(run.itemsDone).toBe(10);
    expect(max).toBe(3);
  });

  it('retries with exponential backoff on the clock, counting attempts; the last failure is recorded', async () => {
    const clock = new ManualClock(T0);
    const attempts: Record<number, number[]> = {};
    const flaky = action('flaky', async (ctx) => {
      const i = ctx.run.item!.index;
      (attempts[i] ??= []).push(ctx.run.attempt);
      if (i === 0 && ctx.run.attempt < 3) throw new Error(`fail ${ctx.run.attempt}`);
      if (i === 1) throw new Error('always');
      return 'ok';
    });
    const t = testEngine(registryWith(flaky), { clock });
    const retry = { maxAttempts: 3, backoff: 'exponential' as const, delayMs: 2000, maxDelayMs: 3000, jitter: false };
    const { runId, done } = await t.engine.start(flow([step({ id: 's', uses: 'flaky', forEach: [0, 1], retry, concurrency: 2 })]));
    await waitFor('both items asleep', () => clock.pending === 2);
    await clock.advance(1999);
    expect(attempts).toEqual({ 0: [1], 1: [1] });
    await clock.advance(1);
    await waitFor('second backoff', () => clock.pending === 2);
    expect(attempts).toEqual({ 0: [1, 2], 1: [1, 2] });
    await clock.advance(3000); // 4000 capped at maxDelay 3000
    const run = await done;
    expect(attempts).toEqual({ 0: [1, 2, 3], 1: [1, 2, 3] });
    const items = await t.store.getItems(runId, 's');
    expect(items.get(0)).toMatchObject({ status: 'succeeded', attempts: 3 });
    expect(items.get(1)).toMatchObject({ status: 'failed', attempts: 3, error: { message: 'always' } });
    expect(run.itemsFailed).toBe(1);
    const retries = t.events.filter(([n]) => n === 'step:retry').map(([, p]) => [p.item, p.attempt, p.delayMs]);
    expect(retries).toEqual([
      [0, 1, 2000],
      [1, 1, 2000],
      [0, 2, 3000],
      [1, 2, 3000],
    ]);
  });

  it('retryDelay: fixed, exponential, cap and jitter bounds', () => {
    const p = { maxAttempts: 5, backoff: 'exponential' as const, delayMs: 1000, maxDelayMs: 5000, jitter: false };
    expect([1, 2, 3, 4].map((a) => retryDelay(p, a))).toEqual([1000, 2000, 4000, 5000]);
    expect(retryDelay({ ...p, backoff: 'fixed' }, 4)).toBe(1000);
    expect(retryDelay({ ...p, jitter: true }, 3, () => 0)).toBe(2000);
    expect(retryDelay({ ...p, jitter: true }, 3, () => 1)).toBe(4000);
  });

  it('a RateLimitError waits durably for retryAfter without spending an attempt', async () => {
    const clock = new ManualClock(T0);
    const calls: number[] = [];
    const limited = action('limited', async (ctx) => {
      calls.push(ctx.run.attempt);
      if (calls.length === 1) throw new RateLimitError('checkAccount', 'checkAccount', 7_200_000, 'rate_limit_exceeded');
      return 'ok';
    });
    const t = testEngine(registryWith(limited), { clock });
    const { runId, done } = await t.engine.start(flow([step({ id: 'check', uses: 'limited' })])); // maxAttempts 1
    await waitFor('asleep on the rate limit', () => clock.pending === 1);
    expect(await t.store.listWaits(runId)).toEqual([
      expect.objectContaining({ key: 'check/-/rate-limit', until: T0 + 7_200_000, step: 'check' }),
    ]);
    expect(await t.engine.getRun(runId)).toMatchObject({ status: 'waiting', waitingUntil: T0 + 7_200_000 });
    expect(t.events.find(([n]) => n === 'run:waiting')?.[1]).toMatchObject({ step: 'check', until: T0 + 7_200_000 });
    await clock.advance(7_199_999);
    expect(calls).toEqual([1]);
    await clock.advance(1);
    const run = await done;
    expect(run.status).toBe('succeeded');
    expect(calls).toEqual([1, 1]); // the same attempt twice: the pause did not count
    expect(await t.store.listWaits(runId)).toEqual([]);
    expect(t.events.some(([n, p]) => n === 'run:resumed' && p.step === 'check')).toBe(true);
  });

  it('times out an attempt on the clock, aborts its signal, and retries', async () => {
    const clock = new ManualClock(T0);
    const aborted: unknown[] = [];
    const hang = action(
      'hang',
      (ctx) =>
        new Promise((_, reject) =>
          ctx.signal.addEventListener('abort', () => {
            aborted.push(ctx.signal.reason);
            reject(ctx.signal.reason);
          }),
        ),
    );
    const t = testEngine(registryWith(hang), { clock });
    const retry = { maxAttempts: 2, backoff: 'fixed' as const, delayMs: 10, maxDelayMs: 10, jitter: false };
    const { done } = await t.engine.start(flow([step({ id: 'h', uses: 'hang', timeoutMs: 30_000, retry })]));
    await waitFor('timeout armed', () => clock.pending === 1);
    await clock.advance(29_999);
    expect(aborted).toHaveLength(0);
    await clock.advance(1);
    await waitFor('backoff', () => clock.pending === 1 && aborted.length === 1);
    await clock.advance(10);
    await waitFor('second timeout armed', () => clock.pending === 1);
    await clock.advance(30_000);
    const run = await done;
    expect(aborted).toHaveLength(2);
    expect(run.error).toMatchObject({ code: 'STEP_TIMEOUT', message: "step 'h' timed out after 30000 ms" });
  });

  it('the attempt timeout is paused while the action sits in a durable wait', async () => {
    const clock = new ManualClock(T0);
    const waiter = action('waiter', async (ctx) => {
      await ctx.wait({ ms: 3_600_000, reason: 'cool down' });
      return 'woke';
    });
    const t = testEngine(registryWith(waiter), { clock });
    const { done } = await t.engine.start(flow([step({ id: 'w', uses: 'waiter', timeoutMs: 1000 })]));
    await waitFor('waiting', () => clock.pending === 1);
    await clock.advance(3_600_000);
    const run = await done;
    expect(run.status).toBe('succeeded');
    expect((await t.engine.getSteps(run.id))[0].output).toBe('woke');
  });
});
