import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ItemLog, readLog, truncateTornTail } from '../../src/store/item-log.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'msgflow-log-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe('ItemLog', () => {
  it('batches records appended in the same tick into one line each, in order', async () => {
    const file = join(dir, 'a', 'items.jsonl');
    const log = await ItemLog.open(file);
    await Promise.all(Array.from({ length: 1000 }, (_, i) => log.append([{ i }])));
    await log.append([{ i: 1000 }, { i: 1001 }]);
    await log.close();
    const { records, tornTail, corruptLines } = await readLog<{ i: number }>(file);
    expect(records.map((r) => r.i)).toEqual(Array.from({ length: 1002 }, (_, i) => i));
    expect(tornTail).toBe(false);
    expect(corruptLines).toEqual([]);
    await expect(log.append([{ i: 1 }])).rejects.toThrow(/is closed/);
  });

  it('reads a missing file as empty; reports a torn tail and corrupt middle lines without failing', async () => {
    expect((await readLog(join(dir, 'none.jsonl'))).records).toEqual([]);
    const file = join(dir, 'x.jsonl');
    await writeFile(file, '{"i":0}\nnot json\n{"i":2}\n{"i":3');
    const r = await readLog<{ i: number }>(file);
    expect(r.records).toEqual([{ i: 0 }, { i: 2 }]);
    expect(r.corruptLines).toEqual([2]);
    expect(r.tornTail).toBe(true);
  });

  it('truncateTornTail keeps whole lines only, across chunk boundaries', async () => {
    const file = join(dir, 't.jsonl');
    const big = JSON.stringify({ pad: 'x'.repeat(100_000) });
    await writeFile(file, `${big}\n${'{"half":'.repeat(20_000)}`);
    expect(await truncateTornTail(file)).toBe(8 * 20_000);
    expect(await readFile(file, 'utf8')).toBe(`${big}\n`);
    await writeFile(file, '{"no newline at all"');
    await truncateTornTail(file);
    expect(await readFile(file, 'utf8')).toBe('');
    expect(await truncateTornTail(join(dir, 'missing'))).toBe(0);
  });
});
