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
});
