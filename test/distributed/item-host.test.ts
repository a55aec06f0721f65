/**
 * A BullMQ worker's side of a forEach item (runtime/bullmq/item-host.ts),
 * without Redis: what the item's action sees is built by the engine's own
 * unit context, so its log lines are kept with the run, and an instance-wide
 * pause hands the item back (its job goes back to the queue) without a call.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CHECK_ACCOUNT_PAUSE } from '../../src/actions/check-account-bulk.js';
import { createBus } from '../../src/engine/events.js';
import type { Flow } from '../../src/engine/flow/types.js';
import { raisePause } from '../../src/engine/run/pauses.js';
import { RUN_LOG_STREAM, type RunLogLine } from '../../src/engine/run/run-log.js';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import type { EngineTracer } from '../../src/engine/run/tracing.js';
import { ItemHost } from '../../src/runtime/bullmq/item-host.js';
import { openTelemetry, runTraceIds } from '../../src/runtime/telemetry.js';
import { buildRegistry } from '../../src/runtime/registry.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { EngineStore } from '../../src/store/types.js';
import { ManualClock } from '../../src/util/clock.js';
import { flow, step } from '../engine-run/helpers.js';
import { startLocal, T0, type LocalUnderTest } from '../support/local-service.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const HOUR = 3_600_000;

let open: LocalUnderTest[] = [];
afterEach(async () => {
  await Promise.all(open.map((l) => l.close()));
  open = [];
});

async function worker(f: Flow, items: unknown[], tracer?: EngineTracer) {
  const clock = new ManualClock(T0);
  const l = await startLocal({ clock });
  open.push(l);
  const store = createMemoryStore();
  const host = new ItemHost({
    store,
    bus: createBus(),
    clock,
    registry: await buildRegistry({ plugins: [], baseDir: l.dir }),
    logger: silent,
    clientFor: () => l.client,
    identityFor: () => 'local-test',
    flows: () => new Map([[f.name, f]]),
    baseDir: l.dir,
    defaultRateLimitWaitMs: 100,
    journalLagMs: 120_000,
    ...(tracer ? { tracer } : {}),
  });
  await startRun(store, f.name, items);
  return { l, store, host };
}

async function startRun(store: EngineStore, name: string, list: unknown[]): Promise<void> {
  await store.createRun({
    id: 'r1',
    flow: name,
    status: 'running',
    trigger: 'manual',
    dryRun: false,
    startedAt: T0,
    updatedAt: T0,
    itemsDone: 0,
    itemsFailed: 0,
    resumes: 0,
  });
  await store.saveInputs('r1', { list });
}

async function keptLines(store: EngineStore): Promise<string[]> {
  const out: string[] = [];
  for await (const line of store.readJournal<RunLogLine>('r1', RUN_LOG_STREAM)) out.push(`${line.level} ${line.message}`);
  return out;
}

describe('an item on a BullMQ worker', () => {
  it('keeps its log lines with the run, as the process driving the run does (msgflow runs show reads them)', async () => {
    const f = flow([step({ id: 'say', uses: 'log', forEach: '${{ inputs.list }}', with: { message: 'hello ${{ item }}' } })], {
      name: 'greets',
    });
    const { store, host } = await worker(f, ['Alice']);
    const r = await host.process({ runId: 'r1', step: 'say', index: 0, item: 'Alice' });
    expect(r).toMatchObject({ kind: 'recorded', result: { status: 'succeeded' } });
    expect(await keptLines(store)).toEqual(['info hello Alice']);
  });

  it("works a job that carries its step span's trace context in a span of the run's trace, its calls under it", async () => {
    const exporter = new InMemorySpanExporter();
    const telemetry = openTelemetry({ otlp: 'http://127.0.0.1:9/v1/traces', exporter });
    const f = flow([step({ id: 'check', uses: 'checkAccount', forEach: '${{ inputs.list }}', with: { phoneNumber: '${{ item }}' } })], {
      name: 'checks',
    });
    const { host } = await worker(f, [79001112233], telemetry.tracer);
    // The run's side: its span and the step's, whose context the executor puts in the job.
    const run = telemetry.tracer.run('r1', { 'msgflow.flow': 'checks' });
    const stepSpan = run.child('step check');
    const r = await host.process({ runId: 'r1', step: 'check', index: 0, item: 79001112233, trace: stepSpan.carrier() });
    expect(r).toMatchObject({ kind: 'recorded', result: { status: 'succeeded' } });
    stepSpan.end();
    run.end();
    await telemetry.flush();
    const spans = exporter.getFinishedSpans();
    const item = spans.find((s) => s.name === 'item 0')!;
    const call = spans.find((s) => s.name === 'api checkAccount')!;
    const stepDone = spans.find((s) => s.name === 'step check')!;
    expect(item.spanContext().traceId).toBe(runTraceIds('r1').traceId);
    expect(item.parentSpanContext?.spanId).toBe(stepDone.spanContext().spanId);
    expect(item.attributes).toMatchObject({ 'msgflow.item': 0, 'msgflow.worker': true });
    expect(call.parentSpanContext?.spanId).toBe(item.spanContext().spanId);
    expect(call.attributes).toMatchObject({ 'msgflow.method': 'checkAccount', 'msgflow.outcome': 'ok' });
    await telemetry.shutdown();
  });

  it("meeting the instance's checkAccount pause, goes back to the queue until it ends, without calling", async () => {
    const f = flow([step({ id: 'check', uses: 'checkAccount', forEach: '${{ inputs.list }}', with: { phoneNumber: '${{ item }}' } })], {
      name: 'checks',
    });
    const { l, store, host } = await worker(f, [79001112233]);
    await raisePause(store, { name: 'default', identity: 'local-test' }, CHECK_ACCOUNT_PAUSE, {
      since: T0,
      retryAfterMs: 0,
      minMs: 2 * HOUR,
    });
    const r = await host.process({ runId: 'r1', step: 'check', index: 0, item: 79001112233 });
    expect(r).toEqual({ kind: 'paused', ms: 2 * HOUR });
    expect(l.requests.filter((q) => q.method === 'checkAccount')).toHaveLength(0);
  });
});
