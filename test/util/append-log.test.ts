/**
 * The one append-only log (src/util/append-log.ts) under the local service's
 * data and the engine store: what a writer acknowledges is in the file, in
 * the order of the calls; a torn last line is never read and is cut before
 * the owner's next append; a line that is not a record is refused or
 * skipped and reported, as the log's policy says; a reader follows a writer
 * in another process through kill -9.
 */
import { readFileSync } from 'node:fs';
import { appendFile, mkdtemp, readFile, readlink, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AppendLog,
  createFileOnce,
  jsonRecords,
  LogTail,
  readRecords,
  scanLog,
  streamRecords,
  type CorruptLinePolicy,
} from '../../src/util/append-log.js';
import { spawnProcess, srcModuleForChild } from '../support/spawn.js';
import { waitFor } from '../support/wait.js';

const writerScript = fileURLToPath(new URL('./fixtures/log-writer.mjs', import.meta.url));
const appendLogModule = srcModuleForChild('util/append-log');

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'msgflow-append-log-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const own = (file: string, corrupt: CorruptLinePolicy = 'skip-and-report') => new AppendLog(file, { corrupt });
const indexes = async (file: string) => (await readRecords<{ i: number }>(file, 'refuse')).records.map((r) => r.i);

/** The files this process holds open. */
async function openFiles(): Promise<string[]> {
  const fds = await readdir('/proc/self/fd');
  return (await Promise.all(fds.map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')))).filter(Boolean);
}

describe('a writer', () => {
  it('writes concurrent appends one line each, in the order of the calls, and refuses appends once closed', async () => {
    const file = join(dir, 'a', 'items.jsonl');
    const log = own(file);
    await Promise.all(Array.from({ length: 1000 }, (_, i) => log.appendRecords([{ i }])));
    await log.appendRecords([{ i: 1000 }, { i: 1001 }]);
    await log.close();
    expect(await indexes(file)).toEqual(Array.from({ length: 1002 }, (_, i) => i));
    await expect(log.appendRecords([{ i: 1 }])).rejects.toThrow(/is closed/);
  });

  it('runs onDurable in call order, each once its line is in the file', async () => {
    const file = join(dir, 'x.jsonl');
    const log = own(file);
    const seen: Array<[number, number]> = [];
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        log.append(`{"i":${i}}\n`, () => seen.push([i, readFileSync(file, 'utf8').split('\n').filter(Boolean).length])),
      ),
    );
    expect(seen.map(([i]) => i)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(seen.every(([i, lines]) => lines > i)).toBe(true);
    await log.close();
  });

  it('per-turn: appends made in different callbacks of one turn of the event loop are written together', async () => {
    const file = join(dir, 'x.jsonl');
    const log = new AppendLog(file, { corrupt: 'refuse', commit: 'per-turn' });
    let linesWhenFirstWritten = 0;
    const first = new Promise<void>((done) =>
      setImmediate(
        () => void log.append('{"i":0}\n', () => (linesWhenFirstWritten = readFileSync(file, 'utf8').split('\n').length - 1)).then(done),
      ),
    );
    const second = new Promise<void>((done) => setImmediate(() => void log.appendRecords([{ i: 1 }]).then(done)));
    await Promise.all([first, second]);
    expect(linesWhenFirstWritten).toBe(2);
    await log.close();
  });

  it('at-once: an append is written before the event loop turns', async () => {
    const file = join(dir, 'x.jsonl');
    const log = new AppendLog(file, { corrupt: 'refuse', commit: 'at-once' });
    let turned = false;
    setImmediate(() => (turned = true));
    await log.appendRecords([{ i: 0 }]);
    expect(turned).toBe(false);
    expect(await indexes(file)).toEqual([0]);
    await log.close();
  });

  it('rewrites in sequence with the appends: what came before is in what it is given, what comes after follows it', async () => {
    const file = join(dir, 'x.jsonl');
    const log = own(file);
    const before = [0, 1, 2].map((i) => log.appendRecords([{ i }]));
    const rewritten = log.rewrite(function* () {
      // Runs after the three appends are in the file.
      expect(readFileSync(file, 'utf8').split('\n').filter(Boolean)).toHaveLength(3);
      yield '{"i":10}\n';
    });
    const after = log.appendRecords([{ i: 11 }]);
    await Promise.all([...before, rewritten, after]);
    expect(await indexes(file)).toEqual([10, 11]);
    expect(await readdir(dir)).toEqual(['x.jsonl']);
    await log.close();
  });

  it('a rewrite that fails leaves the file as it was, without its temp file', async () => {
    const file = join(dir, 'x.jsonl');
    const log = own(file);
    await log.appendRecords([{ i: 0 }]);
    await expect(
      log.rewrite(function* () {
        yield '{"i":9}\n';
        throw new Error('snapshot failed');
      }),
    ).rejects.toThrow('snapshot failed');
    await log.appendRecords([{ i: 1 }]);
    expect(await indexes(file)).toEqual([0, 1]);
    expect(await readdir(dir)).toEqual(['x.jsonl']);
    await log.close();
  });

  it('releases its descriptor when idle and reopens it for the next append', async () => {
    const file = join(dir, 'idle.jsonl');
    const log = new AppendLog(file, { corrupt: 'refuse', idleCloseMs: 5 });
    await log.appendRecords([{ i: 0 }]);
    await waitFor('the idle log to release its file', async () => !(await openFiles()).includes(file));
    await log.appendRecords([{ i: 1 }]);
    expect(await indexes(file)).toEqual([0, 1]);
    await log.close();
    expect(await openFiles()).not.toContain(file);
  });
});

describe('a torn last line (a write cut short by kill -9)', () => {
  it('is never read, and readers leave the file as it is', async () => {
    const file = join(dir, 'x.jsonl');
    const text = '{"i":0}\n{"i":1}\n{"i":2';
    await writeFile(file, text);
    const r = await readRecords<{ i: number }>(file, 'refuse');
    expect(r.records).toEqual([{ i: 0 }, { i: 1 }]);
    expect(r.tornTail).toBe(true);
    const streamed: unknown[] = [];
    for await (const rec of streamRecords(file, 'refuse')) streamed.push(rec);
    expect(streamed).toEqual([{ i: 0 }, { i: 1 }]);
    expect(await readFile(file, 'utf8')).toBe(text);
  });

  it('is cut off by the owning writer before its first append, across read slices', async () => {
    const file = join(dir, 'x.jsonl');
    const big = JSON.stringify({ i: 0, pad: 'x'.repeat(100_000) });
    await writeFile(file, `${big}\n${'{"half":'.repeat(20_000)}`);
    const log = own(file, 'refuse');
    await log.appendRecords([{ i: 1 }]);
    expect(await readFile(file, 'utf8')).toBe(`${big}\n{"i":1}\n`);
    await log.close();
    // A file with no newline at all keeps nothing of it.
    await writeFile(file, '{"no newline at all"');
    const again = own(file, 'refuse');
    await again.appendRecords([{ i: 2 }]);
    expect(await readFile(file, 'utf8')).toBe('{"i":2}\n');
    await again.close();
  });

  it('is left by a shared writer (it may be a write in flight), whose batch starts on a line of its own', async () => {
    const file = join(dir, 'shared.jsonl');
    await writeFile(file, '{"i":0}\n{"i":1,"pa');
    const log = new AppendLog(file, { corrupt: 'skip-and-report', shared: true });
    await log.appendRecords([{ i: 2 }]);
    await log.close();
    const r = await readRecords<{ i: number }>(file, 'skip-and-report');
    expect(r.records).toEqual([{ i: 0 }, { i: 2 }]);
    expect(r.skipped).toEqual([2]);
  });
});

describe('a line that is not a record', () => {
  const text = '{"i":0}\r\n\n{"i":1}\nnot json\n{"i":2}\n';

  it('refuse: the read fails naming the file and the line', async () => {
    const file = join(dir, 'x.jsonl');
    await writeFile(file, text);
    await expect(
      scanLog(
        file,
        'refuse',
        jsonRecords(() => undefined),
        'data/x.jsonl',
      ),
    ).rejects.toThrow(/^data\/x\.jsonl:4: not a JSON record/);
  });

  it('skip-and-report: the other records are read and the line is reported by number', async () => {
    const file = join(dir, 'x.jsonl');
    await writeFile(file, text);
    const r = await readRecords<{ i: number }>(file, 'skip-and-report');
    expect(r.records).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }]);
    expect(r.skipped).toEqual([4]);
    expect(r.tornTail).toBe(false);
  });

  it('is named by its line number however many slices the file is read in, multi-byte text included', async () => {
    const file = join(dir, 'big.jsonl');
    const line = (i: number) => JSON.stringify({ i, pad: 'Zoë ключ '.repeat(9) }) + '\n';
    const lines = Array.from({ length: 30_000 }, (_, i) => (i === 24_999 ? '{"i":\n' : line(i)));
    await writeFile(file, lines.join(''));
    await expect(
      scanLog(
        file,
        'refuse',
        jsonRecords(() => undefined),
      ),
    ).rejects.toThrow(/big\.jsonl:25000: not a JSON record/);
    const r = await readRecords<{ i: number }>(file, 'skip-and-report');
    expect(r.records).toHaveLength(29_999);
    expect(r.records[29_998]).toEqual({ i: 29_999, pad: 'Zoë ключ '.repeat(9) });
    expect(r.skipped).toEqual([25_000]);
  });
});

describe('a reader following a writer', () => {
  it('gets each complete line once, leaves an incomplete one for the next pull, reads lines longer than a slice, and tells when the file is unlinked', async () => {
    const file = join(dir, 'x.jsonl');
    await writeFile(file, '');
    const tail = LogTail.open(file, 'skip-and-report')!;
    const got: unknown[] = [];
    const onLine = jsonRecords((r) => void got.push(r));
    await appendFile(file, '{"i":0}\n{"i":1');
    expect(tail.pull(onLine)).toBe(true);
    expect(got).toEqual([{ i: 0 }]);
    const long = 'y'.repeat(3 << 20);
    await appendFile(file, `}\n{"long":"${long}"}\n`);
    tail.pull(onLine);
    expect(got).toHaveLength(3);
    expect(got[1]).toEqual({ i: 1 });
    expect((got[2] as { long: string }).long).toHaveLength(long.length);
    await rm(file);
    expect(tail.pull(onLine)).toBe(false);
    tail.close();
    expect(LogTail.open(file, 'skip-and-report')).toBeUndefined();
  });

  for (const mode of ['own', 'shared'] as const) {
    it(`sees every acknowledged line of a writer process (${mode} log) in order, through kill -9 and a second writer`, async () => {
      const file = join(dir, 'log.jsonl');
      await writeFile(file, '');
      const tail = LogTail.open(file, 'skip-and-report')!;
      const seen: number[] = [];
      const onLine = jsonRecords<{ i: number }>((r) => void seen.push(r.i));
      const first = startWriter(file, 0, 1_000_000, mode);
      await waitFor('lines written and read', () => {
        tail.pull(onLine);
        return seen.length >= 2000 || first.child.exitCode !== null;
      });
      await first.kill();
      expect(first.child.signalCode, first.stderr()).toBe('SIGKILL');
      tail.pull(onLine);
      const acked = [...first.stdout().matchAll(/ack (\d+)/g)].map((m) => Number(m[1]));
      // Appends land in call order: what was read is a prefix of 0, 1, 2, … holding every acknowledged one.
      expect(seen).toEqual(Array.from({ length: seen.length }, (_, i) => i));
      expect(seen.length).toBeGreaterThan(Math.max(...acked));
      const second = startWriter(file, 5_000_000, 500, mode);
      expect(await second.exited, second.stderr()).toBe(0);
      tail.pull(onLine);
      expect(seen.slice(-500)).toEqual(Array.from({ length: 500 }, (_, i) => 5_000_000 + i));
      // A line the kill tore: cut by an owning writer, ended by a shared writer's newline and skipped.
      expect(tail.skipped.length).toBeLessThanOrEqual(mode === 'own' ? 0 : 1);
      tail.close();
    }, 60_000);
  }
});

it('createFileOnce writes a file whole, once: a second creation leaves the first', async () => {
  const file = join(dir, 'index.jsonl');
  expect(createFileOnce(file, '{"i":0}\n')).toBe(true);
  expect(createFileOnce(file, '{"i":1}\n')).toBe(false);
  expect(await readFile(file, 'utf8')).toBe('{"i":0}\n');
  expect(await readdir(dir)).toEqual(['index.jsonl']);
});

/** The writer fixture as a process, appending `{ i }` for from <= i < from + count. */
function startWriter(file: string, from: number, count: number, mode: 'own' | 'shared') {
  const args = [...appendLogModule.execArgv, writerScript, appendLogModule.url, file, String(from), String(count), mode];
  return spawnProcess(process.execPath, args, dir, {}, `log-writer ${mode}`);
}
