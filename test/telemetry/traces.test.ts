/** OpenTelemetry traces (config.yaml telemetry:): read back from the SDK's in-memory exporter and from an OTLP/HTTP receiver. */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { openTelemetry, runTraceIds } from '../../src/runtime/telemetry.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { ManualClock } from '../../src/util/clock.js';
import { action, flow, registryWith, step, testEngine } from '../engine-run/helpers.js';
import { waitFor } from '../support/wait.js';
import { createRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { cli } from '../support/cli.js';
import { LOCAL_CONFIG, project } from '../support/project.js';

const TOKEN = 'cli-test-token-9f3a';
const PROMO = 'PROMO-7f3e9c1d55ab';
const ID = '1101000001';

const FLOW = `name: traced
instance: default
inputs:
  phones: { value: ["79001112233", "79005550000"] }
steps:
  - id: check
    uses: checkAccount
    forEach: \${{ inputs.phones }}
    with: { phoneNumber: "\${{ item }}" }
  - id: hello
    uses: sendMessage
    with: { chatId: "79001112233@c.us", message: "hi" }
`;

const opened: Runtime[] = [];
afterEach(async () => {
  for (const r of opened.splice(0)) await r.close();
});

const attr = (s: ReadableSpan, k: string) => s.attributes[k];
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

describe('traces', () => {
  it('a run is a trace: steps and items are spans under it, each client call a span with its method, instance name and outcome', async () => {
    const dir = project({
      'config.yaml': `${LOCAL_CONFIG}telemetry: { otlp: "http://127.0.0.1:9/v1/traces" }\n`,
      'flows/traced.yaml': FLOW,
    });
    const exporter = new InMemorySpanExporter();
    const runtime = await createRuntime({ config: loadConfig(path.join(dir, 'config.yaml')), command: 'test', spanExporter: exporter });
    opened.push(runtime);
    const flow = runtime.flows().flows.find((f) => f.name === 'traced')!;
    const { runId, done } = await runtime.engine.start(flow);
    expect((await done).status).toBe('succeeded');
    await runtime.telemetry!.flush();
    const spans = exporter.getFinishedSpans();

    const run = spans.find((s) => s.name === 'run traced')!;
    expect(run.spanContext()).toMatchObject(runTraceIds(runId));
    expect(parentOf(run)).toBeUndefined();
    expect(run.attributes).toMatchObject({ 'msgflow.run': runId, 'msgflow.flow': 'traced', 'msgflow.status': 'succeeded' });
    for (const s of spans) expect(s.spanContext().traceId).toBe(run.spanContext().traceId);

    const check = spans.find((s) => s.name === 'step check')!;
    const hello = spans.find((s) => s.name === 'step hello')!;
    expect(parentOf(check)).toBe(run.spanContext().spanId);
    expect(parentOf(hello)).toBe(run.spanContext().spanId);
    const items = spans.filter((s) => s.name.startsWith('item '));
    expect(items.map((s) => attr(s, 'msgflow.item')).sort()).toEqual([0, 1]);
    for (const i of items) expect(parentOf(i)).toBe(check.spanContext().spanId);

    const calls = spans.filter((s) => s.name.startsWith('api '));
    expect(calls.map((s) => s.name).sort()).toEqual(['api checkAccount', 'api checkAccount', 'api sendMessage']);
    for (const c of calls) expect(c.attributes).toMatchObject({ 'msgflow.instance': 'default', 'msgflow.outcome': 'ok' });
    expect(items.map((i) => i.spanContext().spanId)).toEqual(
      expect.arrayContaining(calls.filter((c) => c.name === 'api checkAccount').map(parentOf)),
    );
    expect(parentOf(calls.find((c) => c.name === 'api sendMessage')!)).toBe(hello.spanContext().spanId);

    // Never the instance's token or id, anywhere in what is exported.
    const text = JSON.stringify(spans.map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })));
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(ID);
  });

  it('a failed call is a span with its error code; the step and the run are marked failed', async () => {
    const dir = project({
      'config.yaml': `${LOCAL_CONFIG}telemetry: { otlp: "http://127.0.0.1:9/v1/traces" }\n`,
      'flows/bad.yaml':
        'name: bad\nsteps:\n  - { id: send, uses: getMessage, with: { chatId: "79001112233@c.us", idMessage: BAE5F4886C1F4A2B9C3D } }\n',
    });
    const exporter = new InMemorySpanExporter();
    const runtime = await createRuntime({ config: loadConfig(path.join(dir, 'config.yaml')), command: 'test', spanExporter: exporter });
    opened.push(runtime);
    const { done } = await runtime.engine.start(runtime.flows().flows[0]!);
    const run = await done;
    expect(run.status).toBe('failed');
    await runtime.telemetry!.flush();
    const spans = exporter.getFinishedSpans();
    const call = spans.find((s) => s.name === 'api getMessage')!;
    expect(call.status.code).toBe(2); // ERROR
    expect(call.attributes['msgflow.outcome']).toBe(call.attributes['error.type']);
    expect(spans.find((s) => s.name === 'step send')!.status.code).toBe(2);
    expect(spans.find((s) => s.name === 'run bad')!.attributes['msgflow.status']).toBe('failed');
  });

  it('msgflow run exports its spans to the OTLP/HTTP endpoint of telemetry.otlp', async () => {
    const bodies: Array<{ path: string; type: string; body: string }> = [];
    const receiver = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        bodies.push({ path: req.url ?? '', type: String(req.headers['content-type']), body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    try {
      const { port } = receiver.address() as AddressInfo;
      const vault = project({ 'bot.env': `PROMO_CODE=${PROMO}\n` }, 'msgflow-trace-secrets-');
      const dir = project({
        'config.yaml': `${LOCAL_CONFIG}telemetry: { otlp: "http://127.0.0.1:${port}/v1/traces", serviceName: bot-7 }\nsecrets: { file: ${path.join(vault, 'bot.env')} }\n`,
        'flows/traced.yaml': `${FLOW}  - id: promo\n    uses: sendMessage\n    with: { chatId: "79001112233@c.us", message: "code \${{ secrets.PROMO_CODE }}" }\n`,
      });
      const r = await cli(['run', 'traced'], dir);
      expect(r.code, r.stderr).toBe(0);
      expect(bodies.length).toBeGreaterThan(0);
      expect(bodies[0]).toMatchObject({ path: '/v1/traces', type: expect.stringContaining('application/json') });
      const exported = bodies.map((b) => JSON.parse(b.body) as OtlpExport);
      const service = exported[0]!.resourceSpans[0]!.resource.attributes.find((a) => a.key === 'service.name');
      expect(service?.value.stringValue).toBe('bot-7');
      const names = exported.flatMap((e) => e.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans.map((s) => s.name))));
      expect(names).toEqual(expect.arrayContaining(['run traced', 'step check', 'step hello', 'item 0', 'item 1', 'api sendMessage']));
      expect(names).toContain('step promo');
      // Neither the instance's token and id nor a secret a step used.
      for (const b of bodies) {
        expect(b.body).not.toContain(TOKEN);
        expect(b.body).not.toContain(ID);
        expect(b.body).not.toContain(PROMO);
      }
    } finally {
      await new Promise((r) => receiver.close(r));
    }
  });

  it('a run resumed after a stop, by another engine, goes on in the same trace: a span under its first execution', async () => {
    const exporter = new InMemorySpanExporter();
    const telemetry = openTelemetry({ otlp: 'http://127.0.0.1:9/v1/traces', exporter });
    const clock = new ManualClock(Date.UTC(2026, 0, 5, 9));
    const hold = action('hold', async (ctx) => {
      await ctx.wait({ ms: 3_600_000, reason: 'holding' });
      return {};
    });
    const f = flow([step({ id: 'h', uses: 'hold' })], { name: 'held' });
    const store = createMemoryStore();
    const first = testEngine(registryWith(hold), { clock, store, tracer: telemetry.tracer, shutdownGraceMs: 100 }).engine;
    const { runId } = await first.start(f);
    await waitFor('the run waits', async () => (await first.getRun(runId))?.status === 'waiting');
    await first.shutdown();
    const second = testEngine(registryWith(hold), { clock, store, tracer: telemetry.tracer }).engine;
    const [h] = await second.resumeUnfinished([f]);
    await waitFor('the resumed run waits', async () => (await second.getRun(runId))?.status === 'waiting');
    await clock.advance(3_600_000);
    expect((await h!.done).status).toBe('succeeded');
    await telemetry.flush();
    const spans = exporter.getFinishedSpans();
    const ids = runTraceIds(runId);
    const firstRun = spans.find((s) => s.name === 'run held')!;
    const resumed = spans.find((s) => s.name === 'run held (resumed)')!;
    expect(firstRun.spanContext()).toMatchObject(ids);
    expect(firstRun.attributes['msgflow.status']).toBe('interrupted');
    expect(resumed.spanContext().traceId).toBe(ids.traceId);
    expect(parentOf(resumed)).toBe(ids.spanId);
    expect(resumed.attributes['msgflow.status']).toBe('succeeded');
    await telemetry.shutdown();
  });

  it('refuses a telemetry.otlp that is not an http(s) URL, naming where', async () => {
    const dir = project({ 'config.yaml': `${LOCAL_CONFIG}telemetry: { otlp: "collector:4318" }\n` });
    const r = await cli(['validate'], dir);
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toMatch(/config\.yaml:\d+:\d+ telemetry\.otlp: expected an http\(s\) URL of an OTLP\/HTTP traces endpoint/);
  });
});

interface OtlpExport {
  resourceSpans: Array<{
    resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
    scopeSpans: Array<{ spans: Array<{ name: string }> }>;
  }>;
}
