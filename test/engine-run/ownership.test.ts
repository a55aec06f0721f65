/**
 * One live owner per run, across processes and hosts, through leases in
 * the store. Two engines in this process stand for two hosts (hostId), each
 * with its own store client on the same backend (lowdb directory, Redis
 * prefix), so their claims race through the store as two machines' would.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { redisReachable, redisUrl } from '../support/redis.js';
import type { InstanceApi } from '../../src/api/types.js';
import { MsgflowError } from '../../src/api/errors.js';
import { LeaseOwner } from '../../src/engine/run/ownership.js';
import { createLowdbStore } from '../../src/store/lowdb-store.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { createRedisStore } from '../../src/store/redis-store.js';
import type { EngineStore, RunRecord } from '../../src/store/types.js';
import { action, flow, registryWith, step, testEngine } from './helpers.js';
import { waitFor } from '../support/wait.js';

const redisUp = await redisReachable();

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups) await c();
});

/** Two clients of one backend: what two hosts sharing a store see. */
type Backend = () => Promise<{ a: EngineStore; b: EngineStore }>;

const backends: Record<string, Backend> = {
  memory: async () => {
    const s = createMemoryStore();
    return { a: s, b: s };
  },
  lowdb: async () => {
    const dir = await mkdtemp(join(tmpdir(), 'msgflow-own-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    return { a: createLowdbStore({ dir }), b: createLowdbStore({ dir }) };
  },
};
if (redisUp) {
  backends.redis = async () => {
    const prefix = `msgflow-test:${randomBytes(6).toString('hex')}:`;
    const a = createRedisStore({ url: redisUrl, prefix });
    const b = createRedisStore({ url: redisUrl, prefix });
    cleanups.push(async () => {
      const r = new Redis(redisUrl);
      const keys = await r.keys(`${prefix}*`);
      if (keys.length) await r.del(...keys);
      r.disconnect();
      await a.close();
      await b.close();
    });
    return { a, b };
  };
}

/** A client whose only writing method counts sends per recipient (the side effect that must happen once). */
function countingClient(sends: Map<number, number>): InstanceApi {
  return {
    sendFileByUrl: async (req: { chatId: string }) => {
      const i = Number(req.chatId);
      sends.set(i, (sends.get(i) ?? 0) + 1);
      return { idMessage: `m${i}` };
    },
  } as unknown as InstanceApi;
}

const sendAction = {
  ...action('send', async (ctx) => {
    const i = ctx.run.item!.index;
    return ctx.client.sendFileByUrl({ chatId: String(i), urlFile: 'http://x/f', fileName: 'f' } as never);
  }),
  writes: true,
};
const sendFlow = (n: number) => flow([step({ id: 'send', uses: 'send', forEach: Array.from({ length: n }, (_, i) => i), concurrency: 3 })]);

function orphan(id: string, over: Partial<RunRecord> = {}): RunRecord {
  return {
    id,
    flow: 'test-flow',
    status: 'running',
    trigger: 'manual',
    dryRun: false,
    startedAt: 1,
    updatedAt: 1,
    itemsDone: 0,
    itemsFailed: 0,
    resumes: 0,
    ...over,
  };
}

describe.each(Object.keys(backends))('run ownership (%s store)', (driver) => {
  it('two hosts racing to resume one orphaned run: exactly one runs it, 0 duplicates over 20 trials', async () => {
    let duplicates = 0;
    let resumedBoth = 0;
    for (let trial = 0; trial < 20; trial++) {
      const { a, b } = await backends[driver]!();
      const id = `orphan-${trial}`;
      await a.createRun(orphan(id, { owner: { pid: 999_999, host: 'host-gone' } }));
      await a.saveInputs(id, {});
      const sends = new Map<number, number>();
      const hostA = testEngine(registryWith(sendAction), { store: a, hostId: 'host-a', clientFor: () => countingClient(sends) });
      const hostB = testEngine(registryWith(sendAction), { store: b, hostId: 'host-b', clientFor: () => countingClient(sends) });
      const f = sendFlow(5);
      const [ha, hb] = await Promise.all([hostA.engine.resumeUnfinished([f]), hostB.engine.resumeUnfinished([f])]);
      if (ha.length + hb.length !== 1) resumedBoth++;
      await Promise.all([...ha, ...hb].map((h) => h.done));
      duplicates += [...sends.values()].filter((n) => n > 1).length;
      expect(sends.size).toBe(5);
    }
    expect({ duplicates, resumedBoth }).toEqual({ duplicates: 0, resumedBoth: 0 });
  });

  it('two runs of one writing flow started at once on two hosts: one starts, the other gets RUN_LIVE; 0 duplicates over 20 trials', async () => {
    let wrong = 0;
    let duplicates = 0;
    for (let trial = 0; trial < 20; trial++) {
      const { a, b } = await backends[driver]!();
      const sends = new Map<number, number>();
      const hostA = testEngine(registryWith(sendAction), { store: a, hostId: 'host-a', clientFor: () => countingClient(sends) });
      const hostB = testEngine(registryWith(sendAction), { store: b, hostId: 'host-b', clientFor: () => countingClient(sends) });
      const f = { ...sendFlow(4), name: `bcast-${trial}` };
      const results = await Promise.allSettled([hostA.engine.start(f), hostB.engine.start(f)]);
      const started = results.filter((r) => r.status === 'fulfilled');
      const refused = results.filter((r) => r.status === 'rejected' && (r.reason as { code?: string }).code === 'RUN_LIVE');
      if (started.length !== 1 || refused.length !== 1) wrong++;
      await Promise.all(started.map((r) => (r as PromiseFulfilledResult<{ done: Promise<unknown> }>).value.done));
      duplicates += [...sends.values()].filter((n) => n > 1).length;
    }
    expect({ wrong, duplicates }).toEqual({ wrong: 0, duplicates: 0 });
  });

  it('leases: one of two racing claimers wins, over 20 trials', async () => {
    const { a, b } = await backends[driver]!();
    let wrong = 0;
    for (let trial = 0; trial < 20; trial++) {
      const oa = new LeaseOwner({ store: a, hostId: 'host-a', ttlMs: 10_000 });
      const ob = new LeaseOwner({ store: b, hostId: 'host-b', ttlMs: 10_000 });
      const [ra, rb] = await Promise.all([oa.claim(`race-${trial}`), ob.claim(`race-${trial}`)]);
      if (Number(ra.ok) + Number(rb.ok) !== 1) wrong++;
    }
    expect(wrong).toBe(0);
  });
});

describe('a lease owner checking its claims before writes', () => {
  it('checks asked while a reading of the claims is under way share it; a later check reads again and sees a takeover', async () => {
    const store = createMemoryStore();
    let reads = 0;
    const counting = Object.assign(Object.create(store) as EngineStore, {
      getLease: (name: string) => {
        reads++;
        return store.getLease(name);
      },
    });
    const owner = new LeaseOwner({ store: counting, hostId: 'host-a', ttlMs: 10_000 });
    expect((await owner.claim('run:shared')).ok).toBe(true);
    await Promise.all(Array.from({ length: 16 }, () => owner.check()));
    expect(reads).toBe(1);
    await owner.check();
    expect(reads).toBe(2);
    // Another holder now (as after a lapse): the next check reads it and refuses.
    await store.releaseLease('run:shared', owner.token);
    await store.acquireLease('run:shared', {
      token: 'other',
      pid: 1,
      host: 'host-b',
      acquiredAt: Date.now(),
      expiresAt: Date.now() + 10_000,
    });
    await expect(Promise.all([owner.check(), owner.check()])).rejects.toMatchObject({ code: 'RUN_OWNERSHIP_LOST' });
    expect(reads).toBe(3);
  });
});

// Real time against the lease TTL: the three stores wait side by side (each
// has its own store, engines and counters), not one after another.
describe('run ownership: a heartbeat keeps a claim, a lapse frees it', () => {
  it.concurrent.for(Object.keys(backends))(
    'a run live on another host is never resumed nor started again; once its heartbeat lapses it is resumed (%s store)',
    async (driver, { expect }) => {
      const { a, b } = await backends[driver]!();
      const sends = new Map<number, number>();
      let hold!: () => void;
      const held = new Promise<void>((r) => (hold = r));
      let healthy = true;
      // Host A's view of the store: "unplugged" later, as a host that loses power.
      const partitioned = new Proxy(a, {
        get(t, p, r) {
          const v = Reflect.get(t, p, r) as unknown;
          // kv() and readJournal() answer synchronously (an object, an iterator): left as they are.
          if (typeof v !== 'function' || p === 'kv' || p === 'readJournal') return v;
          return (...args: unknown[]) => {
            if (!healthy) return Promise.reject(new MsgflowError('STORE_UNAVAILABLE', { driver, reason: 'unplugged' }));
            return (v as (...x: unknown[]) => unknown).apply(t, args);
          };
        },
      });
      const blocking = {
        ...action('send', async (ctx) => {
          const i = ctx.run.item!.index;
          if (i === 2) await held;
          return ctx.client.sendFileByUrl({ chatId: String(i), urlFile: 'http://x/f', fileName: 'f' } as never);
        }),
        writes: true,
      };
      // 1 s: short for the test, long enough that a loaded machine's late heartbeat does not lapse it.
      const hostA = testEngine(registryWith(blocking), {
        store: partitioned,
        hostId: 'host-a',
        leaseTtlMs: 1000,
        clientFor: () => countingClient(sends),
      });
      const hostB = testEngine(registryWith(sendAction), {
        store: b,
        hostId: 'host-b',
        leaseTtlMs: 1000,
        clientFor: () => countingClient(sends),
      });
      const f = flow([step({ id: 'send', uses: 'send', forEach: [0, 1, 2, 3, 4] })]);
      const { runId, done } = await hostA.engine.start(f);
      const first = (await b.getLease(`run:${runId}`))!;
      await waitFor('host A sent 0 and 1', () => sends.size === 2);
      // Past the expiry of host A's first claim: only its heartbeat keeps it.
      await new Promise((r) => setTimeout(r, Math.max(0, first.expiresAt + 100 - Date.now())));
      expect((await b.getLease(`run:${runId}`))?.expiresAt).toBeGreaterThan(first.expiresAt);
      expect(await hostB.engine.resumeUnfinished([f])).toEqual([]);
      await expect(hostB.engine.start(f)).rejects.toMatchObject({ code: 'RUN_LIVE' });
      expect((await hostB.engine.listRuns()).find((r) => r.id === runId)?.status).toBe('running');

      healthy = false; // host A is cut off: its heartbeat stops reaching the store
      hold();
      await done; // host A's in-flight item cannot send: its ownership check fails first
      const resumed = await waitFor(
        "host B to resume the run once host A's lease lapsed",
        async () => {
          const r = await hostB.engine.resumeUnfinished([f]);
          return r.length > 0 ? r : undefined;
        },
        { timeoutMs: 5000 },
      );
      expect(resumed.map((h) => h.runId)).toEqual([runId]);
      expect(await resumed[0]!.done).toMatchObject({ status: 'succeeded', itemsDone: 5 });
      expect([...sends.values()]).toEqual([1, 1, 1, 1, 1]);
    },
  );

  it.concurrent.for(Object.keys(backends))(
    'leases: a lapsed lease is taken over; renew fails once lost (%s store)',
    async (driver, { expect }) => {
      const { a, b } = await backends[driver]!();
      // 1 s, as above: a claim must not lapse between two calls on a loaded machine (50 ms did).
      const short = new LeaseOwner({ store: a, hostId: 'host-a', ttlMs: 1000 });
      expect((await short.claim('lapse')).ok).toBe(true);
      const other = new LeaseOwner({ store: b, hostId: 'host-b', ttlMs: 10_000 });
      expect((await other.claim('lapse')).ok).toBe(false);
      // Nothing renews it (no heartbeat): past its expiry it has lapsed.
      const held = (await b.getLease('lapse'))!;
      await new Promise((r) => setTimeout(r, Math.max(0, held.expiresAt + 20 - Date.now())));
      expect((await other.claim('lapse')).ok).toBe(true);
      await expect(short.check()).rejects.toMatchObject({ code: 'RUN_OWNERSHIP_LOST' });
      expect(await a.renewLease('lapse', short.token, Date.now() + 1000)).toBe(false);
    },
  );
});

describe('a run that crashed its process N times', () => {
  it('is marked failed with "crashed the process 3 times (last: …)" instead of being resumed again; crashes are counted before resuming', async () => {
    const store = createMemoryStore();
    const ran: string[] = [];
    const noop = action('noop', async (ctx) => void ran.push(ctx.run.id));
    const f = flow([step({ id: 'a', uses: 'noop' })]);
    await store.createRun(orphan('twice', { crashes: 2, currentStep: 'a', owner: { pid: 4242, host: 'h1' } }));
    await store.createRun(orphan('once', { crashes: 0 }));
    await store.createRun(orphan('stopped', { status: 'interrupted', crashes: 2 }));
    for (const id of ['twice', 'once', 'stopped']) await store.saveInputs(id, {});
    const { engine } = testEngine(registryWith(noop), { store });
    const handles = await engine.resumeUnfinished([f]);
    await Promise.all(handles.map((h) => h.done));
    expect(ran.sort()).toEqual(['once', 'stopped']);
    const failed = (await store.getRun('twice'))!;
    expect(failed.status).toBe('failed');
    expect(failed.error?.message).toMatch(/^crashed the process 3 times \(last: pid 4242 on host h1 died during step a at /);
    expect((await store.getRun('once'))!.crashes).toBe(1);
    // A graceful stop (interrupted) is not a crash.
    expect((await store.getRun('stopped'))!.crashes).toBe(2);
  });
});

describe('a store outage', () => {
  it('leaves the run interrupted (resumable), never failed, with one log line; it resumes without redoing recorded items', async () => {
    const base = createMemoryStore();
    let down = false;
    const flaky = new Proxy(base, {
      get(t, p, r) {
        const v = Reflect.get(t, p, r) as unknown;
        if (typeof v !== 'function' || p === 'close' || p === 'kv' || p === 'readJournal') return v;
        return (...args: unknown[]) => {
          if (down) return Promise.reject(new MsgflowError('STORE_UNAVAILABLE', { driver: 'redis', reason: 'connection refused' }));
          return (v as (...x: unknown[]) => unknown).apply(t, args);
        };
      },
    });
    const sends = new Map<number, number>();
    const outage = action('send', async (ctx) => {
      const i = ctx.run.item!.index;
      if (i === 3) down = true;
      return ctx.client.sendFileByUrl({ chatId: String(i), urlFile: 'http://x/f', fileName: 'f' } as never);
    });
    const f = sendFlow(6);
    const f1 = flow([step({ id: 'send', uses: 'send', forEach: [0, 1, 2, 3, 4, 5] })]);
    const p1 = testEngine(registryWith(outage), { store: flaky, clientFor: () => countingClient(sends) });
    const { runId, done } = await p1.engine.start(f1);
    const run = await done;
    expect(run.status).toBe('interrupted');
    const logs = p1.events.filter(([n, e]) => n === 'log' && e.level === 'error');
    expect(logs).toHaveLength(1);
    expect(logs[0]![1].message).toMatch(/interrupted: the redis store is unavailable: connection refused; it resumes/);
    expect((await base.getRun(runId))!.status).not.toBe('failed');

    down = false;
    await base.releaseLease(`run:${runId}`, (await base.getLease(`run:${runId}`))?.token ?? '');
    const p2 = testEngine(registryWith(sendAction), { store: base, clientFor: () => countingClient(sends) });
    const [h] = await p2.engine.resumeUnfinished([f]);
    expect(await h!.done).toMatchObject({ status: 'succeeded', itemsDone: 6 });
    expect([...sends.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect([...sends.values()].filter((n) => n > 1)).toEqual([]);
  });
});

describe('runs cancel through the store', () => {
  it('a run executing on another host stops at its next item boundary and ends cancelled, its state kept', async () => {
    const store = createMemoryStore();
    const sends = new Map<number, number>();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let inFlight: AbortSignal | undefined;
    const slow = {
      ...action('send', async (ctx) => {
        const i = ctx.run.item!.index;
        if (i === 1) {
          inFlight = ctx.signal;
          await gate;
        }
        return ctx.client.sendFileByUrl({ chatId: String(i), urlFile: 'http://x/f', fileName: 'f' } as never);
      }),
      writes: true,
    };
    // The owner polls for cancel requests at each heartbeat (every ttl/3: 200 ms); 600 ms
    // does not lapse between two beats of a loaded machine, so the cancel meets a live owner.
    const owner = testEngine(registryWith(slow), { store, hostId: 'host-a', leaseTtlMs: 600, clientFor: () => countingClient(sends) });
    const other = testEngine(registryWith(slow), { store, hostId: 'host-b', leaseTtlMs: 600 });
    const { runId, done } = await owner.engine.start(flow([step({ id: 'send', uses: 'send', forEach: [0, 1, 2, 3] })]));
    await waitFor('item 0 sent', () => sends.size === 1);
    const res = await other.engine.cancel(runId);
    expect(res).toMatchObject({ pending: true, holder: { host: 'host-a' } });
    // The owner sees the request at its next heartbeat (it aborts the run); the in-flight item finishes and is recorded.
    await waitFor('the owner to see the cancel request', () => inFlight?.aborted);
    release();
    const run = await done;
    expect(run).toMatchObject({ status: 'cancelled', cancelRequested: true });
    expect([...sends.keys()]).toEqual([0, 1]);
    expect([...(await store.getItems(runId, 'send')).keys()].sort()).toEqual([0, 1]);
    // A cancelled run is not resumed.
    expect(await other.engine.resumeUnfinished([flow([step({ id: 'send', uses: 'send', forEach: [0, 1, 2, 3] })])])).toEqual([]);
  });

  it('a run that is not executing becomes cancelled at once', async () => {
    const store = createMemoryStore();
    await store.createRun(orphan('idle', { status: 'interrupted' }));
    const { engine } = testEngine(registryWith(sendAction), { store });
    expect(await engine.cancel('idle')).toMatchObject({ pending: false, run: { status: 'cancelled' } });
  });
});

describe('runs retry', () => {
  it('a new run redoes only the failed items of a finished run; what succeeded is carried over', async () => {
    const store = createMemoryStore();
    const calls: number[] = [];
    let firstPass = true;
    const flaky = action('flaky', async (ctx) => {
      const i = ctx.run.item!.index;
      calls.push(i);
      if (firstPass && (i === 1 || i === 3)) throw new Error(`item ${i} failed`);
      return i * 10;
    });
    const sum = action('sum', async (_ctx, input) => input);
    const f = flow([
      step({ id: 'each', uses: 'flaky', forEach: [0, 1, 2, 3, 4] }),
      step({ id: 'total', uses: 'sum', with: { out: '${{ steps.each.output }}' } }),
    ]);
    const t = testEngine(registryWith(flaky, sum), { store });
    const first = await (await t.engine.start(f)).done;
    expect(first).toMatchObject({ status: 'failed', itemsFailed: 2 });
    firstPass = false;
    calls.length = 0;
    const h = await t.engine.retry(first.id, f);
    const second = await h.done;
    expect(calls.sort()).toEqual([1, 3]);
    expect(second).toMatchObject({ status: 'succeeded', retryOf: first.id, itemsDone: 6 });
    const steps = await t.engine.getSteps(second.id);
    expect(steps.find((s) => s.step === 'each')).toMatchObject({ done: 5, failed: 0 });
    // The single step after the forEach had succeeded: it is carried over, not redone.
    expect(steps.find((s) => s.step === 'total')?.status).toBe('succeeded');
  });
});

describe('whether a lease holder is dead', () => {
  it('lapsed whatever its host; on this host when its pid is gone or reused (other start time); alive on another host until it lapses', async () => {
    const { holderDead, procStat } = await import('../../src/engine/run/ownership.js');
    const now = Date.now();
    const me = procStat(process.pid)?.start;
    const base = { token: 't', acquiredAt: now, expiresAt: now + 60_000 };
    expect(holderDead({ ...base, pid: process.pid, host: 'h', procStart: me }, 'h', now)).toBe(false);
    expect(holderDead({ ...base, pid: process.pid, host: 'other', expiresAt: now - 1 }, 'h', now)).toBe(true);
    expect(holderDead({ ...base, pid: 999_999_9, host: 'other' }, 'h', now)).toBe(false);
    expect(holderDead({ ...base, pid: 999_999_9, host: 'h' }, 'h', now)).toBe(true);
    if (me !== undefined) {
      // The parent process is alive, but the claim names another start time: the pid was reused.
      expect(holderDead({ ...base, pid: process.ppid, host: 'h', procStart: '1' }, 'h', now)).toBe(true);
      expect(holderDead({ ...base, pid: process.ppid, host: 'h', procStart: procStat(process.ppid)?.start }, 'h', now)).toBe(false);
      expect(holderDead({ ...base, pid: process.pid, host: 'h', procStart: '1' }, 'h', now)).toBe(true);
    }
  });
});

describe('flow concurrency', () => {
  it('concurrency: { group, max } bounds live runs of every flow in the group; a read-only flow is unlimited by default', async () => {
    const store = createMemoryStore();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const held = { ...action('held', async () => gate), writes: true };
    const read = action('read', async () => gate);
    const t = testEngine(registryWith(held, read), { store });
    const a = flow([step({ id: 's', uses: 'held' })], { name: 'a', concurrency: { group: 'outbox', max: 2 } });
    const b = flow([step({ id: 's', uses: 'held' })], { name: 'b', concurrency: { group: 'outbox', max: 2 } });
    const r1 = await t.engine.start(a);
    const r2 = await t.engine.start(b);
    await expect(t.engine.start(a)).rejects.toMatchObject({
      code: 'RUN_LIVE',
      message: expect.stringContaining("concurrency group 'outbox'"),
    });
    const ro = flow([step({ id: 's', uses: 'read' })], { name: 'ro' });
    const reads = await Promise.all([t.engine.start(ro), t.engine.start(ro), t.engine.start(ro)]);
    release();
    await Promise.all([r1.done, r2.done, ...reads.map((h) => h.done)]);
    // Slots are freed when runs end.
    expect((await (await t.engine.start(a)).done).status).toBe('succeeded');
  });
});

describe('concurrency in a flow file', () => {
  it('concurrency: { group, max } is read from YAML', async () => {
    const { writeFileSync } = await import('node:fs');
    const { loadFlowFile } = await import('../../src/engine/flow/load.js');
    const { createRegistry } = await import('../../src/engine/registry/registry.js');
    const { registerBuiltins } = await import('../../src/engine/registry/builtins.js');
    const dir = await mkdtemp(join(tmpdir(), 'msgflow-conc-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'b.yaml');
    writeFileSync(file, 'name: b\nconcurrency: { group: outbox, max: 2 }\nsteps:\n  - id: s\n    uses: log\n    with: { message: hi }\n');
    const registry = createRegistry();
    registerBuiltins(registry);
    expect(loadFlowFile(file, { registry, baseDir: dir, instances: ['default'] }).concurrency).toEqual({ group: 'outbox', max: 2 });
  });
});
