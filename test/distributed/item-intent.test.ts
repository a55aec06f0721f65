/**
 * A writing call is made at most once per item, even when two workers hold the
 * same BullMQ job: one starved past its lock while the job was taken over
 * elsewhere. The intent of the call is an exclusive claim in the store, so
 * only one of them calls, whichever order they reach it in.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { InstanceApi } from '../../src/api/types.js';
import { defineAction } from '../../src/engine/action.js';
import { createBus } from '../../src/engine/events.js';
import { ItemHost, type ItemJobData } from '../../src/runtime/bullmq/item-host.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { EngineStore } from '../../src/store/types.js';
import { systemClock } from '../../src/util/clock.js';
import { flow, registryWith, step } from '../engine-run/helpers.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

function setup() {
  const calls: number[] = [];
  let release: () => void = () => {};
  const gate = { open: Promise.resolve() as Promise<void> };
  const hold = () => (gate.open = new Promise<void>((r) => (release = r)));
  const send = defineAction({
    name: 'send',
    description: 'a writing call',
    input: z.object({ n: z.number() }),
    output: { description: 'the number' },
    writes: true,
    run: async (_ctx, input) => {
      calls.push(input.n);
      await gate.open;
      return input.n;
    },
  });
  const registry = registryWith(send);
  const f = flow([step({ id: 'send', uses: 'send', forEach: '${{ inputs.list }}', with: { n: '${{ item }}' } })], {
    name: 'sends',
  });
  const store = createMemoryStore();
  const host = () =>
    new ItemHost({
      store,
      bus: createBus(),
      clock: systemClock,
      registry,
      logger: silent,
      clientFor: () => ({}) as InstanceApi,
      identityFor: (n) => n,
      flows: () => new Map([[f.name, f]]),
      baseDir: '/project',
      defaultRateLimitWaitMs: 100,
    });
  return { calls, hold, release: () => release(), store, a: host(), b: host() };
}

async function startRun(store: EngineStore): Promise<ItemJobData> {
  const now = Date.now();
  await store.createRun({
    id: 'r1',
    flow: 'sends',
    status: 'running',
    trigger: 'manual',
    dryRun: false,
    startedAt: now,
    updatedAt: now,
    itemsDone: 0,
    itemsFailed: 0,
    resumes: 0,
  });
  await store.saveInputs('r1', { list: [7] });
  return { runId: 'r1', step: 'send', index: 0, item: 7 };
}

describe('a writing item held by two workers is called once', () => {
  it('the starved first holder wakes after the take-over recorded the item: it finds the result and does not call', async () => {
    const s = setup();
    const job = await startRun(s.store);
    const taken = await s.b.process(job, undefined, false);
    expect(taken).toMatchObject({ kind: 'recorded', result: { status: 'succeeded', output: 7 } });
    const late = await s.a.process(job, undefined, true);
    expect(late).toMatchObject({ kind: 'recorded', result: { status: 'succeeded', output: 7 } });
    expect(s.calls).toEqual([7]);
  });

  it('the starved first holder wakes while the take-over is calling: it leaves the item and does not call', async () => {
    const s = setup();
    const job = await startRun(s.store);
    s.hold();
    const taken = s.b.process(job, undefined, false);
    await expect.poll(() => s.calls.length).toBe(1);
    await expect(s.a.process(job, undefined, true)).rejects.toMatchObject({ code: 'ITEM_TAKEN_OVER' });
    s.release();
    expect(await taken).toMatchObject({ kind: 'recorded', result: { status: 'succeeded' } });
    expect(s.calls).toEqual([7]);
  });

  it('a take-over that finds the intent of a worker that stopped during the call records the outcome unknown, without calling', async () => {
    const s = setup();
    const job = await startRun(s.store);
    s.hold();
    void s.a.process(job, undefined, true); // never finishes: its worker "died" in the call
    await expect.poll(() => s.calls.length).toBe(1);
    const taken = await s.b.process(job, undefined, false);
    expect(taken).toMatchObject({ kind: 'recorded', result: { status: 'failed', error: { code: 'ITEM_OUTCOME_UNKNOWN' } } });
    expect(s.calls).toEqual([7]);
    // The item is settled: a further take-over re-reads the record.
    expect(await s.b.process(job, undefined, false)).toMatchObject({ kind: 'recorded', result: { status: 'failed' } });
    expect(s.calls).toEqual([7]);
  });
});
