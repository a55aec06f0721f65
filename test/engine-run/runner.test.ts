import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { action, flow, registryWith, step, testEngine } from './helpers.js';

const echo = action('echo', async (_ctx, input) => input);
const boom = action('boom', async () => {
  throw new Error('kaput');
});

describe('runner: steps, outputs, expressions', () => {
  it('runs single and forEach steps, exposing outputs to later steps, and emits events in order', async () => {
    const t = testEngine(registryWith(echo));
    const f = flow(
      [
        step({ id: 'greet', uses: 'echo', with: { text: 'hello ${{ inputs.who }}' } }),
        step({ id: 'each', uses: 'echo', forEach: '${{ inputs.list }}', with: { n: '${{ item * 10 }}', i: '${{ index }}' } }),
        step({
          id: 'sum',
          uses: 'echo',
          with: { greet: '${{ steps.greet.output.text }}', done: '${{ steps.each.done }}', second: '${{ steps.each.output[1].n }}' },
        }),
        step({ id: 'never', uses: 'echo', if: '${{ steps.each.failed > 0 }}' }),
      ],
      { inputs: { who: { value: 'world' }, list: { value: [1, 2, 3] } } },
    );
    const { runId, done } = await t.engine.start(f);
    const run = await done;
    expect(run).toMatchObject({ id: runId, status: 'succeeded', itemsDone: 5, itemsFailed: 0, flow: 'test-flow', trigger: 'manual' });
    const steps = await t.engine.getSteps(runId);
    expect(steps.map((s) => [s.step, s.status])).toEqual([
      ['greet', 'succeeded'],
      ['each', 'succeeded'],
      ['sum', 'succeeded'],
      ['never', 'skipped'],
    ]);
    expect(steps[2].output).toEqual({ greet: 'hello world', done: 3, second: 20 });
    const items = await t.store.getItems(runId, 'each');
    expect([...items.values()].map((i) => i.output)).toEqual([
      { n: 10, i: 0 },
      { n: 20, i: 1 },
      { n: 30, i: 2 },
    ]);

    const seq = t.events
      .filter(([n]) => n !== 'log')
      .map(([n, p]) => `${n}${p.step ? `:${p.step}` : ''}${p.index !== undefined ? `#${p.index}` : ''}`);
    expect(seq).toEqual([
      'run:started',
      'step:started:greet',
      'step:finished:greet',
      'step:started:each',
      'item:finished:each#0',
      'item:finished:each#1',
      'item:finished:each#2',
      'step:finished:each',
      'step:started:sum',
      'step:finished:sum',
      'step:finished:never',
      'run:finished',
    ]);
    expect(t.events.find(([n]) => n === 'run:finished')?.[1]).toMatchObject({ runId, itemsDone: 5, itemsFailed: 0 });
    expect((await t.engine.listRuns({ flow: 'test-flow' }))[0].id).toBe(runId);
  });

  it('records failed forEach items and goes on; a failing single step fails the run with ACTION_FAILED', async () => {
    const flaky = action('flaky', async (_ctx, input) => {
      if (input.n === 2) throw new Error('two is bad');
      return input.n;
    });
    const t = testEngine(registryWith(flaky, boom, echo));
    const f = flow([
      step({ id: 'each', uses: 'flaky', forEach: [1, 2, 3], with: { n: '${{ item }}' } }),
      step({ id: 'report', uses: 'echo', if: '${{ steps.each.failed > 0 }}', with: { failed: '${{ steps.each.failed }}' } }),
      step({ id: 'explode', uses: 'boom' }),
      step({ id: 'after', uses: 'echo' }),
    ]);
    const { runId, done } = await t.engine.start(f);
    const run = await done;
    expect(run.status).toBe('failed');
    expect(run.error).toMatchObject({ code: 'ACTION_FAILED', step: 'explode', message: "step 'explode' (boom) failed: kaput" });
    expect(run.itemsDone).toBe(3); // 2 items + report
    expect(run.itemsFailed).toBe(2); // 1 item + explode
    const steps = await t.engine.getSteps(runId);
    expect(steps.map((s) => [s.step, s.status])).toEqual([
      ['each', 'failed'],
      ['report', 'succeeded'],
      ['explode', 'failed'],
    ]);
    expect(steps[1].output).toEqual({ failed: 1 });
    expect((await t.store.getItems(runId, 'each')).get(1)).toMatchObject({ status: 'failed', error: { message: 'two is bad', item: 1 } });
    expect(t.events.find(([n]) => n === 'run:failed')?.[1]).toMatchObject({ runId, step: 'explode', code: 'ACTION_FAILED' });
  });

  it('continueOnError lets the run go on past a failed step', async () => {
    const t = testEngine(registryWith(boom, echo));
    const f = flow([
      step({ id: 'explode', uses: 'boom', continueOnError: true }),
      step({ id: 'after', uses: 'echo', with: { s: '${{ steps.explode.status }}' } }),
    ]);
    const run = await (await t.engine.start(f)).done;
    expect(run.status).toBe('succeeded');
    expect((await t.engine.getSteps(run.id))[1].output).toEqual({ s: 'failed' });
  });

  it('validates with against the action schema after templates: the error names step, item and field', async () => {
    const strict = action('strict', async (_ctx, input) => input, z.strictObject({ phoneNumber: z.string().regex(/^\d+$/) }));
    const t = testEngine(registryWith(strict));
    const f = flow([step({ id: 'check', uses: 'strict', forEach: [{ p: '123' }, { p: 'abc' }], with: { phoneNumber: '${{ item.p }}' } })]);
    const run = await (await t.engine.start(f)).done;
    const item = (await t.store.getItems(run.id, 'check')).get(1);
    expect(item?.status).toBe('failed');
    expect(item?.error).toMatchObject({ code: 'STEP_INPUT_INVALID', item: 1, field: 'with.phoneNumber' });
    expect(item?.error?.message).toMatch(/^step 'check' item 1: with\.phoneNumber: /);
    expect(item?.attempts).toBe(0);
  });

  it('fails the run with a positioned error when forEach is not an array, and on an unknown action', async () => {
    const t = testEngine(registryWith(echo));
    const r1 = await (
      await t.engine.start(flow([step({ id: 'each', uses: 'echo', forEach: '${{ inputs.x }}' })], { inputs: { x: { value: { a: 1 } } } }))
    ).done;
    expect(r1.error).toMatchObject({
      code: 'FLOW_INVALID',
      message: 'flows/test.yaml:1:1 steps.each.forEach: expected an array, got object',
    });
    const r2 = await (await t.engine.start(flow([step({ id: 's', uses: 'ecko' })]))).done;
    expect(r2.error?.message).toBe("flows/test.yaml:1:1 steps.s.uses: unknown action 'ecko' (did you mean 'echo'?)");
  });

  it('dry run validates inputs per item and calls no action', async () => {
    let calls = 0;
    const counted = action('counted', async () => ++calls, z.strictObject({ n: z.number() }));
    const t = testEngine(registryWith(counted));
    const f = flow([step({ id: 'each', uses: 'counted', forEach: [1, 'x'], with: { n: '${{ item }}' } })]);
    const run = await (await t.engine.start(f, { dryRun: true })).done;
    expect(calls).toBe(0);
    expect(run).toMatchObject({ dryRun: true, itemsDone: 1, itemsFailed: 1 });
    const items = await t.store.getItems(run.id, 'each');
    expect(items.get(0)?.output).toEqual({ dryRun: true, input: { n: 1 } });
    expect(items.get(1)?.error?.field).toBe('with.n');
  });

  it('gives actions their context: run info, per-item durable state, shared state, events, paths', async () => {
    const seen: unknown[] = [];
    const ctxAction = action('ctx', async (ctx) => {
      const prev = (await ctx.state.get<number>('visits')) ?? 0;
      await ctx.state.set('visits', prev + 1);
      await ctx.shared('counter').set('last', ctx.run.item?.index);
      ctx.emit('seen', { i: ctx.run.item?.index });
      ctx.progress({ done: 1, total: 2 });
      seen.push({ run: ctx.run, path: ctx.resolvePath('data/x.csv'), instance: ctx.instanceName, aborted: ctx.signal.aborted });
      return null;
    });
    const t = testEngine(registryWith(ctxAction));
    const f = flow([step({ id: 's', uses: 'ctx', forEach: ['a', 'b'] })], { inputs: { k: { value: 1 } } });
    const run = await (await t.engine.start(f)).done;
    expect(seen[1]).toEqual({
      run: { id: run.id, flow: 'test-flow', step: 's', attempt: 1, item: { index: 1, value: 'b' }, dryRun: false, inputs: { k: 1 } },
      path: '/project/data/x.csv',
      instance: 'default',
      aborted: false,
    });
    expect(await t.store.kv(`run:${run.id}`).entries()).toEqual([
      ['s/0/visits', 1],
      ['s/1/visits', 1],
    ]);
    expect(await t.store.kv('shared:counter').get('last')).toBe(1);
    expect(t.events.filter(([n]) => n === 'action:event').map(([, p]) => p.payload)).toEqual([{ i: 0 }, { i: 1 }]);
    expect(t.events.some(([n, p]) => n === 'step:progress' && p.total === 2)).toBe(true);
  });
});
