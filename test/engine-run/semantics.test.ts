/**
 * Per-item `if:`, dry runs that predict, and the step retry policy
 * decided by classify() (definite never retried, fatal stops the step).
 */
import { describe, expect, it } from 'vitest';
import { MsgflowError } from '../../src/api/errors.js';
import type { InstanceApi } from '../../src/api/types.js';
import { action, flow, registryWith, step, testEngine } from './helpers.js';

const retry3 = { maxAttempts: 3, backoff: 'fixed' as const, delayMs: 0, maxDelayMs: 0, jitter: false };

describe('if: on a forEach step that reads item', () => {
  it('is evaluated per item: false items are skipped, counted and recorded; the others run', async () => {
    const seen: unknown[] = [];
    const echo = action('echo', async (ctx) => (seen.push(ctx.run.item!.value), ctx.run.item!.value));
    const f = flow([step({ id: 'big', uses: 'echo', forEach: [1, 5, 2, 8], if: 'item > 3' })]);
    const t = testEngine(registryWith(echo));
    const run = await (await t.engine.start(f)).done;
    expect(run.status).toBe('succeeded');
    expect(seen).toEqual([5, 8]);
    const [rec] = await t.engine.getSteps(run.id);
    expect(rec).toMatchObject({ status: 'succeeded', done: 2, failed: 0, skipped: 2, total: 4 });
    const items = await t.store.getItems(run.id, 'big');
    expect([...items.values()].map((i) => i.status)).toEqual(['skipped', 'succeeded', 'skipped', 'succeeded']);
    expect(t.events.find(([n]) => n === 'step:finished')?.[1]).toMatchObject({ done: 2, skipped: 2 });
  });

  it('an if: that does not read item still decides for the whole step', async () => {
    const echo = action('echo', async () => 1);
    const t = testEngine(registryWith(echo));
    const run = await (await t.engine.start(flow([step({ id: 's', uses: 'echo', forEach: [1, 2], if: 'false' })]))).done;
    expect((await t.engine.getSteps(run.id))[0]).toMatchObject({ status: 'skipped', total: 0 });
  });
});

describe('--dry-run', () => {
  it('calls actions with dryRun: true (their client refuses writes), lets outputs flow to the next step, and does not call the others', async () => {
    const called: string[] = [];
    const predict = {
      ...action('predict', async (ctx, input) => {
        called.push(`predict dryRun=${ctx.run.dryRun}`);
        await expect(ctx.client.sendFileByUrl({ chatId: '1@c.us', urlFile: 'http://x/f', fileName: 'f' } as never)).rejects.toMatchObject({
          code: 'DRY_RUN_WRITE',
          message: expect.stringContaining('sendFileByUrl'),
        });
        const read = await ctx.client.checkAccount({ phoneNumber: 79001112233 } as never);
        return { wouldSend: (input.recipients as string[]).length, read };
      }),
      dryRun: true,
    };
    const report = {
      ...action('report', async (_ctx, input) => {
        called.push('report');
        return input;
      }),
      dryRun: true,
    };
    const send = action('send', async () => {
      called.push('send (must not run)');
      return 'sent';
    });
    const client = {
      sendFileByUrl: async () => {
        called.push('real send');
        return {};
      },
      checkAccount: async () => ({ existsWhatsapp: true }),
    } as unknown as InstanceApi;
    const f = flow([
      step({ id: 'plan', uses: 'predict', with: { recipients: ['a', 'b', 'c'] } }),
      step({ id: 'count', uses: 'report', with: { n: '${{ steps.plan.output.wouldSend }}' } }),
      step({ id: 'go', uses: 'send', with: { n: '${{ steps.count.output.n }}' } }),
    ]);
    const t = testEngine(registryWith(predict, report, send), { clientFor: () => client });
    const run = await (await t.engine.start(f, { dryRun: true })).done;
    expect(run.status).toBe('succeeded');
    expect(called).toEqual(['predict dryRun=true', 'report']);
    const steps = await t.engine.getSteps(run.id);
    expect(steps.find((s) => s.step === 'count')?.output).toEqual({ n: 3 });
    expect(steps.find((s) => s.step === 'go')?.output).toEqual({ dryRun: true, input: { n: 3 } });
  });
});

describe('step retry decided by classify()', () => {
  it('never retries a definite error (VALIDATION_FAILED, 4xx)', async () => {
    let calls = 0;
    const bad = action('bad', async () => {
      calls++;
      throw new MsgflowError('VALIDATION_FAILED', { details: "'chatId' is invalid" });
    });
    const t = testEngine(registryWith(bad));
    const run = await (await t.engine.start(flow([step({ id: 'b', uses: 'bad', forEach: [1, 2], retry: retry3 })]))).done;
    expect(calls).toBe(2);
    expect(run).toMatchObject({ status: 'failed', itemsFailed: 2 });
  });

  it('a fatal error stops the step at once (no retry, remaining items not run) and the run fails with its message', async () => {
    const seen: number[] = [];
    const auth = action('auth', async (ctx) => {
      seen.push(ctx.run.item!.index);
      throw new MsgflowError('UNAUTHORIZED', {});
    });
    const after = action('after', async () => 'ran');
    const t = testEngine(registryWith(auth, after));
    const f = flow([step({ id: 'a', uses: 'auth', forEach: [0, 1, 2, 3], retry: retry3 }), step({ id: 'z', uses: 'after' })]);
    const run = await (await t.engine.start(f)).done;
    expect(seen).toEqual([0]);
    expect(run.status).toBe('failed');
    expect(run.error).toMatchObject({ code: 'UNAUTHORIZED', step: 'a', message: 'wrong apiTokenInstance for this instance' });
    const steps = await t.engine.getSteps(run.id);
    expect(steps.map((s) => [s.step, s.status])).toEqual([['a', 'failed']]);
  });

  it('retries a retryable error as the step says', async () => {
    let calls = 0;
    const flaky = action('flaky', async () => {
      if (++calls < 3) throw new MsgflowError('NETWORK_ERROR', { reason: 'ECONNRESET' });
      return 'ok';
    });
    const t = testEngine(registryWith(flaky));
    const run = await (await t.engine.start(flow([step({ id: 'f', uses: 'flaky', retry: retry3 })]))).done;
    expect(run.status).toBe('succeeded');
    expect(calls).toBe(3);
  });
});

describe('one set of counters per step', () => {
  it("a job's ctx.progress counts (done, failed, invalid, skipped, waiting) are its step's, live and at the end; any failed record fails the run unless continueOnError", async () => {
    let live: unknown;
    const job = action('job', async (ctx) => {
      ctx.progress({ done: 3, total: 10, failed: 1, invalid: 2, skipped: 1, waiting: 3 });
      live = (await t.engine.getSteps(ctx.run.id))[0];
      ctx.progress({ done: 6, total: 10, failed: 1, invalid: 2, skipped: 1 });
      return { checked: 6 };
    });
    const t = testEngine(registryWith(job), { progressSaveIntervalMs: 0 });
    const run = await (await t.engine.start(flow([step({ id: 'j', uses: 'job' })]))).done;
    expect(live).toMatchObject({ done: 3, failed: 1, invalid: 2, skipped: 1, waiting: 3, total: 10 });
    expect(run).toMatchObject({ status: 'failed', itemsDone: 6, itemsFailed: 1 });
    expect(run.error?.message).toContain('1 of 10 items failed');
    const [rec] = await t.store.getSteps(run.id);
    expect(rec).toMatchObject({ status: 'failed', done: 6, failed: 1, invalid: 2, skipped: 1, total: 10 });

    const t2 = testEngine(registryWith(job));
    const ok = await (await t2.engine.start(flow([step({ id: 'j', uses: 'job', continueOnError: true })]))).done;
    expect(ok.status).toBe('succeeded');
  });
});
