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
import { createClient } from '../../src/client/client.js';
import type { Transport } from '../../src/client/transport.js';
import { createRegistry } from '../../src/engine/registry/registry.js';
import { registerBuiltins } from '../../src/engine/registry/builtins.js';
import { A, ALICE, BOB, startLocal } from '../support/local-service.js';

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
      journalLagMs: 120_000,
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

/**
 * A writing API call (sendMessage here) takes its intent as it leaves: after
 * the client's rate limiter, just before the transport sends. Worker A's
 * client sends one sendMessage a second on a clock that never moves, so its
 * item waits on the limiter for good: the worker "died" there.
 */
describe('a writing API call takes its intent only as it leaves the client', () => {
  async function methodSetup(aTransport?: (t: Transport) => Transport) {
    const local = await startLocal({ kind: 'in-process' });
    const registry = createRegistry();
    registerBuiltins(registry);
    const f = flow(
      [step({ id: 'send', uses: 'sendMessage', forEach: '${{ inputs.list }}', with: { chatId: '${{ item }}', message: 'hello' } })],
      { name: 'sends' },
    );
    const store = createMemoryStore();
    const host = (client: InstanceApi) =>
      new ItemHost({
        store,
        bus: createBus(),
        clock: local.clock,
        registry,
        logger: silent,
        clientFor: () => client,
        identityFor: (n) => n,
        flows: () => new Map([[f.name, f]]),
        baseDir: local.dir,
        defaultRateLimitWaitMs: 100,
        journalLagMs: 120_000,
      });
    const paced = createClient({
      ...A,
      transport: aTransport ? aTransport(local.transportFor(A)) : local.transportFor(A),
      rateLimits: { sendMessage: 1 },
      clock: local.clock,
      retries: 0,
    });
    await paced.sendMessage({ chatId: BOB, message: 'takes the limiter slot of this second' });
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
    await store.saveInputs('r1', { list: [ALICE] });
    const job: ItemJobData = { runId: 'r1', step: 'send', index: 0, item: ALICE };
    const sends = () => local.requests.filter((r) => r.method === 'sendMessage' && (r.body as { chatId: string }).chatId === ALICE).length;
    return { local, job, sends, a: host(paced), b: host(local.client) };
  }

  it('an item whose worker died while it waited on the rate limiter is sent by the take-over, once', async () => {
    const s = await methodSetup();
    try {
      void s.a.process(s.job, undefined, true); // waits on the limiter for good
      await new Promise((r) => setTimeout(r, 50));
      expect(s.sends()).toBe(0);
      const taken = await s.b.process(s.job, undefined, false);
      expect(taken).toMatchObject({ kind: 'recorded', result: { status: 'succeeded' } });
      expect(s.sends()).toBe(1);
    } finally {
      await s.local.close();
    }
  });

  it('an item whose worker died once its call had reached the service is recorded sent by the take-over (its message found), never sent again', async () => {
    // A's transport hands the request to the service, then the worker "dies" before the answer.
    const s = await methodSetup((t) => ({
      description: t.description,
      request: async (req) => {
        if ((req.body as { chatId?: string } | undefined)?.chatId !== ALICE) return t.request(req);
        await t.request(req);
        return new Promise(() => {});
      },
    }));
    try {
      await s.local.clock.advance(1000); // the limiter lets A's call through
      void s.a.process(s.job, undefined, true);
      await expect.poll(() => s.sends()).toBe(1);
      const taken = await s.b.process(s.job, undefined, false);
      const [sent] = await s.local.client.lastOutgoingMessages({ minutes: 60 });
      expect(sent).toMatchObject({ chatId: ALICE });
      expect(taken).toMatchObject({ kind: 'recorded', result: { status: 'succeeded', output: { idMessage: sent!.idMessage } } });
      expect(s.sends()).toBe(1);
    } finally {
      await s.local.close();
    }
  });

  it('an item whose worker died after taking the intent but before its call reached the service waits for the journal lag, then is sent once', async () => {
    // A takes the intent, then "dies" before its request leaves the process.
    const s = await methodSetup((t) => ({
      description: t.description,
      request: async (req) => ((req.body as { chatId?: string } | undefined)?.chatId === ALICE ? new Promise(() => {}) : t.request(req)),
    }));
    try {
      await s.local.clock.advance(1000);
      void s.a.process(s.job, undefined, true);
      // In neither the send queue nor the history: not yet concluded; the job waits the journal lag.
      await expect.poll(() => s.b.process(s.job, undefined, false)).toEqual({ kind: 'later', ms: 120_000 });
      expect(s.sends()).toBe(0);
      await s.local.clock.advance(60_000);
      expect(await s.b.process(s.job, undefined, false)).toEqual({ kind: 'later', ms: 60_000 });
      await s.local.clock.advance(60_000);
      expect(await s.b.process(s.job, undefined, false)).toMatchObject({ kind: 'recorded', result: { status: 'succeeded' } });
      expect(s.sends()).toBe(1);
      // Recorded: a further take-over re-reads it, sends nothing.
      expect(await s.b.process(s.job, undefined, false)).toMatchObject({ kind: 'recorded', result: { status: 'succeeded' } });
      expect(s.sends()).toBe(1);
    } finally {
      await s.local.close();
    }
  });
});
