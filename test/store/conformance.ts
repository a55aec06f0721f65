/**
 * The conformance suite every EngineStore driver passes. A driver's test file
 * calls `describeStoreConformance(name, factory)`; `reopen` (when the driver
 * is durable) must return a fresh store over the same data, as after a restart.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { runItemsNamespace, type EngineStore, type ItemResult, type RunRecord, type StepRecord } from '../../src/store/types.js';

export interface StoreHarness {
  store: EngineStore;
  /** A new store instance over the same data (durable drivers only). */
  reopen?: () => Promise<EngineStore>;
  cleanup?: () => Promise<void>;
}

export function makeRun(over: Partial<RunRecord> = {}): RunRecord {
  return {
    id: 'run-1',
    flow: 'demo',
    status: 'running',
    trigger: 'manual',
    dryRun: false,
    startedAt: 1_000,
    updatedAt: 1_000,
    itemsDone: 0,
    itemsFailed: 0,
    resumes: 0,
    ...over,
  };
}

const item = (step: string, index: number, over: Partial<ItemResult> = {}): ItemResult => ({
  step,
  index,
  status: 'succeeded',
  output: { n: index },
  attempts: 1,
  finishedAt: 5_000 + index,
  ...over,
});

export function describeStoreConformance(name: string, factory: () => Promise<StoreHarness>): void {
  describe(`EngineStore conformance: ${name}`, () => {
    let h: StoreHarness;
    const opened: EngineStore[] = [];
    const setup = async () => {
      h = await factory();
      opened.push(h.store);
      return h.store;
    };
    const reopen = async () => {
      if (!h.reopen) return h.store;
      const s = await h.reopen();
      opened.push(s);
      return s;
    };
    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close();
      await h?.cleanup?.();
    });

    it('creates, updates, gets runs; a patch key set to undefined removes the field', async () => {
      const s = await setup();
      await s.createRun(makeRun({ waitingUntil: 9, waitReason: 'x' }));
      const u = await s.updateRun('run-1', { status: 'waiting', itemsDone: 3, waitingUntil: undefined });
      expect(u.status).toBe('waiting');
      expect(u.itemsDone).toBe(3);
      expect('waitingUntil' in u).toBe(false);
      expect(u.waitReason).toBe('x');
      expect((await s.getRun('run-1'))?.itemsDone).toBe(3);
      expect(await s.getRun('nope')).toBeUndefined();
      const again = await reopen();
      expect(await again.getRun('run-1')).toMatchObject({ id: 'run-1', status: 'waiting', itemsDone: 3 });
    });

    it('updateRun of an unknown run throws RUN_NOT_FOUND naming it', async () => {
      const s = await setup();
      await expect(s.updateRun('ghost', { status: 'failed' })).rejects.toMatchObject({
        code: 'RUN_NOT_FOUND',
        message: "run 'ghost' not found",
      });
    });

    it('lists runs newest first, filtered by flow and status, limited', async () => {
      const s = await setup();
      await s.createRun(makeRun({ id: 'a', flow: 'f1', startedAt: 1 }));
      await s.createRun(makeRun({ id: 'b', flow: 'f2', startedAt: 3, status: 'succeeded' }));
      await s.createRun(makeRun({ id: 'c', flow: 'f1', startedAt: 2, status: 'failed' }));
      expect((await s.listRuns()).map((r) => r.id)).toEqual(['b', 'c', 'a']);
      expect((await s.listRuns({ flow: 'f1' })).map((r) => r.id)).toEqual(['c', 'a']);
      expect((await s.listRuns({ status: ['running', 'failed'] })).map((r) => r.id)).toEqual(['c', 'a']);
      expect((await s.listRuns({ limit: 1 })).map((r) => r.id)).toEqual(['b']);
      expect((await (await reopen()).listRuns()).map((r) => r.id)).toEqual(['b', 'c', 'a']);
    });

    it('stores inputs once and returns them after a reopen', async () => {
      const s = await setup();
      await s.createRun(makeRun());
      const inputs = { leads: [{ phone: '79001112233' }, { phone: '79002223344' }], n: 2 };
      await s.saveInputs('run-1', inputs);
      expect(await (await reopen()).loadInputs('run-1')).toEqual(inputs);
      expect(await s.loadInputs('other')).toBeUndefined();
    });

    it('upserts steps keeping first-save order', async () => {
      const s = await setup();
      await s.createRun(makeRun());
      const step = (id: string, over: Partial<StepRecord> = {}): StepRecord => ({
        runId: 'run-1',
        step: id,
        action: 'log',
        status: 'running',
        startedAt: 1,
        done: 0,
        failed: 0,
        forEach: false,
        ...over,
      });
      await s.saveStep(step('a'));
      await s.saveStep(step('b'));
      await s.saveStep(step('a', { status: 'succeeded', output: { ok: true }, done: 1, total: 1 }));
      const steps = await (await reopen()).getSteps('run-1');
      expect(steps.map((x) => [x.step, x.status])).toEqual([
        ['a', 'succeeded'],
        ['b', 'running'],
      ]);
      expect(steps[0].output).toEqual({ ok: true });
    });

    it('appends items concurrently; replays per step with the last record per index winning', async () => {
      const s = await setup();
      await s.createRun(makeRun());
      // Many concurrent appends, as a forEach with concurrency does.
      await Promise.all(Array.from({ length: 500 }, (_, i) => s.appendItems('run-1', [item('check', i)])));
      await s.appendItems('run-1', [item('other', 0), item('check', 7, { status: 'failed', error: { message: 'boom' } })]);
      const again = await reopen();
      const items = await again.getItems('run-1', 'check');
      expect(items.size).toBe(500);
      expect(items.get(499)).toEqual(item('check', 499));
      expect(items.get(7)).toMatchObject({ status: 'failed', error: { message: 'boom' } });
      expect((await again.getItems('run-1', 'other')).size).toBe(1);
      expect((await again.getItems('run-1', 'none')).size).toBe(0);
    });

    it('keeps durable waits by key', async () => {
      const s = await setup();
      await s.createRun(makeRun());
      await s.setWait('run-1', { key: 'check/3/wait', until: 7_200_000, reason: 'backoff', step: 'check', item: 3, createdAt: 0 });
      await s.setWait('run-1', { key: 'notify/-/wait', until: 10, reason: 'r', step: 'notify', createdAt: 0 });
      await s.deleteWait('run-1', 'notify/-/wait');
      await s.deleteWait('run-1', 'never-set');
      const again = await reopen();
      const waits = await again.listWaits('run-1');
      expect(waits.map((w) => w.key)).toEqual(['check/3/wait']);
      expect(waits[0]).toMatchObject({ until: 7_200_000, item: 3 });
    });

    it('kv namespaces: get/set/delete/entries by prefix, isolated, JSON-copied, durable', async () => {
      const s = await setup();
      const a = s.kv('scheduler');
      const b = s.kv('checkAccount:default');
      const obj = { last: 1, list: [1, 2] };
      await a.set('flow/x', obj);
      obj.list.push(3);
      await a.set('flow/y', 2);
      await a.set('other', 'z');
      await b.set('flow/x', 'b');
      expect(await a.get('flow/x')).toEqual({ last: 1, list: [1, 2] });
      expect(await a.entries('flow/')).toEqual([
        ['flow/x', { last: 1, list: [1, 2] }],
        ['flow/y', 2],
      ]);
      await a.delete('flow/y');
      const again = (await reopen()).kv('scheduler');
      expect(await again.get('flow/y')).toBeUndefined();
      expect(await again.get('other')).toBe('z');
      expect(await (await reopen()).kv('checkAccount:default').get('flow/x')).toBe('b');
    });

    it('lists runs with a limit among many: the newest matching ones, by flow and status', async () => {
      const s = await setup();
      for (let i = 0; i < 60; i++)
        await s.createRun(makeRun({ id: `r${String(i).padStart(2, '0')}`, flow: i % 3 === 0 ? 'a' : 'b', startedAt: 100 + i }));
      for (let i = 0; i < 60; i += 2) await s.updateRun(`r${String(i).padStart(2, '0')}`, { status: 'succeeded' });
      expect((await s.listRuns({ limit: 3 })).map((r) => r.id)).toEqual(['r59', 'r58', 'r57']);
      expect((await s.listRuns({ flow: 'a', limit: 2 })).map((r) => r.id)).toEqual(['r57', 'r54']);
      expect((await s.listRuns({ status: ['running'], limit: 2 })).map((r) => r.id)).toEqual(['r59', 'r57']);
      expect((await s.listRuns({ status: ['succeeded'], flow: 'a', limit: 2 })).map((r) => r.id)).toEqual(['r54', 'r48']);
      expect(await s.listRuns({ limit: 0 })).toEqual([]);
      const again = await reopen();
      expect((await again.listRuns({ status: ['running', 'waiting', 'interrupted'] })).length).toBe(30);
      // A status change made through another instance (another process) is seen.
      await again.updateRun('r59', { status: 'failed' });
      expect((await s.listRuns({ status: ['running'], limit: 1 })).map((r) => r.id)).toEqual(['r57']);
    });

    it('journals: appended in order (concurrent appends included), replayed as a stream, per run and stream', async () => {
      const s = await setup();
      await s.createRun(makeRun());
      await s.createRun(makeRun({ id: 'run-2' }));
      await s.appendJournal('run-1', 'check/-', [{ i: 0 }, { i: 1 }]);
      await Promise.all(Array.from({ length: 2500 }, (_, k) => s.appendJournal('run-1', 'check/-', [{ i: k + 2 }])));
      await s.appendJournal('run-1', 'other/-', [{ o: 1 }]);
      await s.appendJournal('run-2', 'check/-', [{ r: 2 }]);
      await s.appendJournal('run-1', 'check/-', []);
      const again = await reopen();
      const seen: number[] = [];
      // Streamed: the replay can be consumed one entry at a time, and stopped early.
      for await (const e of again.readJournal<{ i: number }>('run-1', 'check/-')) seen.push(e.i);
      expect(seen).toEqual(Array.from({ length: 2502 }, (_, i) => i));
      let first: unknown;
      for await (const e of again.readJournal('run-1', 'check/-')) {
        first = e;
        break;
      }
      expect(first).toEqual({ i: 0 });
      const collect = async (run: string, stream: string) => {
        const out: unknown[] = [];
        for await (const e of again.readJournal(run, stream)) out.push(e);
        return out;
      };
      expect(await collect('run-1', 'other/-')).toEqual([{ o: 1 }]);
      expect(await collect('run-2', 'check/-')).toEqual([{ r: 2 }]);
      expect(await collect('run-1', 'never')).toEqual([]);
    });

    it('kv: many keys, overwrites and deletes, entries by prefix in key order', async () => {
      const s = await setup();
      const kv = s.kv('shared:checkAccount:abc123');
      await Promise.all(Array.from({ length: 5000 }, (_, i) => kv.set(`7920${String(i).padStart(7, '0')}`, { exist: i % 5 !== 0, at: i })));
      await Promise.all(Array.from({ length: 1000 }, (_, i) => kv.set(`7920${String(i).padStart(7, '0')}`, { exist: true, at: -i })));
      for (let i = 4000; i < 5000; i++) await kv.delete(`7920${String(i).padStart(7, '0')}`);
      await kv.set('79210000000', 'other prefix');
      const again = (await reopen()).kv('shared:checkAccount:abc123');
      expect(await again.get('79200000005')).toEqual({ exist: true, at: -5 });
      expect(await again.get('79200001005')).toEqual({ exist: false, at: 1005 });
      expect(await again.get('79200004005')).toBeUndefined();
      const some = await again.entries('7920000001');
      expect(some.map(([k]) => k)).toEqual(Array.from({ length: 10 }, (_, i) => `7920000001${i}`));
      expect((await again.entries('7920')).length).toBe(4000);
      expect((await again.entries()).length).toBe(4001);
      expect(await again.entries('none')).toEqual([]);
      // Keys and values of any shape.
      const odd = ['', '.', '..', 'a/b\\c', '*?[x]', 'x'.repeat(300), 'ключ', '"quoted"'];
      for (const [i, k] of odd.entries()) await kv.set(k, { i, s: 'é\n"' });
      for (const [i, k] of odd.entries()) expect(await again.get(k)).toEqual({ i, s: 'é\n"' });
      expect((await again.entries('*?[')).map(([k]) => k)).toEqual(['*?[x]']);
    });

    it("kv: the run's own namespace, written by the process that owns the run, is read back by it and by another instance at once", async () => {
      const s = await setup();
      await s.createRun(makeRun({ id: 'run-7' }));
      const own = s.kv('run:run-7');
      const other = h.reopen ? (await reopen()).kv('run:run-7') : own;
      for (let i = 0; i < 50; i++) {
        await Promise.all([own.set('cursor', i), own.set(`done:${i}`, { i })]);
        expect(await own.get('cursor')).toBe(i);
        expect(await other.get('cursor')).toBe(i);
      }
      await own.delete('done:0');
      expect(await own.get('done:0')).toBeUndefined();
      expect(await other.get('done:0')).toBeUndefined();
      expect((await other.entries('done:')).length).toBe(49);
    });

    it('kv: another instance (another process) sees writes and deletes at once', async () => {
      const s = await setup();
      if (!h.reopen) return; // the memory driver has no second instance over the same data
      const other = await reopen();
      const a = s.kv('shared:pauses');
      const b = other.kv('shared:pauses');
      expect(await b.get('id1:checkAccount')).toBeUndefined();
      await a.set('id1:checkAccount', { until: 10 });
      expect(await b.get('id1:checkAccount')).toEqual({ until: 10 });
      await b.set('id2:checkAccount', { until: 20 });
      await a.set('id1:checkAccount', { until: 30 });
      expect(await b.entries()).toEqual([
        ['id1:checkAccount', { until: 30 }],
        ['id2:checkAccount', { until: 20 }],
      ]);
      await b.delete('id1:checkAccount');
      expect(await a.get('id1:checkAccount')).toBeUndefined();
      expect((await a.entries()).map(([k]) => k)).toEqual(['id2:checkAccount']);
    });

    it('lists the runs finished before a time: unfinished ones and those finished since are not among them', async () => {
      const s = await setup();
      await s.createRun(makeRun({ id: 'old', startedAt: 100, status: 'succeeded', finishedAt: 200 }));
      await s.createRun(makeRun({ id: 'old-failed', flow: 'other', startedAt: 150, status: 'failed', finishedAt: 250 }));
      await s.createRun(makeRun({ id: 'long', startedAt: 120, status: 'succeeded', finishedAt: 5_000 }));
      await s.createRun(makeRun({ id: 'waiting', startedAt: 110, status: 'waiting' }));
      await s.createRun(makeRun({ id: 'new', startedAt: 4_000, status: 'succeeded', finishedAt: 4_100 }));
      expect((await s.listRuns({ finishedBefore: 1_000 })).map((r) => r.id)).toEqual(['old-failed', 'old']);
      expect((await s.listRuns({ finishedBefore: 1_000, flow: 'demo' })).map((r) => r.id)).toEqual(['old']);
      expect((await s.listRuns({ finishedBefore: 1_000, limit: 1 })).map((r) => r.id)).toEqual(['old-failed']);
      expect((await s.listRuns({ finishedBefore: 200 })).map((r) => r.id)).toEqual([]);
      expect((await (await reopen()).listRuns({ finishedBefore: 4_500 })).map((r) => r.id)).toEqual(['new', 'old-failed', 'old']);
    });

    it('deletes a finished run with its inputs, steps, items, waits, journals and own kv namespace; other runs keep theirs', async () => {
      const s = await setup();
      for (const id of ['gone', 'kept']) {
        await s.createRun(makeRun({ id }));
        await s.saveInputs(id, { n: 1 });
        await s.saveStep({ runId: id, step: 'send', action: 'log', status: 'succeeded', startedAt: 1, done: 1, failed: 0, forEach: true });
        await s.appendItems(id, [item('send', 0)]);
        await s.setWait(id, { key: 'send/0/wait', until: 10, reason: 'r', step: 'send', createdAt: 0 });
        await s.appendJournal(id, 'send/-', [{ i: 0 }]);
        await s.appendJournal(id, 'other/x', [{ i: 1 }]);
        await s.kv(`run:${id}`).set('cursor', 3);
        // What workers record for the run (another process in production: another store instance here).
        await (await reopen()).kv(runItemsNamespace(id)).set('send/0', { status: 'succeeded' });
        await s.updateRun(id, { status: 'succeeded', finishedAt: 500 });
      }
      const shared = s.kv('shared:opt-out');
      await shared.set('79001112233', true);
      // Another instance (another process) that has listed the runs before the deletion.
      const again = await reopen();
      expect((await again.listRuns()).map((r) => r.id)).toEqual(['kept', 'gone']);
      expect(await s.deleteRun('gone')).toBe(true);
      for (const view of [s, again]) {
        expect(await view.getRun('gone')).toBeUndefined();
        expect((await view.listRuns()).map((r) => r.id)).toEqual(['kept']);
        expect(await view.loadInputs('gone')).toBeUndefined();
        expect(await view.getSteps('gone')).toEqual([]);
        expect((await view.getItems('gone', 'send')).size).toBe(0);
        expect(await view.listWaits('gone')).toEqual([]);
        const journal: unknown[] = [];
        for await (const e of view.readJournal('gone', 'send/-')) journal.push(e);
        for await (const e of view.readJournal('gone', 'other/x')) journal.push(e);
        expect(journal).toEqual([]);
        expect(await view.kv('run:gone').entries()).toEqual([]);
        expect(await view.kv(runItemsNamespace('gone')).entries()).toEqual([]);
        expect(await view.kv(runItemsNamespace('kept')).get('send/0')).toEqual({ status: 'succeeded' });
        // The other run, and shared state, are untouched.
        expect(await view.loadInputs('kept')).toEqual({ n: 1 });
        expect((await view.getItems('kept', 'send')).size).toBe(1);
        expect(await view.kv('run:kept').get('cursor')).toBe(3);
        expect(await view.kv('shared:opt-out').get('79001112233')).toBe(true);
      }
      // Deleting it again, or a run that never was: nothing to delete.
      expect(await s.deleteRun('gone')).toBe(false);
      expect(await again.deleteRun('never-was')).toBe(false);
      // Its id can be used again by a new run, which starts empty.
      await s.createRun(makeRun({ id: 'gone', startedAt: 9_000 }));
      expect(await s.getSteps('gone')).toEqual([]);
      expect(await s.kv('run:gone').get('cursor')).toBeUndefined();
    });

    it('refuses to delete a run that may still go on (RUN_UNFINISHED), and keeps it', async () => {
      const s = await setup();
      for (const status of ['running', 'waiting', 'interrupted'] as const) {
        await s.createRun(makeRun({ id: status, status }));
        await expect(s.deleteRun(status)).rejects.toMatchObject({
          code: 'RUN_UNFINISHED',
          message: expect.stringContaining(`(${status})`),
        });
        expect((await s.getRun(status))?.status).toBe(status);
      }
    });
  });
}
