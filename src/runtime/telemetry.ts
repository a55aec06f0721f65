/**
 * Traces over OpenTelemetry (config.yaml `telemetry: { otlp: URL }`): the
 * engine's tracer (engine/run/tracing.ts) with the official SDK, exporting
 * OTLP/HTTP (JSON) to the collector's URL. Loaded only when telemetry is on
 * (runtime.ts imports this module dynamically): `msgflow --version` and every
 * untraced process never load the SDK.
 *
 * A run is one trace whose id is derived from the run id: the run's first
 * execution is the trace's root span, and each resume (after a crash, in any
 * process) a span under it, so a run killed and resumed reads as one trace.
 * Spans carry config names (flow, step, instance), never an instance's id or
 * token, and error codes, never messages.
 */
import { createHash } from 'node:crypto';
import { ROOT_CONTEXT, SpanStatusCode, TraceFlags, trace, type Span, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  RandomIdGenerator,
  type IdGenerator,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import type { EngineTracer, TraceAttributes, TraceSpan } from '../engine/run/tracing.js';

export interface TelemetryOptions {
  /** OTLP/HTTP traces endpoint, e.g. http://127.0.0.1:4318/v1/traces. */
  otlp: string;
  /** @default msgflow */
  serviceName?: string;
  /** Where spans go instead of the OTLP exporter (tests: the SDK's InMemorySpanExporter). */
  exporter?: SpanExporter;
}

export interface Telemetry {
  readonly tracer: EngineTracer;
  /** Exports what is buffered, then stops: the runtime's close. */
  shutdown(): Promise<void>;
  /** Exports what is buffered now. */
  flush(): Promise<void>;
}

const hex = (text: string, length: number) => createHash('sha256').update(text).digest('hex').slice(0, length);

/** The trace and root span ids of a run: the same run always gives the same. */
export function runTraceIds(runId: string): { traceId: string; spanId: string } {
  return { traceId: hex(`msgflow trace\n${runId}`, 32), spanId: hex(`msgflow run\n${runId}`, 16) };
}

/**
 * Random ids, except for the one span whose ids are decided before it
 * starts (a run's root): the SDK asks the generator synchronously inside
 * startSpan, so `next` set just before is what that span gets.
 */
class RunIdGenerator implements IdGenerator {
  nextTraceId: string | undefined;
  nextSpanId: string | undefined;
  private readonly random = new RandomIdGenerator();
  generateTraceId(): string {
    const id = this.nextTraceId ?? this.random.generateTraceId();
    this.nextTraceId = undefined;
    return id;
  }
  generateSpanId(): string {
    const id = this.nextSpanId ?? this.random.generateSpanId();
    this.nextSpanId = undefined;
    return id;
  }
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

class OtelSpan implements TraceSpan {
  constructor(
    private readonly tracer: Tracer,
    readonly span: Span,
  ) {}

  child(name: string, attributes?: TraceAttributes): TraceSpan {
    return new OtelSpan(this.tracer, this.tracer.startSpan(name, { attributes }, trace.setSpan(ROOT_CONTEXT, this.span)));
  }

  setAttributes(attributes: TraceAttributes): void {
    this.span.setAttributes(attributes);
  }

  end(outcome?: { error?: { code?: string } }): void {
    if (outcome?.error) {
      this.span.setAttribute('error.type', outcome.error.code ?? 'ERROR');
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error.code ?? 'ERROR' });
    } else this.span.setStatus({ code: SpanStatusCode.OK });
    this.span.end();
  }

  carrier(): Record<string, string> {
    const c = this.span.spanContext();
    return { traceparent: `00-${c.traceId}-${c.spanId}-0${c.traceFlags & TraceFlags.SAMPLED}` };
  }
}

/** Opens the tracer provider and its exporter. */
export function openTelemetry(o: TelemetryOptions): Telemetry {
  const ids = new RunIdGenerator();
  const exporter = o.exporter ?? new OTLPTraceExporter({ url: o.otlp });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': o.serviceName ?? 'msgflow' }),
    idGenerator: ids,
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1000 })],
  });
  const tracer = provider.getTracer('msgflow');
  const engineTracer: EngineTracer = {
    run(runId, attributes) {
      const root = runTraceIds(runId);
      if (attributes['msgflow.trigger'] !== 'resume') {
        ids.nextTraceId = root.traceId;
        ids.nextSpanId = root.spanId;
        return new OtelSpan(tracer, tracer.startSpan(`run ${String(attributes['msgflow.flow'] ?? runId)}`, { attributes }, ROOT_CONTEXT));
      }
      // A resume: a span under the run's first execution, in its trace.
      const parent = trace.setSpanContext(ROOT_CONTEXT, { ...root, traceFlags: TraceFlags.SAMPLED, isRemote: true });
      return new OtelSpan(tracer, tracer.startSpan(`run ${String(attributes['msgflow.flow'] ?? runId)} (resumed)`, { attributes }, parent));
    },
    continue(carrier, name, attributes) {
      const m = TRACEPARENT.exec(carrier.traceparent ?? '');
      const parent = m
        ? trace.setSpanContext(ROOT_CONTEXT, { traceId: m[1]!, spanId: m[2]!, traceFlags: Number.parseInt(m[3]!, 16), isRemote: true })
        : ROOT_CONTEXT;
      return new OtelSpan(tracer, tracer.startSpan(name, { attributes }, parent));
    },
  };
  return {
    tracer: engineTracer,
    shutdown: () => provider.shutdown(),
    flush: () => provider.forceFlush(),
  };
}
