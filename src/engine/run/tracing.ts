/**
 * What the engine tells a tracer, in its own terms: a run is a trace, its
 * steps and forEach items spans under the run's, each client call a span
 * under its unit's (interceptors/tracing.ts). runtime/telemetry.ts implements
 * it over OpenTelemetry when config.yaml has `telemetry:`; without it the
 * engine traces nothing and loads no tracing code.
 */

/** Attribute values a span takes. */
export type TraceAttributes = Record<string, string | number | boolean>;

/** One span, open until `end`. */
export interface TraceSpan {
  /** A span under this one, started now. */
  child(name: string, attributes?: TraceAttributes): TraceSpan;
  setAttributes(attributes: TraceAttributes): void;
  /** Ends the span; `error` marks it failed with its catalogue code (never a message: it may quote a request). */
  end(outcome?: { error?: { code?: string } }): void;
  /** The span's W3C trace context (`traceparent`), for work another process does under it (a BullMQ job). */
  carrier(): Record<string, string>;
}

export interface EngineTracer {
  /**
   * The span of a run: every execution of the run (a resume after a crash
   * too) lands in one trace, derived from the run id.
   */
  run(runId: string, attributes: TraceAttributes): TraceSpan;
  /** A span under a carrier's (a BullMQ job's item, worked in another process than its run). */
  continue(carrier: Record<string, string>, name: string, attributes?: TraceAttributes): TraceSpan;
}
