/**
 * `GET /metrics`: Prometheus text through prom-client. Counters follow the
 * engine bus (what this process did since it started); gauges are read at
 * scrape time (run history by flow and status, pauses). Labels are config
 * names, flow names, actions, API methods and status codes: never a token or
 * an instance id.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { EngineBus, EngineEventName, EngineEvents } from '../engine/events.js';
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
  // A registry per server, not prom-client's global one: two servers in one process (tests) must not collide.
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'msgflow_process_' });
  defineGauges(registry, opts, opts.now ?? Date.now);
  const unsubscribe = subscribe(opts.bus, busHandlers(defineCounters(registry)));
  return {
    registry,
    render: () => registry.metrics(),
    close: unsubscribe,
  };
}

/** Gauges read at scrape time: the run history by flow and status, the pauses in force. */
function defineGauges(registry: Registry, opts: UiMetricsOptions, now: () => number): void {
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
}

/** The counters the bus feeds, by the key busHandlers uses. */
const COUNTERS = {
  runsFinished: { name: 'msgflow_runs_finished_total', help: 'Runs that ended in this process, by flow and outcome', labelNames: ['flow', 'status'] },
  items: { name: 'msgflow_items_total', help: 'Items processed by finished steps in this process, by action (job) and outcome', labelNames: ['action', 'outcome'] },
  waits: { name: 'msgflow_waits_total', help: 'Durable waits entered (rate-limit pauses, send windows), by flow', labelNames: ['flow'] },
  retries: { name: 'msgflow_step_retries_total', help: 'Step attempts retried, by flow', labelNames: ['flow'] },
  apiCalls: {
    name: 'msgflow_api_calls_total',
    help: "Instance API attempts, by method and HTTP status (or error code); counted when the clients' logger feeds the bus",
    labelNames: ['method', 'status'],
  },
} as const;

type Counters = { [K in keyof typeof COUNTERS]: Counter<(typeof COUNTERS)[K]['labelNames'][number]> };

function defineCounters(registry: Registry): Counters {
  const out: Record<string, Counter<string>> = {};
  for (const [key, def] of Object.entries(COUNTERS)) out[key] = new Counter({ ...def, labelNames: [...def.labelNames], registers: [registry] });
  return out as Counters;
}

type BusHandlers = { [E in EngineEventName]?: (...args: EngineEvents[E]) => void };

/** What each bus event adds to the counters. */
function busHandlers(c: Counters): BusHandlers {
  // step:finished names no action; step:started does.
  const actionOf = new Map<string, string>();
  return {
    'step:started': (e) => void actionOf.set(`${e.runId}\u0000${e.step}`, e.action),
    'step:finished': (e) => {
      const key = `${e.runId}\u0000${e.step}`;
      const action = actionOf.get(key) ?? 'unknown';
      actionOf.delete(key);
      if (e.status === 'skipped') return;
      c.items.inc({ action, outcome: 'done' }, e.done);
      c.items.inc({ action, outcome: 'failed' }, e.failed);
    },
    'run:finished': (e) => c.runsFinished.inc({ flow: e.flow, status: 'succeeded' }),
    'run:failed': (e) => c.runsFinished.inc({ flow: e.flow, status: 'failed' }),
    'run:interrupted': (e) => c.runsFinished.inc({ flow: e.flow, status: 'interrupted' }),
    'run:waiting': (e) => c.waits.inc({ flow: e.flow }),
    'step:retry': (e) => c.retries.inc({ flow: e.flow }),
    log: (e) => {
      const f = e.fields;
      if (!f || typeof f.method !== 'string' || typeof f.attempt !== 'number' || !('path' in f)) return;
      const status = typeof f.status === 'number' ? String(f.status) : typeof f.code === 'string' ? f.code : 'unknown';
      c.apiCalls.inc({ method: f.method, status });
    },
  };
}

/** Subscribes every handler; the answer unsubscribes them all. */
function subscribe(bus: EngineBus, handlers: BusHandlers): () => void {
  const entries = Object.entries(handlers) as Array<[EngineEventName, (...args: any[]) => void]>;
  for (const [name, fn] of entries) bus.on(name, fn);
  return () => {
    for (const [name, fn] of entries) bus.off(name, fn);
  };
}
