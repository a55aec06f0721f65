/**
 * Engine throughput: a 100,000-item forEach with a no-op action and
 * checkpointing ON (lowdb driver on real disk: every item result is appended
 * to the run's item log before the worker takes the next item).
 *
 *   node --import tsx bench/engine-bench.ts [--items 100000] [--concurrency 1,8,32] [--dir /path] [--driver lowdb|redis]
 *
 * Prints items/s per concurrency and the process RSS at the end; verifies
 * that the store holds exactly one record per item. `--driver redis` runs the
 * same against the Redis on 127.0.0.1:6379 (keys under a throwaway prefix).
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import type { InstanceApi } from '../src/api/types.js';
import { defineAction } from '../src/engine/action.js';
import { createBus } from '../src/engine/events.js';
import type { Flow } from '../src/engine/flow/types.js';
import { createRegistry } from '../src/engine/registry/registry.js';
import { createEngine } from '../src/engine/run/engine.js';
import { randomBytes } from 'node:crypto';
import { deleteKeys } from '../test/support/redis.js';
import { createLowdbStore } from '../src/store/lowdb-store.js';
import { createRedisStore } from '../src/store/redis-store.js';
import { readRecords } from '../src/util/append-log.js';
import type { EngineStore } from '../src/store/types.js';

const { values } = parseArgs({
  options: {
    items: { type: 'string', default: '100000' },
    concurrency: { type: 'string', default: '1,8,32' },
    dir: { type: 'string' },
    driver: { type: 'string', default: 'lowdb' },
  },
});
const items = Number(values.items);
const concurrencies = values.concurrency.split(',').map(Number);

const registry = createRegistry();
registry.register(
  defineAction({
    name: 'noop',
    description: 'does nothing',
    input: z.object({ value: z.number() }),
    output: { description: 'nothing' },
    run: async () => undefined,
  }),
);

function benchFlow(concurrency: number): Flow {
  return {
    name: 'bench',
    instance: 'default',
    on: { overlap: 'allow', missed: 'none', startup: false },
    inputs: { list: { value: Array.from({ length: items }, (_, i) => i) } },
    env: {},
    steps: [
      {
        id: 'each',
        uses: 'noop',
        forEach: '${{ inputs.list }}',
        concurrency,
        with: { value: '${{ item }}' },
        retry: { maxAttempts: 1, backoff: 'fixed', delayMs: 0, maxDelayMs: 0, jitter: false },
        continueOnError: false,
        location: 'bench:1:1',
      },
    ],
    file: 'bench.yaml',
    displayFile: 'bench.yaml',
    baseDir: process.cwd(),
  };
}

const root = values.dir ?? (await mkdtemp(join(tmpdir(), 'msgflow-bench-')));
const driver = values.driver;
const prefix = `msgflow-bench:${randomBytes(4).toString('hex')}:`;
console.log(
  `node ${process.version}, ${items} items, no-op action, ${driver === 'redis' ? `redis store (prefix ${prefix})` : `lowdb store in ${root}`}`,
);
try {
  for (const c of concurrencies) {
    const dir = join(root, `c${c}`);
    const store: EngineStore = driver === 'redis' ? createRedisStore({ prefix: `${prefix}c${c}:` }) : createLowdbStore({ dir });
    const bus = createBus();
    let events = 0;
    bus.on('item:finished', () => events++);
    const engine = createEngine({ store, registry, bus, clientFor: () => ({}) as InstanceApi, baseDir: root });
    const t0 = performance.now();
    const { runId, done } = await engine.start(benchFlow(c));
    const run = await done;
    const ms = performance.now() - t0;
    // Read back what was recorded, as a resume would.
    const recorded = await store.getItems(runId, 'each');
    await store.close();
    const logFile = join(dir, 'runs', runId, 'items.jsonl');
    const lines = driver === 'redis' ? recorded.size : (await readRecords<{ index: number }>(logFile, 'skip-and-report')).records.length;
    if (run.status !== 'succeeded' || run.itemsDone !== items || recorded.size !== items || lines !== items || events !== items) {
      throw new Error(
        `bench run wrong: ${JSON.stringify({ status: run.status, done: run.itemsDone, recorded: recorded.size, lines, events })}`,
      );
    }
    const rate = Math.round(items / (ms / 1000));
    console.log(
      `concurrency ${String(c).padStart(3)}: ${(ms / 1000).toFixed(2)} s, ${rate.toLocaleString('en-US')} items/s, ` +
        (driver === 'redis' ? '' : `item log ${((await stat(logFile)).size / 1e6).toFixed(1)} MB, `) +
        `RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`,
    );
  }
  console.log(`RSS at the end: ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`);
} finally {
  if (!values.dir) await rm(root, { recursive: true, force: true });
  if (driver === 'redis') {
    await deleteKeys(prefix, 'redis://127.0.0.1:6379');
  }
}
