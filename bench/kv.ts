/**
 * Micro-benchmark of the lowdb driver's key/value log: writes N keys of about
 * 100-byte values (as a checkAccount cache does), then reopens the namespace
 * in a fresh process and reads them back.
 *   node --expose-gc --import tsx bench/kv.ts [--keys 1000000]
 * Prints write rate, bytes on disk per key, and heap/RSS after a GC for the
 * writer and for a reader that only loaded the index.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { KvLog } from '../src/store/kv-log.js';

const { values } = parseArgs({
  options: { keys: { type: 'string', default: '1000000' }, dir: { type: 'string' }, phase: { type: 'string' } },
});
const n = Number(values.keys);
const key = (i: number) => `3f9a1c2b:7920${String(i).padStart(7, '0')}`;
const value = (i: number) => ({
  exist: i % 5 < 3,
  chatId: `7920${String(i).padStart(7, '0')}@c.us`,
  checkedAt: 1_763_000_000_000 + i,
  by: 'bench',
});

function mem(): { heapMB: number; rssMB: number } {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return { heapMB: Math.round(m.heapUsed / 1e6), rssMB: Math.round(m.rss / 1e6) };
}

if (values.phase === 'read') {
  const t0 = performance.now();
  const log = new KvLog({ dir: values.dir!, name: 'cache' });
  const size = log.size();
  const loadMs = performance.now() - t0;
  const t1 = performance.now();
  let found = 0;
  for (let i = 0; i < n; i += 97) if ((await log.get(key(i))) !== undefined) found++;
  const getUs = ((performance.now() - t1) * 1000) / Math.ceil(n / 97);
  process.stdout.write(
    JSON.stringify({
      size,
      found,
      loadMs: Math.round(loadMs),
      getUs: Number(getUs.toFixed(1)),
      ...mem(),
      maxRssMB: Math.round(process.resourceUsage().maxRSS / 1024),
    }) + '\n',
  );
  await log.close();
} else {
  const dir = mkdtempSync(join(tmpdir(), 'msgflow-kvbench-'));
  try {
    const log = new KvLog({ dir, name: 'cache' });
    const t0 = performance.now();
    const batch = 1000;
    for (let i = 0; i < n; i += batch) {
      const ops: Array<Promise<void>> = [];
      for (let j = i; j < Math.min(n, i + batch); j++) ops.push(log.set(key(j), value(j)));
      await Promise.all(ops);
    }
    const wallS = (performance.now() - t0) / 1000;
    const writer = { ...mem(), maxRssMB: Math.round(process.resourceUsage().maxRSS / 1024) };
    await log.close();
    const bytes = readdirSync(dir).reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
    const line = JSON.stringify([key(1), value(1)]).length + 1;
    const child = spawnSync(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), '--phase', 'read', '--dir', dir, '--keys', String(n)],
      { encoding: 'utf8' },
    );
    if (child.status !== 0) throw new Error(child.stderr);
    const reader = JSON.parse(child.stdout) as Record<string, number>;
    console.log(`keys                  ${n.toLocaleString('en')}`);
    console.log(`writes/s              ${Math.round(n / wallS).toLocaleString('en')} (${wallS.toFixed(1)} s, 1,000 in flight)`);
    console.log(
      `bytes on disk / key   ${(bytes / n).toFixed(1)} (a record line is ${line} bytes: ${line - 6} of key and value, 6 of framing)`,
    );
    console.log(`writer after GC       heap ${writer.heapMB} MB, RSS ${writer.rssMB} MB, peak RSS ${writer.maxRssMB} MB`);
    console.log(
      `reader (fresh process) load ${reader.loadMs} ms, heap ${reader.heapMB} MB, RSS ${reader.rssMB} MB, peak RSS ${reader.maxRssMB} MB, get ${reader.getUs} µs, found ${reader.found}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
