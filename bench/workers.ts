/**
 * The BullMQ executor's throughput, through the real runtime
 * (createRuntime over a generated config.yaml, redis store, executor bullmq)
 * against the Redis server of MSGFLOW_BENCH_REDIS_URL (default
 * redis://127.0.0.1:6379), under a fresh key prefix deleted at the end.
 *
 *   npm run bench:workers -- [--items 2000] [--noop-items 5000]
 *
 * 1. I/O-bound: a forEach whose action waits 20 ms, worked by 1, 2 and 4
 *    workers of concurrency 8 (each worker its own runtime: its own store and
 *    queue connections, as a `msgflow worker` process has; they share this
 *    process's CPU). Ideal: 8 / 20 ms = 400 items/s per worker.
 * 2. Overhead: a no-op action, one worker of concurrency 8, against the local
 *    executor (concurrency 8) on the same store; the difference in ms per item
 *    is what the queue costs.
 *
 * Items/s are measured from engine.start to the run's end, as a user sees it;
 * the no-op rows also give the CPU time (user + system) of this process per
 * item, the run and its worker together: steadier than items/s on a loaded
 * machine (compare two trees alternated in one session).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/load.js';
import { createRuntime, type Runtime } from '../src/runtime/runtime.js';
import { startItemWorkers, type ItemWorkers } from '../src/runtime/bullmq/workers.js';
import { deleteKeys } from '../test/support/redis.js';

const { values } = parseArgs({
  options: { items: { type: 'string', default: '2000' }, 'noop-items': { type: 'string', default: '5000' } },
});
const ITEMS = Number(values.items);
const NOOP_ITEMS = Number(values['noop-items']);
const REDIS = process.env.MSGFLOW_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PLUGIN = fileURLToPath(new URL('./workers-plugin.ts', import.meta.url));
const silent = { debug() {}, info() {}, warn() {}, error() {} };

async function project(dir: string, prefix: string, driver: 'bullmq' | 'local'): Promise<string> {
  const file = path.join(dir, `config-${driver}.yaml`);
  await writeFile(
    file,
    `instances:
  default: { apiUrl: "http://127.0.0.1:9", idInstance: "1101000001", apiTokenInstance: "bench-token", rateLimit: false }
flowsDir: flows
logLevel: error
plugins: ["${PLUGIN}"]
store: { driver: redis, url: "${REDIS}", prefix: "${prefix}:" }
executor: { driver: ${driver}, prefix: "${prefix}-bull" }
`,
  );
  return file;
}

async function flows(dir: string): Promise<void> {
  const { mkdir } = await import('node:fs/promises');
  await mkdir(path.join(dir, 'flows'), { recursive: true });
  const flow = (name: string, n: number, uses: string, w: string) => `name: ${name}
instance: default
steps:
  - id: items
    uses: ${uses}
    concurrency: 8
    forEach: \${{ split(inputs.list, ",") }}
    with: ${w}
inputs:
  list: { default: "${Array.from({ length: n }, (_, i) => i).join(',')}" }
`;
  await writeFile(path.join(dir, 'flows/wait.yaml'), flow('wait', ITEMS, 'bench.wait', '{ ms: 20 }'));
  await writeFile(path.join(dir, 'flows/noop.yaml'), flow('noop', NOOP_ITEMS, 'bench.noop', '{}'));
}

async function runFlow(rt: Runtime, name: string): Promise<{ itemsPerSec: number; n: number; ms: number; cpuUsPerItem: number }> {
  const flow = rt.flows().flows.find((f) => f.name === name)!;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const h = await rt.engine.start(flow);
  const run = await h.done;
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  if (run.status !== 'succeeded') throw new Error(`run ${run.id} ${run.status}: ${run.error?.message ?? ''}`);
  return { itemsPerSec: (run.itemsDone * 1000) / ms, n: run.itemsDone, ms, cpuUsPerItem: (cpu.user + cpu.system) / run.itemsDone };
}

async function withWorkers<T>(file: string, count: number, f: () => Promise<T>): Promise<T> {
  const rts: Runtime[] = [];
  const ws: ItemWorkers[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const rt = await createRuntime({ config: loadConfig(file), command: 'worker', logger: silent });
      rts.push(rt);
      ws.push(await startItemWorkers({ runtime: rt, concurrency: 8, logger: silent }));
    }
    return await f();
  } finally {
    for (const w of ws) await w.close();
    for (const rt of rts) await rt.close();
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'msgflow-bench-workers-'));
  const prefix = `msgflow-bench-workers-${process.pid}`;
  await flows(dir);
  const bull = await project(dir, prefix, 'bullmq');
  const local = await project(dir, prefix, 'local');
  const coord = await createRuntime({ config: loadConfig(bull), command: 'run', logger: silent });
  const rows: string[] = [];
  try {
    const io: Record<number, number> = {};
    for (const k of [1, 2, 4]) {
      const r = await withWorkers(bull, k, () => runFlow(coord, 'wait'));
      io[k] = r.itemsPerSec;
      rows.push(
        `| 20 ms action | bullmq, ${k} worker${k > 1 ? 's' : ''} × 8 | ${r.n} | ${r.itemsPerSec.toFixed(0)} | ${(r.itemsPerSec / io[1]!).toFixed(2)}× |`,
      );
    }
    const noop = await withWorkers(bull, 1, () => runFlow(coord, 'noop'));
    const lrt = await createRuntime({ config: loadConfig(local), command: 'run', logger: silent });
    const loc = await runFlow(lrt, 'noop').finally(() => lrt.close());
    const overhead = 1000 / noop.itemsPerSec - 1000 / loc.itemsPerSec;
    rows.push(
      `| no-op action | local executor × 8 | ${loc.n} | ${loc.itemsPerSec.toFixed(0)} | CPU ${loc.cpuUsPerItem.toFixed(0)} µs/item |`,
    );
    rows.push(
      `| no-op action | bullmq, 1 worker × 8 | ${noop.n} | ${noop.itemsPerSec.toFixed(0)} | +${overhead.toFixed(2)} ms/item, CPU ${noop.cpuUsPerItem.toFixed(0)} µs/item |`,
    );
  } finally {
    await coord.close();
    await cleanup(prefix);
    await rm(dir, { recursive: true, force: true });
  }
  console.log('| flow | executor | items | items/s | vs 1 worker / overhead |');
  console.log('|---|---|---:|---:|---|');
  for (const r of rows) console.log(r);
}

async function cleanup(prefix: string): Promise<void> {
  await deleteKeys(prefix, REDIS);
}

await main();
