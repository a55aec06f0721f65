/**
 * Traces across BullMQ: a run's forEach items, worked by a BullMQ worker
 * (in-process, over the real Redis server), are spans of the run's trace
 * under their step's span: each job carries the step span's traceparent.
 */
import { randomBytes } from 'node:crypto';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { InstanceApi } from '../../src/api/types.js';
import { createBus } from '../../src/engine/events.js';
import { BullmqExecutor } from '../../src/runtime/bullmq/executor.js';
import { ItemHost } from '../../src/runtime/bullmq/item-host.js';
import type { WorkerDeps } from '../../src/runtime/bullmq/run-context.js';
import { StepHost } from '../../src/runtime/bullmq/step-host.js';
import { bullmqConnection } from '../../src/runtime/bullmq/names.js';
import { workQueue } from '../../src/runtime/bullmq/workers.js';
import { openTelemetry, runTraceIds } from '../../src/runtime/telemetry.js';
import { createStore } from '../../src/store/create.js';
import { systemClock } from '../../src/util/clock.js';
import { action, flow, registryWith, step, testEngine } from '../engine-run/helpers.js';
import { redisUrl } from '../support/redis.js';
import { redisOrSkip } from './helpers.js';
import { deleteKeys } from '../support/redis.js';

let redis = false;
beforeAll(async () => void (redis = await redisOrSkip()));
const silent = { debug() {}, info() {}, warn() {}, error() {} };
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe('traces with executor bullmq', () => {
  it("items worked by a BullMQ worker are spans of the run's trace, under their step's span", async (t) => {
    if (!redis) return t.skip();
    const exporter = new InMemorySpanExporter();
    const telemetry = openTelemetry({ otlp: 'http://127.0.0.1:9/v1/traces', exporter });
    const registry = registryWith(action('double', async (_ctx, input) => Number(input.n) * 2, z.object({ n: z.number() })));
    const f = flow([step({ id: 'dbl', uses: 'double', forEach: '${{ inputs.list }}', concurrency: 3, with: { n: '${{ item }}' } })], {
      name: 'doubles',
      inputs: { list: { default: [1, 2, 3] } as never },
    });
    const prefix = `msgflow-test-traces-${randomBytes(4).toString('hex')}`;
    const store = createStore({ driver: 'redis', url: redisUrl, prefix: `${prefix}:`, dir: '' }, '/tmp');
    const target = { url: redisUrl, prefix: `${prefix}-bull` };
    const executor = new BullmqExecutor({ target, store, identityFor: (n) => n });
    const deps: WorkerDeps = {
      store,
      bus: createBus(),
      clock: systemClock,
      registry,
      logger: silent,
      clientFor: () => ({}) as InstanceApi,
      identityFor: (n) => n,
      flows: () => new Map([[f.name, f]]),
      baseDir: '/project',
      defaultRateLimitWaitMs: 100,
      journalLagMs: 120_000,
      tracer: telemetry.tracer,
    };
    const host = { items: new ItemHost(deps), steps: new StepHost(deps) };
    const conns: ReturnType<typeof bullmqConnection>[] = [];
    const worker = workQueue(host, 'default', {
      connection: () => (conns.push(bullmqConnection(redisUrl)), conns.at(-1)!),
      prefix: target.prefix,
      concurrency: 3,
      limiter: { max: 1e9, duration: 1000 },
      lockDurationMs: 2000,
      stalledIntervalMs: 1000,
      label: 'test',
      logger: silent,
    });
    cleanups.push(async () => {
      await worker.close();
      await executor.close();
      for (const c of conns) c.disconnect();
      await store.close();
      await deleteKeys(prefix);
      await telemetry.shutdown();
    });
    const { engine } = testEngine(registry, { store, executor, tracer: telemetry.tracer });
    const { runId, done } = await engine.start(f);
    expect((await done).status).toBe('succeeded');
    await telemetry.flush();
    const spans = exporter.getFinishedSpans();
    const stepSpan = spans.find((s) => s.name === 'step dbl')!;
    const items = spans.filter((s) => s.name.startsWith('item '));
    expect(items).toHaveLength(3);
    for (const i of items) {
      expect(i.spanContext().traceId).toBe(runTraceIds(runId).traceId);
      expect(i.parentSpanContext?.spanId).toBe(stepSpan.spanContext().spanId);
      expect(i.attributes['msgflow.worker']).toBe(true);
    }
  });
});
