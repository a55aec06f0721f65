import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RateLimitError } from '../../src/api/errors.js';
import { createLowdbStore } from '../../src/store/lowdb-store.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { ManualClock } from '../../src/util/clock.js';
import { action, flow, registryWith, step, testEngine } from './helpers.js';
import { waitFor } from '../support/wait.js';

const T0 = Date.parse('2026-01-05T09:00:00Z');
const HOUR = 3_600_000;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'msgflow-run-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe('runner durability', () => {
  it('a durable wait survives a restart: the new process sleeps only what is left, done items are not redone', async () => {
    const calls: string[] = [];
    const waitOnOne = action('waitOnOne', async (ctx) => {
      const i = ctx.run.item!.index;
      calls.push(`start ${i}`);
      if (i === 1) await ctx.wait({ ms: 2 * HOUR, reason: 'backoff 2h' });
      calls.push(`end ${i}`);
      return i;
    });
    const f = flow([step({ id: 'w', uses: 'waitOnOne', forEach: [0, 1, 2] }), step({ id: 'after', uses: 'waitOnOne', if: 'false' })]);

    // Process 1: runs item 0, then sleeps on item 1. It then "dies": abandoned, never woken.
    const clock1 = new ManualClock(T0);
    const p1 = testEngine(registryWith(waitOnOne), { clock: clock1, store: createLowdbStore({ dir }), progressSaveIntervalMs: 0 });
    const { runId } = await p1.engine.start(f);
    await waitFor('process 1 waiting', () => clock1.pending === 1);
    expect(calls).toEqual(['start 0', 'end 0', 'start 1']);
    const stored = await createLowdbStore({ dir }).getRun(runId);
    expect(stored).toMatchObject({ status: 'waiting', waitingUntil: T0 + 2 * HOUR, waitReason: 'backoff 2h' });
    // Observable from another process while it runs: the step's progress is on disk.
    expect(stored?.itemsDone).toBe(1);
    expect((await createLowdbStore({ dir }).getSteps(runId))[0]).toMatchObject({ step: 'w', status: 'running', total: 3, done: 1 });
    expect(p1.engine.activeRuns()).toEqual([expect.objectContaining({ id: runId, status: 'waiting', itemsDone: 1 })]);

    // Process 1 "dies": its claim on the run is broken as a dead owner's would be.
    const claim = await p1.store.getLease(`run:${runId}`);
    await p1.store.releaseLease(`run:${runId}`, claim!.token);

    // Process 2, one hour later.
    calls.length = 0;
    const clock2 = new ManualClock(T0 + HOUR);
    const p2 = testEngine(registryWith(waitOnOne), { clock: clock2, store: createLowdbStore({ dir }) });
    const [handle] = await p2.engine.resumeUnfinished([f]);
    expect(handle.runId).toBe(runId);
    await waitFor('process 2 waiting', () => clock2.pending === 1);
    expect(calls).toEqual(['start 1']);
    await clock2.advance(HOUR - 1);
    expect(calls).toEqual(['start 1']);
    await clock2.advance(1);
    const run = await handle.done;
    expect(calls).toEqual(['start 1', 'end 1', 'start 2', 'end 2']);
    expect(run).toMatchObject({ status: 'succeeded', itemsDone: 3, resumes: 1 });
    expect(p2.events.map(([n]) => n).slice(0, 2)).toEqual(['run:started', 'run:resumed']);
    expect(p2.events[0][1]).toMatchObject({ trigger: 'resume' });
    expect([...(await p2.store.getItems(runId, 'w')).values()].map((r) => r.output)).toEqual([0, 1, 2]);
    await p2.store.close();
  });

  it('shutdown: in-flight items finish and are recorded or are left for the resume; the run is interrupted, then resumes', async () => {
    const store = createMemoryStore();
    const release = new Map<number, () => void>();
    const calls: number[] = [];
    const gated = action('gated', (ctx) => {
      const i = ctx.run.item!.index;
      calls.push(i);
      return new Promise((resolve, reject) => {
        release.set(i, () => resolve(i));
        // Item 1 stops at the abort (a safe point); item 0 ignores it and completes.
        if (i === 1) ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
      });
    });
    const f = flow([step({ id: 'g', uses: 'gated', forEach: [0, 1, 2, 3], concurrency: 2 })]);
    const p1 = testEngine(registryWith(gated), { store });
    const { runId, done } = await p1.engine.start(f);
    await waitFor('two in flight', () => release.size === 2);
    const stopped = p1.engine.shutdown('SIGTERM');
    await waitFor('shutdown started', () => p1.events.length > 0 && p1.engine.activeRuns()[0] !== undefined);
    release.get(0)!();
    await stopped;
    const run = await done;
    expect(run.status).toBe('interrupted');
    expect(p1.events.find(([n]) => n === 'run:interrupted')?.[1]).toMatchObject({ runId, reason: 'SIGTERM' });
    expect([...(await store.getItems(runId, 'g')).keys()]).toEqual([0]);
    await expect(p1.engine.start(f)).rejects.toMatchObject({ code: 'ENGINE_STOPPED' });

    calls.length = 0;
    release.clear();
    const p2 = testEngine(registryWith(gated), { store });
    const [h] = await p2.engine.resumeUnfinished([f]);
    for (const i of [1, 2, 3]) {
      await waitFor(`item ${i}`, () => release.has(i));
      release.get(i)!();
    }
    expect(await h.done).toMatchObject({ status: 'succeeded', itemsDone: 4 });
    expect(calls.sort()).toEqual([1, 2, 3]);
  });

  it('resumeUnfinished skips runs whose flow is not loaded, and finished runs', async () => {
    const store = createMemoryStore();
    const noop = action('noop', async () => null);
    const p1 = testEngine(registryWith(noop), { store });
    const r = await (await p1.engine.start(flow([step({ id: 'n', uses: 'noop' })]))).done;
    expect(r.status).toBe('succeeded');
    await store.createRun({ ...r, id: 'orphan', flow: 'gone', status: 'running' });
    const p2 = testEngine(registryWith(noop), { store });
    expect(await p2.engine.resumeUnfinished([flow([])])).toEqual([]);
    expect(p2.events.some(([n, p]) => n === 'log' && /flow 'gone' cannot resume/.test(p.message))).toBe(true);
  });
  it('a rate-limit pause persisted before a stop is honoured after the restart before calling the action again', async () => {
    const store = createMemoryStore();
    const calls: number[] = [];
    const limited = action('limited', async () => {
      calls.push(calls.length);
      if (calls.length === 1) throw new RateLimitError('checkAccount', 'checkAccount', 2 * HOUR, 'rate_limit_exceeded');
      return 'ok';
    });
    const f = flow([step({ id: 'check', uses: 'limited' })]);
    const clock1 = new ManualClock(T0);
    const p1 = testEngine(registryWith(limited), { store, clock: clock1 });
    const { done } = await p1.engine.start(f);
    await waitFor('paused', () => clock1.pending === 1);
    await p1.engine.shutdown();
    expect((await done).status).toBe('interrupted');

    const clock2 = new ManualClock(T0 + HOUR);
    const p2 = testEngine(registryWith(limited), { store, clock: clock2 });
    const [h] = await p2.engine.resumeUnfinished([f]);
    await waitFor('paused again', () => clock2.pending === 1);
    expect(calls).toEqual([0]);
    await clock2.advance(HOUR);
    expect(await h.done).toMatchObject({ status: 'succeeded' });
    expect(calls).toEqual([0, 1]);
  });
});
