import { describe, expect, it } from 'vitest';
import { action, flow, registryWith, step, testEngine } from './helpers.js';

describe('run outcome with failed forEach items', () => {
  const registry = registryWith(
    action('maybe', async (_ctx, input) => {
      if (input.fail) throw new Error('boom');
      return 'ok';
    }),
    action('report', async () => 'reported'),
  );
  const items = [{ fail: false }, { fail: true }, { fail: false }];

  it('later steps still run, but the run ends failed, naming the step and the count', async () => {
    const { engine } = testEngine(registry);
    const f = flow([
      step({ id: 'each', uses: 'maybe', forEach: items, with: { fail: '${{ item.fail }}' } }),
      step({ id: 'notify', uses: 'report', if: '${{ steps.each.failed > 0 }}' }),
    ]);
    const run = await (await engine.start(f)).done;
    expect(run.status).toBe('failed');
    expect(run.error).toMatchObject({ code: 'ACTION_FAILED', step: 'each' });
    expect(run.error!.message).toContain('1 of 3 items failed');
    const steps = await engine.getSteps(run.id);
    expect(steps.map((s) => [s.step, s.status])).toEqual([
      ['each', 'failed'],
      ['notify', 'succeeded'],
    ]);
  });

  it('continueOnError on the step keeps the run succeeded', async () => {
    const { engine } = testEngine(registry);
    const f = flow([step({ id: 'each', uses: 'maybe', forEach: items, with: { fail: '${{ item.fail }}' }, continueOnError: true })]);
    const run = await (await engine.start(f)).done;
    expect(run.status).toBe('succeeded');
    expect(run.itemsFailed).toBe(1);
  });

  it("a job's own progress (ctx.progress) gives the run's item counts, not 1 per step", async () => {
    const job = registryWith(
      action('job', async (ctx) => {
        ctx.progress({ done: 3, total: 7 });
        ctx.progress({ done: 5, failed: 2, total: 7 });
        return { ok: true };
      }),
      action('plain', async () => 'x'),
    );
    const { engine } = testEngine(job);
    const run = await (await engine.start(flow([step({ id: 'j', uses: 'job' }), step({ id: 'p', uses: 'plain' })]))).done;
    // The job's failed records fail the run (exit 1); later steps still ran.
    expect(run).toMatchObject({ status: 'failed', itemsDone: 6, itemsFailed: 2 });
    const [j, p] = await engine.getSteps(run.id);
    expect(j).toMatchObject({ status: 'failed', done: 5, failed: 2, total: 7 });
    expect(p).toMatchObject({ status: 'succeeded', done: 1, failed: 0, total: 1 });
  });
});
