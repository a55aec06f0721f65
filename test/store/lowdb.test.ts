import { mkdir, mkdtemp, readFile, readdir, readlink, rm, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createLowdbStore } from '../../src/store/lowdb-store.js';
import { createStore } from '../../src/store/create.js';
import { readRecords } from '../../src/util/append-log.js';
import type { StepRecord, WaitRecord } from '../../src/store/types.js';
import { spawnProcess, srcModuleForChild } from '../support/spawn.js';
import { describeStoreConformance, makeRun } from './conformance.js';

const itemsWriter = fileURLToPath(new URL('./fixtures/items-writer.mjs', import.meta.url));
const lowdbModule = srcModuleForChild('store/lowdb-store');

/** Runs the items writer under a file-size limit of `kb` KiB, to its end. */
async function writeItemsUntilFull(dir: string, kb: number): Promise<{ code: number | null; out: string; err: string }> {
  const node = [process.execPath, ...lowdbModule.execArgv, itemsWriter, lowdbModule.url, dir, String(kb * 1024), JSON.stringify(makeRun())];
  const p = spawnProcess('bash', ['-c', `ulimit -f ${kb} && exec "$0" "$@"`, ...node], dir, {}, 'items-writer');
  return { code: await p.exited, out: p.stdout(), err: p.stderr() };
}

describeStoreConformance('lowdb', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'msgflow-store-'));
  return {
    store: createLowdbStore({ dir }),
    reopen: async () => createLowdbStore({ dir }),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
});

describe('lowdb driver specifics', () => {
  it('ignores a torn last line of the item log and appends after it cleanly', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'msgflow-store-'));
    try {
      const s1 = createLowdbStore({ dir });
      await s1.createRun(makeRun());
      await s1.appendItems('run-1', [{ step: 's', index: 0, status: 'succeeded', attempts: 1, finishedAt: 1 }]);
      await s1.close();
      const log = join(dir, 'runs', 'run-1', 'items.jsonl');
      // What a kill -9 in the middle of a write leaves behind.
      await appendFile(log, '{"step":"s","index":1,"sta');
      const s2 = createLowdbStore({ dir });
      expect([...(await s2.getItems('run-1', 's')).keys()]).toEqual([0]);
      await s2.appendItems('run-1', [{ step: 's', index: 2, status: 'succeeded', attempts: 1, finishedAt: 2 }]);
      expect([...(await s2.getItems('run-1', 's')).keys()]).toEqual([0, 2]);
      expect((await readFile(log, 'utf8')).split('\n')).toHaveLength(3);
      await s2.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a write that fails half-way (the disk filled up) leaves no partial line: the item log takes the next item, and every acknowledged item reads back', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'msgflow-store-'));
    try {
      const { code, out, err } = await writeItemsUntilFull(dir, 64);
      expect(code, err).toBe(0);
      const acked = [...out.matchAll(/^ack (\d+)$/gm)].map((m) => Number(m[1]));
      const failed = [...out.matchAll(/^failed (\d+): (.*)$/gm)].map((m) => [Number(m[1]), m[2]]);
      // Items 0..k-1 fit, item k crossed the limit, item k+1 fit in what was left.
      const k = acked.length - 1;
      expect(failed).toEqual([[k, expect.stringMatching(/cannot write \S+items\.jsonl \(EFBIG/)]]);
      expect(acked).toEqual([...Array.from({ length: k }, (_, i) => i), k + 1]);
      const log = await readRecords(join(dir, 'runs', 'run-1', 'items.jsonl'), 'refuse');
      expect(log.tornTail).toBe(false);
      const s = createLowdbStore({ dir });
      expect([...(await s.getItems('run-1', 's')).keys()]).toEqual(acked);
      await s.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a finished run's files are released: its item log, journals and state are not held open", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'msgflow-store-'));
    const held = async () => {
      const fds = await readdir('/proc/self/fd');
      const targets = await Promise.all(fds.map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
      return targets.filter((t) => t.startsWith(join(dir, 'runs', 'run-1')));
    };
    const s = createLowdbStore({ dir });
    try {
      await s.createRun(makeRun());
      await s.appendItems('run-1', [{ step: 's', index: 0, status: 'succeeded', attempts: 1, finishedAt: 1 }]);
      await s.appendJournal('run-1', 'check/-', [{ i: 0 }]);
      await s.appendJournal('run-1', 'report', [{ i: 0 }]);
      await s.kv('run:run-1').set('cursor', 1);
      expect((await held()).length).toBeGreaterThan(0);
      await s.updateRun('run-1', { status: 'succeeded' });
      expect(await held()).toEqual([]);
      // A finished run's journal can still be written and read: it reopens.
      await s.appendJournal('run-1', 'report', [{ i: 1 }]);
      const read: unknown[] = [];
      for await (const e of s.readJournal('run-1', 'report')) read.push(e);
      expect(read).toEqual([{ i: 0 }, { i: 1 }]);
    } finally {
      await s.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses run ids that would escape the state directory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'msgflow-store-'));
    try {
      const s = createLowdbStore({ dir });
      await expect(s.createRun(makeRun({ id: '../evil' }))).rejects.toThrow(/invalid run id '\.\.\/evil'/);
      expect(await s.getRun('../evil')).toBeUndefined();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('createStore resolves a relative dir against baseDir and skips junk in runs/', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'msgflow-store-'));
    try {
      const s = createStore({ driver: 'lowdb', dir: 'state' }, dir);
      await s.createRun(makeRun());
      await s.close();
      expect(JSON.parse((await readFile(join(dir, 'state', 'runs', 'run-1', 'run.jsonl'), 'utf8')).split('\n')[0]!).run.id).toBe('run-1');
      await writeFile(join(dir, 'state', 'runs', 'README'), 'not a run');
      expect((await createStore({ driver: 'lowdb', dir: 'state' }, dir).listRuns()).map((r) => r.id)).toEqual(['run-1']);
      expect(() => createStore({ driver: 'sqlite' as never, dir: 'x' }, dir)).toThrow(/store\.driver: unknown driver 'sqlite'/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("lowdb driver: a run's document as a log of its changes", () => {
  it('a run document written by an earlier version (run.json) is read, and its next change starts the log from the whole document', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'msgflow-store-'));
    try {
      const run = makeRun({ status: 'running' });
      const step: StepRecord = {
        runId: run.id,
        step: 'a',
        action: 'log',
        status: 'succeeded',
        startedAt: 1,
        done: 1,
        failed: 0,
        forEach: false,
        output: { n: 1 },
      };
      await mkdir(join(dir, 'runs', run.id), { recursive: true });
      await writeFile(join(dir, 'runs', run.id, 'run.json'), JSON.stringify({ run, steps: [step], waits: {} }));
      const s = createLowdbStore({ dir });
      expect((await s.getRun(run.id))?.status).toBe('running');
      await s.updateRun(run.id, { status: 'succeeded' });
      await s.close();
      const again = createLowdbStore({ dir });
      expect((await again.getRun(run.id))?.status).toBe('succeeded');
      expect(await again.getSteps(run.id)).toEqual([step]);
      await again.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a run changed a thousand times keeps a log of the size of its document, and reads back its last state', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'msgflow-store-'));
    try {
      const s = createLowdbStore({ dir });
      await s.createRun(makeRun({ status: 'running' }));
      for (let i = 1; i <= 1000; i++) await s.updateRun('run-1', { itemsDone: i });
      await s.saveStep({ runId: 'run-1', step: 'a', action: 'log', status: 'running', startedAt: 1, done: 0, failed: 0, forEach: false });
      const wait = (key: string): WaitRecord => ({ key, until: 5, reason: 'sleep', step: 'a', createdAt: 1 });
      await s.setWait('run-1', wait('w'));
      await s.deleteWait('run-1', 'w');
      await s.setWait('run-1', wait('v'));
      await s.close();
      const lines = (await readFile(join(dir, 'runs', 'run-1', 'run.jsonl'), 'utf8')).split('\n').filter(Boolean);
      expect(lines.length).toBeLessThanOrEqual(40);
      const again = createLowdbStore({ dir });
      expect((await again.getRun('run-1'))?.itemsDone).toBe(1000);
      expect((await again.getSteps('run-1')).map((x) => x.status)).toEqual(['running']);
      expect((await again.listWaits('run-1')).map((w) => w.key)).toEqual(['v']);
      await again.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('lowdb driver: run index and journals', () => {
  it('a store of an earlier version (no run index) gets one built from runs/ on first use', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'msgflow-store-'));
    try {
      const s1 = createLowdbStore({ dir });
      for (let i = 0; i < 5; i++) await s1.createRun(makeRun({ id: `r${i}`, startedAt: i, status: i === 1 ? 'succeeded' : 'running' }));
      await s1.close();
      await rm(join(dir, 'runs.jsonl'));
      const s2 = createLowdbStore({ dir });
      expect((await s2.listRuns({ limit: 2 })).map((r) => r.id)).toEqual(['r4', 'r3']);
      expect((await s2.listRuns({ status: ['succeeded'] })).map((r) => r.id)).toEqual(['r1']);
      await s2.createRun(makeRun({ id: 'r5', startedAt: 5 }));
      expect((await createLowdbStore({ dir }).listRuns()).map((r) => r.id)).toEqual(['r5', 'r4', 'r3', 'r2', 'r1', 'r0']);
      await s2.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a journal torn by kill -9 replays its whole entries and appends after the torn line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'msgflow-store-'));
    try {
      const s1 = createLowdbStore({ dir });
      await s1.createRun(makeRun());
      await s1.appendJournal('run-1', 'check/-', [{ i: 0 }, { i: 1 }]);
      await s1.close();
      await appendFile(join(dir, 'runs', 'run-1', 'journal.check%2F-.jsonl'), '{"i":2,"pa');
      const s2 = createLowdbStore({ dir });
      const read = async () => {
        const out: unknown[] = [];
        for await (const e of s2.readJournal('run-1', 'check/-')) out.push(e);
        return out;
      };
      expect(await read()).toEqual([{ i: 0 }, { i: 1 }]);
      await s2.appendJournal('run-1', 'check/-', [{ i: 3 }]);
      expect(await read()).toEqual([{ i: 0 }, { i: 1 }, { i: 3 }]);
      await s2.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('lowdb driver: journals of an earlier version', () => {
  it('a run journaled under journal/ (earlier versions) replays those entries first, then what is appended now', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'msgflow-store-'));
    try {
      const s = createLowdbStore({ dir });
      await s.createRun(makeRun());
      await mkdir(join(dir, 'runs', 'run-1', 'journal'));
      await writeFile(join(dir, 'runs', 'run-1', 'journal', 'check%2F-.jsonl'), '{"i":0}\n{"i":1}\n');
      await s.appendJournal('run-1', 'check/-', [{ i: 2 }]);
      const read: unknown[] = [];
      for await (const e of s.readJournal('run-1', 'check/-')) read.push(e);
      expect(read).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }]);
      await s.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('lowdb driver: kv shared by several processes', () => {
  it("every store on the same dir sees the others' writes, and none erases them", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'msgflow-kv-shared-'));
    const daemon = createLowdbStore({ dir });
    const cli = createLowdbStore({ dir });
    const a = daemon.kv('shared:checkAccount:default');
    const b = cli.kv('shared:checkAccount:default');
    await a.set('n:79001112233', { exist: true });
    await b.set('pause', { until: 123 });
    expect(await a.get('pause')).toEqual({ until: 123 });
    await a.set('n:79002223344', { exist: false }); // must not drop b's pause
    expect(await b.get('pause')).toEqual({ until: 123 });
    expect((await b.entries('n:')).map(([k]) => k)).toEqual(['n:79001112233', 'n:79002223344']);
    await b.delete('pause');
    expect(await a.get('pause')).toBeUndefined();
    await daemon.close();
    await cli.close();
  });

  it('keys of any shape: dots, slashes, long ones', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'msgflow-kv-keys-'));
    const s = createLowdbStore({ dir });
    const kv = s.kv('../odd/ns');
    const keys = ['.', '..', 'a/b\\c', 'x'.repeat(500), 'ключ', '*'];
    for (const [i, k] of keys.entries()) await kv.set(k, i);
    for (const [i, k] of keys.entries()) expect(await kv.get(k)).toBe(i);
    expect((await kv.entries()).length).toBe(keys.length);
    expect((await kv.entries('x')).map(([, v]) => v)).toEqual([3]);
    await s.close();
  });
});
