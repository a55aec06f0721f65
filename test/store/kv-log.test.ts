/**
 * The embedded driver's key/value log (src/store/kv-log.ts): one log per
 * namespace, shared by processes, compacted without losing an acknowledged
 * write to kill -9 or to a crash half-way through a compaction.
 */
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { srcModuleForChild } from '../support/spawn.js';
import { waitFor } from '../support/wait.js';
import { KvLog } from '../../src/store/kv-log.js';
import { createLowdbStore } from '../../src/store/lowdb-store.js';

const writerScript = fileURLToPath(new URL('./fixtures/kv-writer.mjs', import.meta.url));
const kvLog = srcModuleForChild('store/kv-log');

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'msgflow-kvlog-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

function startWriter(args: string[]) {
  const proc = spawn(process.execPath, [...kvLog.execArgv, writerScript, kvLog.url, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    proc.on('exit', (code, signal) => r({ code, signal })),
  );
  const acked = () => [...out.matchAll(/ack (\d+)/g)].map((m) => Number(m[1]));
  return { proc, exited, acked, out: () => out, err: () => err };
}

const files = async (d: string) => (await readdir(d)).sort();

describe('KvLog', () => {
  it('keeps a namespace in one log file, however many keys', async () => {
    const s = createLowdbStore({ dir });
    const kv = s.kv('shared:checkAccount');
    await Promise.all(Array.from({ length: 3000 }, (_, i) => kv.set(`n:${79200000000 + i}`, { exist: i % 2 === 0 })));
    await kv.set('pause', { until: 5 });
    expect(await kv.get('n:79200000007')).toEqual({ exist: false });
    expect((await kv.entries('n:')).length).toBe(3000);
    expect(await files(join(dir, 'kv'))).toEqual(['shared%3AcheckAccount.0.jsonl']);
    await s.close();
  });

  it('compacts into a snapshot, deletes the old generation, and keeps every value', async () => {
    const log = new KvLog({ dir, name: 'ns', compactMinBytes: 2_000 });
    for (let round = 0; round < 20; round++) for (let k = 0; k < 20; k++) await log.set(`k${k}`, { round, k });
    await log.delete('k3');
    const names = await files(dir);
    expect(names.some((n) => n.endsWith('.snap.jsonl'))).toBe(true);
    expect(names.length).toBeLessThanOrEqual(2);
    expect(names).not.toContain('ns.0.jsonl');
    const again = new KvLog({ dir, name: 'ns' });
    expect(await again.get('k19')).toEqual({ round: 19, k: 19 });
    expect(await again.get('k3')).toBeUndefined();
    expect((await again.entries()).length).toBe(19);
    await log.close();
    await again.close();
  });

  it("two instances (as two processes) see each other's writes across compactions", async () => {
    const a = new KvLog({ dir, name: 'ns', compactMinBytes: 1_000 });
    const b = new KvLog({ dir, name: 'ns', compactMinBytes: 1_000 });
    for (let i = 0; i < 200; i++) {
      const [w, r] = i % 2 ? [a, b] : [b, a];
      await Promise.all([w.set('hot', i), w.set(`k${i}`, i)]);
      expect(await r.get('hot')).toBe(i);
      if (i % 50 === 49) await r.delete(`k${i - 1}`);
    }
    for (const x of [a, b]) {
      const keys = (await x.entries('k')).map(([k]) => k);
      expect(keys.length).toBe(200 - 4);
      expect(keys).not.toContain('k48');
    }
    expect((await files(dir)).some((n) => n.endsWith('.snap.jsonl'))).toBe(true);
    await a.close();
    await b.close();
  });

  it('gets asked for in one turn share a tail of the log, yet each sees every write another process acknowledged before it was asked for', async () => {
    const writer = new KvLog({ dir, name: 'ns' });
    const reader = new KvLog({ dir, name: 'ns' });
    await writer.set('a', 1);
    // The first get of the turn tails the log at once; the ones after it wait for one tail at the end of the turn.
    const first = reader.get('a');
    const burst = Array.from({ length: 8 }, (_, i) => reader.get(`b${i}`));
    expect(await first).toBe(1);
    expect(await Promise.all(burst)).toEqual(Array(8).fill(undefined));
    // Another process's write, acknowledged between two gets of one turn (its bytes in the file): the later get sees it.
    const before = reader.get('c');
    appendFileSync(join(dir, 'ns.0.jsonl'), '\n["c",3]\n');
    const after = reader.get('c');
    expect(await before).toBeUndefined();
    expect(await after).toBe(3);
    await writer.close();
    await reader.close();
    // A get waiting for its burst's tail when the log closes is refused, naming the log.
    const late = new KvLog({ dir, name: 'ns' });
    await late.get('a');
    const waiting = late.get('a');
    await late.close();
    await expect(waiting).rejects.toThrow(/key\/value log ns is closed/);
  });

  it('skips a line torn by kill -9 and appends after it on a line of its own', async () => {
    const log = new KvLog({ dir, name: 'ns' });
    await log.set('a', 1);
    await appendFile(join(dir, 'ns.0.jsonl'), '["b",{"tor');
    const other = new KvLog({ dir, name: 'ns' });
    expect(await other.get('b')).toBeUndefined();
    await other.set('c', 3);
    expect(await log.entries()).toEqual([
      ['a', 1],
      ['c', 3],
    ]);
    await log.close();
    await other.close();
  });

  it('a torn line that looks whole is caught when read: the previous value stands, compaction drops it', async () => {
    const log = new KvLog({ dir, name: 'ns' });
    await log.set('b', 1);
    // Cut after an inner ']': the shape check alone would take it for a set.
    await appendFile(join(dir, 'ns.0.jsonl'), '\n["b",{"a":[1,2]');
    const other = new KvLog({ dir, name: 'ns' });
    await other.set('c', 3);
    expect(await log.get('b')).toBe(1);
    expect(await other.entries()).toEqual([
      ['b', 1],
      ['c', 3],
    ]);
    expect(other.compact()).toBe(true);
    expect(await new KvLog({ dir, name: 'ns' }).entries()).toEqual([
      ['b', 1],
      ['c', 3],
    ]);
    await log.close();
    await other.close();
  });

  it("a writer that is the namespace's only writer reads from its index; a reader tailing it sees every write and compaction", async () => {
    let exclusive = true;
    const owner = new KvLog({ dir, name: 'ns', compactMinBytes: 2_000, exclusive: () => exclusive });
    const reader = new KvLog({ dir, name: 'ns' });
    for (let i = 0; i < 300; i++) {
      await owner.set('hot', i);
      expect(await owner.get('hot')).toBe(i);
      expect(await reader.get('hot')).toBe(i);
    }
    expect((await files(dir)).some((n) => n.endsWith('.snap.jsonl'))).toBe(true);
    // The owner trusts its index: a write it did not make (which an owner never meets) is not looked for...
    await reader.set('stranger', 1);
    expect(await owner.get('stranger')).toBeUndefined();
    // ...until it stops being the only writer: then it catches up on its next read.
    exclusive = false;
    expect(await owner.get('stranger')).toBe(1);
    exclusive = true;
    await reader.set('stranger', 2);
    expect(await owner.get('stranger')).toBe(2);
    await owner.close();
    await reader.close();
  });

  it('a compaction that crashed between sealing a log and starting the next one: writers go on in the sealed log, and the next compaction keeps their writes', async () => {
    const a = new KvLog({ dir, name: 'ns' });
    await a.set('before', 1);
    await appendFile(join(dir, 'ns.0.jsonl'), '\n{"seal":0}\n');
    const b = new KvLog({ dir, name: 'ns' });
    await a.set('after', 2);
    await b.set('other', 3);
    expect(await b.get('after')).toBe(2);
    expect(await a.get('other')).toBe(3);
    expect(b.compact()).toBe(true);
    await a.set('later', 4);
    const fresh = new KvLog({ dir, name: 'ns' });
    expect(await fresh.entries()).toEqual([
      ['after', 2],
      ['before', 1],
      ['later', 4],
      ['other', 3],
    ]);
    expect(await files(dir)).not.toContain('ns.0.jsonl');
    for (const x of [a, b, fresh]) await x.close();
  });

  it('a write that lands in a log after a compaction sealed it is written again to the new generation', async () => {
    const a = new KvLog({ dir, name: 'ns' });
    const b = new KvLog({ dir, name: 'ns' });
    await a.set('k', 0);
    expect(await b.get('k')).toBe(0);
    // b compacts while a still writes to generation 0 (its descriptor is open, the file unlinked).
    expect(b.compact()).toBe(true);
    await a.set('k', 1);
    await a.set('j', 2);
    const fresh = new KvLog({ dir, name: 'ns' });
    expect(await fresh.entries()).toEqual([
      ['j', 2],
      ['k', 1],
    ]);
    expect(await b.get('k')).toBe(1);
    for (const x of [a, b, fresh]) await x.close();
  });

  it('a group commit of many sets: each is indexed by one tail of the log, and after a compaction sealed it, each is written again to the new generation', async () => {
    const a = new KvLog({ dir, name: 'ns' });
    const b = new KvLog({ dir, name: 'ns' });
    const keys = Array.from({ length: 200 }, (_, i) => `n:${79200000000 + i}`);
    await Promise.all(keys.map((k, i) => a.set(k, i)));
    expect(await Promise.all(keys.map((k) => a.get(k)))).toEqual(keys.map((_, i) => i));
    expect(await b.get(keys[199]!)).toBe(199);
    // b compacts while a's next group goes to generation 0 (its descriptor open, the file sealed and unlinked).
    expect(b.compact()).toBe(true);
    await Promise.all(keys.map((k, i) => a.set(k, 1000 + i)));
    const fresh = new KvLog({ dir, name: 'ns' });
    expect(await fresh.entries('n:')).toEqual(keys.map((k, i) => [k, 1000 + i]));
    expect(await b.get(keys[7]!)).toBe(1007);
    for (const x of [a, b, fresh]) await x.close();
  });

  it('imports the one-file-per-key layout of earlier versions, then removes it', async () => {
    const legacy = join(dir, 'kv', 'scheduler');
    await mkdir(legacy, { recursive: true });
    await writeFile(join(legacy, 'flow%2Fa.json'), JSON.stringify({ k: 'flow/a', v: { last: 1 } }));
    await writeFile(join(legacy, 'b.json'), JSON.stringify({ k: 'b', v: 2 }));
    await writeFile(join(legacy, 'b.json.123.ab.tmp'), 'half');
    const s = createLowdbStore({ dir });
    expect(await s.kv('scheduler').entries()).toEqual([
      ['b', 2],
      ['flow/a', { last: 1 }],
    ]);
    await s.kv('scheduler').set('c', 3);
    expect(await files(join(dir, 'kv'))).toEqual(['scheduler.0.jsonl', 'scheduler.0.snap.jsonl']);
    await s.close();
    expect(await createLowdbStore({ dir }).kv('scheduler').get('flow/a')).toEqual({ last: 1 });
  });
});

describe('KvLog under kill -9 (child processes)', () => {
  it('every acknowledged write of two concurrent writers survives kill -9, compactions included', async () => {
    const w1 = startWriter([dir, 'w1', '100000', '20000']);
    const w2 = startWriter([dir, 'w2', '100000', '20000']);
    await waitFor(
      'writes under way',
      () => (w1.acked().length >= 1500 && w2.acked().length >= 1500) || w1.proc.exitCode !== null || w2.proc.exitCode !== null,
    );
    w1.proc.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 30));
    w2.proc.kill('SIGKILL');
    expect((await w1.exited).signal, w1.err()).toBe('SIGKILL');
    expect((await w2.exited).signal, w2.err()).toBe('SIGKILL');
    const log = new KvLog({ dir, name: 'shared' });
    for (const [id, w] of [
      ['w1', w1],
      ['w2', w2],
    ] as const) {
      const acked = w.acked();
      for (const i of acked) expect(await log.get(`${id}:${i}`), `${id}:${i}`).toMatchObject({ i });
      expect(((await log.get<{ i: number }>(`${id}:hot`))?.i ?? -1) >= Math.max(...acked) - 8).toBe(true);
    }
    // Compactions happened (the log would otherwise hold all the hot overwrites).
    expect((await files(dir)).some((n) => n.endsWith('.snap.jsonl'))).toBe(true);
    await log.close();
  }, 180_000);

  for (const step of ['created', 'snapshot-written', 'renamed'] as const) {
    it(`a crash during compaction (${step}) leaves a readable store with every acknowledged write`, async () => {
      const w = startWriter([dir, 'w', '100000', '20000', step]);
      const { signal } = await w.exited;
      expect(signal, w.err()).toBe('SIGKILL');
      const acked = w.acked();
      expect(acked.length).toBeGreaterThan(10);
      const log = new KvLog({ dir, name: 'shared', compactMinBytes: 20_000 });
      for (const i of acked) expect(await log.get(`w:${i}`), `w:${i}`).toMatchObject({ i });
      // And it keeps working: writes, a compaction of its own, a fresh reader.
      for (let i = 0; i < 300; i++) await log.set('w:hot', { i });
      const fresh = new KvLog({ dir, name: 'shared' });
      expect(await fresh.get('w:hot')).toEqual({ i: 299 });
      expect((await fresh.entries('w:')).length).toBeGreaterThanOrEqual(new Set(acked).size + 1);
      await log.close();
      await fresh.close();
    }, 180_000);
  }
});
