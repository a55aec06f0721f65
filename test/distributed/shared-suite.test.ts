/**
 * One behavioural suite, run against both executors: the local one and
 * BullMQ (items worked by an in-process BullMQ worker over the real Redis
 * server, store and queues under a fresh prefix). The same flows must give
 * the same records.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { InstanceApi } from '../../src/api/types.js';
import { createBus } from '../../src/engine/events.js';
import type { Flow } from '../../src/engine/flow/types.js';
import { localExecutor, type ItemExecutor } from '../../src/engine/run/executor.js';
import { BullmqExecutor } from '../../src/runtime/bullmq/executor.js';
import { ItemHost } from '../../src/runtime/bullmq/item-host.js';
import type { WorkerDeps } from '../../src/runtime/bullmq/run-context.js';
import { StepHost } from '../../src/runtime/bullmq/step-host.js';
import { workQueue, type QueueWorker } from '../../src/runtime/bullmq/workers.js';
import { bullmqConnection } from '../../src/runtime/bullmq/names.js';
import { createStore } from '../../src/store/create.js';
import type { EngineStore } from '../../src/store/types.js';
import { action, flow, registryWith, step, testEngine } from '../engine-run/helpers.js';
import { redisUrl } from '../support/redis.js';
import { redisOrSkip } from './helpers.js';
import { deleteKeys } from '../support/redis.js';

let redis = false;
beforeAll(async () => void (redis = await redisOrSkip()));

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const calls: number[] = [];
const gate = { open: Promise.resolve() as Promise<void> };

const registry = registryWith(
  action(
    'square',
    async (_ctx, input) => {
      calls.push(Number(input.n));
      await gate.open;
      if (input.n === 3) throw new Error('three is not allowed');
      return Number(input.n) ** 2;
    },
    z.object({ n: z.number() }),
  ),
  action(
    'sum',
    async (_ctx, input) => (input.values as number[]).reduce((a, b) => a + (b ?? 0), 0),
    z.object({ values: z.array(z.unknown()) }),
  ),
  // A job (runsOnWorkers, countsRecords): counts its records, waits durably between them, resumes from its own state.
  {
    ...action(
      'countRecords',
      async (ctx, input) => {
        const n = Number(input.n);
        let done = (await ctx.state.get<number>('done')) ?? 0;
        ctx.progress({ done, failed: 0, total: n });
        for (; done < n; done++) {
          await ctx.wait({ ms: 20, reason: 'between two records', key: `record-${done}` });
          await ctx.state.set('done', done + 1);
          ctx.progress({ done: done + 1, failed: 0, total: n });
        }
        return { counted: done, where: ctx.run.step };
      },
      z.object({ n: z.number() }),
    ),
    runsOnWorkers: true,
    countsRecords: true,
  },
  action(
    'pauseBriefly',
    async (ctx, input) => {
      await ctx.wait({ ms: 50, reason: 'a short durable wait' });
      return input.n;
    },
    z.object({ n: z.number() }),
  ),
);

interface Setup {
  executor: ItemExecutor;
  store: EngineStore;
  close(): Promise<void>;
}

type Make = (flows: Flow[]) => Promise<Setup>;

const local: Make = async () => {
  const prefix = `msgflow-test-bullmq-${randomBytes(4).toString('hex')}`;
  const store = createStore({ driver: 'redis', url: redisUrl, prefix: `${prefix}:`, dir: '' }, '/tmp');
  return { executor: localExecutor, store, close: async () => (await store.close(), await deleteKeys(prefix)) };
};

const bullmq: Make = async (flows) => {
  const prefix = `msgflow-test-bullmq-${randomBytes(4).toString('hex')}`;
  const store = createStore({ driver: 'redis', url: redisUrl, prefix: `${prefix}:`, dir: '' }, '/tmp');
  const target = { url: redisUrl, prefix: `${prefix}-bull` };
  const executor = new BullmqExecutor({ target, store, identityFor: (n) => n });
  const deps: WorkerDeps = {
    store,
    bus: createBus(),
    clock: {
      now: () => Date.now(),
      sleep: (ms, signal) =>
        new Promise((r, j) => {
          const t = setTimeout(r, ms);
          signal?.addEventListener('abort', () => (clearTimeout(t), j(signal.reason)));
        }),
    },
    registry,
    logger: silent,
    clientFor: () => ({}) as InstanceApi,
    identityFor: (n) => n,
    flows: () => new Map(flows.map((f) => [f.name, f])),
    baseDir: '/project',
    defaultRateLimitWaitMs: 100,
    journalLagMs: 120_000,
  };
  const host = { items: new ItemHost(deps), steps: new StepHost(deps) };
  const conns: ReturnType<typeof bullmqConnection>[] = [];
  const w: QueueWorker = workQueue(host, 'default', {
    connection: () => (conns.push(bullmqConnection(redisUrl)), conns.at(-1)!),
    prefix: target.prefix,
    concurrency: 4,
    limiter: { max: 1e9, duration: 1000 },
    lockDurationMs: 2000,
    stalledIntervalMs: 1000,
    label: 'test',
    logger: silent,
  });
  return {
    executor,
    store,
    close: async () => {
      await w.close();
      await executor.close();
      for (const c of conns) c.disconnect();
      await store.close();
      await deleteKeys(prefix);
    },
  };
};

let open: Setup[] = [];
afterEach(async () => {
  for (const s of open) await s.close();
  open = [];
  calls.length = 0;
  gate.open = Promise.resolve();
});

async function engineFor(make: Make, flows: Flow[]) {
  const s = await make(flows);
  open.push(s);
  const again = () => testEngine(registry, { store: s.store, executor: s.executor, progressSaveIntervalMs: 50, shutdownGraceMs: 100 });
  return { ...again(), again };
}

const squares = flow(
  [
    step({ id: 'sq', uses: 'square', forEach: '${{ inputs.list }}', concurrency: 4, with: { n: '${{ item }}' } }),
    step({ id: 'total', uses: 'sum', with: { values: '${{ steps.sq.results }}' } }),
  ],
  { name: 'squares', inputs: { list: { default: [1, 2, 3, 4, 5, 6] } as never } },
);

describe.each([
  ['local', local],
  ['bullmq', bullmq],
] as const)('%s executor: the shared behaviour', (_name, make) => {
  it('forEach: results in item order for later steps, a failed item counted and failing the run, each item once', async (t) => {
    if (!redis) return t.skip();
    const { engine, store } = await engineFor(make, [squares]);
    const run = await (await engine.start(squares)).done;
    expect(run.status).toBe('failed');
    expect([run.itemsDone, run.itemsFailed]).toEqual([5 + 1, 1]);
    const steps = await store.getSteps(run.id);
    expect(steps.find((s) => s.step === 'sq')).toMatchObject({ done: 5, failed: 1, total: 6, status: 'failed' });
    expect(steps.find((s) => s.step === 'total')?.output).toBe(1 + 4 + 16 + 25 + 36);
    expect([...calls].sort()).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('per-item if: items for which it is false are skipped and never called', async (t) => {
    if (!redis) return t.skip();
    const f = flow(
      [step({ id: 'sq', uses: 'square', forEach: '${{ inputs.list }}', if: '${{ item % 2 == 0 }}', with: { n: '${{ item }}' } })],
      { name: 'evens', inputs: { list: { default: [1, 2, 4, 5] } as never } },
    );
    const { engine, store } = await engineFor(make, [f]);
    const run = await (await engine.start(f)).done;
    expect(run.status).toBe('succeeded');
    expect((await store.getSteps(run.id))[0]).toMatchObject({ done: 2, skipped: 2 });
    expect([...calls].sort()).toEqual([2, 4]);
  });

  it('durable waits inside items end and the items succeed', async (t) => {
    if (!redis) return t.skip();
    const f = flow([step({ id: 'w', uses: 'pauseBriefly', forEach: '${{ inputs.list }}', concurrency: 3, with: { n: '${{ item }}' } })], {
      name: 'waits',
      inputs: { list: { default: [1, 2, 3] } as never },
    });
    const { engine } = await engineFor(make, [f]);
    const run = await (await engine.start(f)).done;
    expect([run.status, run.itemsDone]).toEqual(['succeeded', 3]);
  });

  it('a run interrupted mid-forEach resumes: no item is redone, each is counted once', async (t) => {
    if (!redis) return t.skip();
    const f = flow([step({ id: 'sq', uses: 'square', forEach: '${{ inputs.list }}', concurrency: 2, with: { n: '${{ item }}' } })], {
      name: 'resumable',
      inputs: { list: { default: [1, 2, 4, 5, 6, 7, 8, 9] } as never },
    });
    const { engine, again } = await engineFor(make, [f]);
    let release!: () => void;
    gate.open = new Promise<void>((r) => (release = r));
    const h = await engine.start(f);
    for (let i = 0; i < 200 && calls.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    await engine.shutdown('test stop');
    // Items in flight finish after the stop (their results are still recorded).
    release();
    expect((await h.done).status).toBe('interrupted');
    const [resumed] = await again().engine.resumeUnfinished([f]);
    const run = await resumed!.done;
    expect([run.status, run.itemsDone, run.itemsFailed]).toEqual(['succeeded', 8, 0]);
    expect([...calls].sort((a, b) => a - b)).toEqual([1, 2, 4, 5, 6, 7, 8, 9]);
  });

  it('a job step: its records counted on the step and the run, its durable waits ended, its output read by the next step', async (t) => {
    if (!redis) return t.skip();
    const f = flow(
      [
        step({ id: 'job', uses: 'countRecords', with: { n: 4 } }),
        step({ id: 'after', uses: 'sum', with: { values: ['${{ steps.job.output.counted }}', 1] } }),
      ],
      { name: 'job' },
    );
    const { engine, store, bus: engineBus } = await engineFor(make, [f]);
    const progress: number[] = [];
    engineBus.on('step:progress', (e) => e.step === 'job' && progress.push(e.done));
    const run = await (await engine.start(f)).done;
    expect([run.status, run.itemsDone]).toEqual(['succeeded', 4 + 1]);
    const steps = await store.getSteps(run.id);
    expect(steps.find((s) => s.step === 'job')).toMatchObject({
      status: 'succeeded',
      done: 4,
      total: 4,
      output: { counted: 4, where: 'job' },
    });
    expect(steps.find((s) => s.step === 'after')?.output).toBe(5);
    // The counts reached the process that drives the run as the job went (the last at least).
    expect(progress.at(-1)).toBe(4);
    // With the bullmq executor the job ran on the worker (its outcome recorded by the step host); `sum` stayed here.
    const recorded = await store.kv(`run-items:${run.id}`).get('job#step');
    expect(recorded !== undefined).toBe(_name === 'bullmq');
    expect(await store.kv(`run-items:${run.id}`).get('after#step')).toBeUndefined();
  });

  it('executor: local keeps a job step in the process that drives the run; executor: workers sends any step to the workers', async (t) => {
    if (!redis) return t.skip();
    const f = flow(
      [
        step({ id: 'here', uses: 'countRecords', executor: 'local', with: { n: 1 } }),
        step({ id: 'there', uses: 'square', executor: 'workers', with: { n: 5 } }),
      ],
      { name: 'placed' },
    );
    const { engine, store } = await engineFor(make, [f]);
    const run = await (await engine.start(f)).done;
    expect(run.status).toBe('succeeded');
    expect((await store.getSteps(run.id)).find((s) => s.step === 'there')?.output).toBe(25);
    const records = store.kv(`run-items:${run.id}`);
    expect(await records.get('here#step')).toBeUndefined();
    expect((await records.get('there#step')) !== undefined).toBe(_name === 'bullmq');
  });

  it('a failing step on the workers fails the run with its error, as in the process that drives the run', async (t) => {
    if (!redis) return t.skip();
    const f = flow([step({ id: 'three', uses: 'square', executor: 'workers', with: { n: 3 } })], { name: 'failing' });
    const { engine, store } = await engineFor(make, [f]);
    const run = await (await engine.start(f)).done;
    expect(run.status).toBe('failed');
    expect(run.error?.message).toContain('three is not allowed');
    expect((await store.getSteps(run.id))[0]).toMatchObject({ status: 'failed', done: 0, failed: 1 });
  });

  it('cancel stops taking items; retry redoes only the failed items', async (t) => {
    if (!redis) return t.skip();
    const { engine, store } = await engineFor(make, [squares]);
    const first = await (await engine.start(squares)).done;
    calls.length = 0;
    const again = await (await engine.retry(first.id, squares)).done;
    expect(calls).toEqual([3]); // only the failed item is redone
    expect((await store.getSteps(again.id)).find((s) => s.step === 'sq')).toMatchObject({ done: 5, failed: 1 });
    let release!: () => void;
    gate.open = new Promise<void>((r) => (release = r));
    const h = await engine.start(squares);
    // The first items are taken (and held); cancel, then let them finish.
    for (let i = 0; i < 100 && calls.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    await engine.cancel(h.runId);
    release();
    const run = await h.done;
    expect(run.status).toBe('cancelled');
  });
});
