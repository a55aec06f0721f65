/**
 * `GET /metrics`: Prometheus text through prom-client. Counters follow the
 * engine bus (what this process did since it started); gauges are read at
 * scrape time (run history by flow and status, pauses). Labels are config
 * names, flow names, actions, API methods and status codes: never a token or
 * an instance id.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { EngineBus } from '../engine/events.js';
import type { DurableState, RunRecord } from '../store/types.js';

export interface UiMetricsOptions {
  bus: EngineBus;
  /** Every run record known (see RunIndex.all). */
  runs: () => Promise<RunRecord[]>;
  /** The shared `pauses` namespace. */
  pauses: DurableState;
  now?: () => number;
}

export interface UiMetrics {
  readonly registry: Registry;
  /** Prometheus text exposition. */
  render(): Promise<string>;
  close(): void;
}

interface PauseRecord {
  instance?: string;
  scope?: string;
  until?: number;
}

export function createUiMetrics(opts: UiMetricsOptions): UiMetrics {
  const now = opts.now ?? Date.now;
  // A registry per server, not prom-client's global one: two servers in one process (tests) must not collide.
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'msgflow_process_' });

  new Gauge({
    name: 'msgflow_runs',
    help: 'Runs in the store by flow and status',
    labelNames: ['flow', 'status'],
    registers: [registry],
    async collect() {
      this.reset();
      const counts = new Map<string, number>();
      for (const r of await opts.runs()) {
        const key = `${r.flow}\u0000${r.status}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      for (const [key, n] of counts) {
        const [flow, status] = key.split('\u0000');
        this.set({ flow: flow!, status: status! }, n);
      }
    },
  });
  new Gauge({
    name: 'msgflow_instance_pauses',
    help: 'Instance-wide pauses in force (e.g. checkAccount after rate_limit_exceeded), by instance config name and scope',
    labelNames: ['instance', 'scope'],
    registers: [registry],
    async collect() {
      this.reset();
      const t = now();
      for (const [, p] of await opts.pauses.entries<PauseRecord>()) {
        if (typeof p?.until === 'number' && p.until > t) this.inc({ instance: p.instance ?? 'unknown', scope: p.scope ?? 'unknown' });
      }
    },
  });

  const runsFinished = new Counter({
    name: 'msgflow_runs_finished_total',
    help: 'Runs that ended in this process, by flow and outcome',
    labelNames: ['flow', 'status'],
    registers: [registry],
  });
  const items = new Counter({
    name: 'msgflow_items_total',
    help: 'Items processed by finished steps in this process, by action (job) and outcome',
    labelNames: ['action', 'outcome'],
    registers: [registry],
  });
  const waits = new Counter({
    name: 'msgflow_waits_total',
    help: 'Durable waits entered (rate-limit pauses, send windows), by flow',
    labelNames: ['flow'],
    registers: [registry],
  });
  const retries = new Counter({
    name: 'msgflow_step_retries_total',
    help: 'Step attempts retried, by flow',
    labelNames: ['flow'],
    registers: [registry],
  });
  const apiCalls = new Counter({
    name: 'msgflow_api_calls_total',
    help: "Instance API attempts, by method and HTTP status (or error code); counted when the clients' logger feeds the bus",
    labelNames: ['method', 'status'],
    registers: [registry],
  });

  // step:finished names no action; step:started does.
  const actionOf = new Map<string, string>();
  const onStepStarted = (e: { runId: string; step: string; action: string }) => actionOf.set(`${e.runId}\u0000${e.step}`, e.action);
  const onStepFinished = (e: { runId: string; step: string; done: number; failed: number; status: string }) => {
    const key = `${e.runId}\u0000${e.step}`;
    const action = actionOf.get(key) ?? 'unknown';
    actionOf.delete(key);
    if (e.status === 'skipped') return;
    items.inc({ action, outcome: 'done' }, e.done);
    items.inc({ action, outcome: 'failed' }, e.failed);
  };
  const onFinished = (e: { flow: string }) => runsFinished.inc({ flow: e.flow, status: 'succeeded' });
  const onFailed = (e: { flow: string }) => runsFinished.inc({ flow: e.flow, status: 'failed' });
  const onInterrupted = (e: { flow: string }) => runsFinished.inc({ flow: e.flow, status: 'interrupted' });
  const onWaiting = (e: { flow: string }) => waits.inc({ flow: e.flow });
  const onRetry = (e: { flow: string }) => retries.inc({ flow: e.flow });
  const onLog = (e: { fields?: Record<string, unknown> }) => {
    const f = e.fields;
    if (!f || typeof f.method !== 'string' || typeof f.attempt !== 'number' || !('path' in f)) return;
    const status = typeof f.status === 'number' ? String(f.status) : typeof f.code === 'string' ? f.code : 'unknown';
    apiCalls.inc({ method: f.method, status });
  };
  opts.bus.on('step:started', onStepStarted);
  opts.bus.on('step:finished', onStepFinished);
  opts.bus.on('run:finished', onFinished);
  opts.bus.on('run:failed', onFailed);
  opts.bus.on('run:interrupted', onInterrupted);
  opts.bus.on('run:waiting', onWaiting);
  opts.bus.on('step:retry', onRetry);
  opts.bus.on('log', onLog);

  return {
    registry,
    render: () => registry.metrics(),
    close() {
      opts.bus.off('step:started', onStepStarted);
      opts.bus.off('step:finished', onStepFinished);
      opts.bus.off('run:finished', onFinished);
      opts.bus.off('run:failed', onFailed);
      opts.bus.off('run:interrupted', onInterrupted);
      opts.bus.off('run:waiting', onWaiting);
      opts.bus.off('step:retry', onRetry);
      opts.bus.off('log', onLog);
    },
  };
}
