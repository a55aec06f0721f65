/**
 * The conformance suite every EngineStore driver passes. A driver's test file
 * calls `describeStoreConformance(name, factory)`; `reopen` (when the driver
 * is durable) must return a fresh store over the same data, as after a restart.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { EngineStore, ItemResult, RunRecord, StepRecord } from '../../src/store/index.js';

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
      await expect(s.updateRun('ghost', { status: 'failed' })).rejects.toMatchObject({ code: 'RUN_NOT_FOUND', message: "run 'ghost' not found" });
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
        runId: 'run-1', step: id, action: 'log', status: 'running', startedAt: 1, done: 0, failed: 0, forEach: false, ...over,
      });
      await s.saveStep(step('a'));
      await s.saveStep(step('b'));
      await s.saveStep(step('a', { status: 'succeeded', output: { ok: true }, done: 1, total: 1 }));
      const steps = await (await reopen()).getSteps('run-1');
      expect(steps.map((x) => [x.step, x.status])).toEqual([['a', 'succeeded'], ['b', 'running']]);
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
      expect(await again.getWait('run-1', 'check/3/wait')).toMatchObject({ until: 7_200_000, item: 3 });
      expect(await again.getWait('run-1', 'notify/-/wait')).toBeUndefined();
      expect((await again.listWaits('run-1')).map((w) => w.key)).toEqual(['check/3/wait']);
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
      expect(await a.entries('flow/')).toEqual([['flow/x', { last: 1, list: [1, 2] }], ['flow/y', 2]]);
      await a.delete('flow/y');
      const again = (await reopen()).kv('scheduler');
      expect(await again.get('flow/y')).toBeUndefined();
      expect(await again.get('other')).toBe('z');
      expect(await (await reopen()).kv('checkAccount:default').get('flow/x')).toBe('b');
    });
  });
}
