/**
 * `GET /metrics`: Prometheus text through prom-client. Counters follow the
 * engine bus (what this process did since it started); gauges are read at
 * scrape time (run history by flow and status, pauses, send queues). Labels
 * are config names, flow names, actions, API methods and error codes: never a
 * token or an instance id.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { EngineBus, EngineEventName, EngineEvents } from '../engine/events.js';
import type { PauseRecord } from '../engine/run/pauses.js';
import type { RunRecord } from '../store/types.js';

export interface UiMetricsOptions {
  bus: EngineBus;
  /** Every run record known (see RunIndex.all). */
  runs: () => Promise<RunRecord[]>;
  /** The instance-wide pause records (engine/run/pauses.ts listPauses). */
  pauses: () => Promise<Array<[string, Partial<PauseRecord>]>>;
  /** Each instance's send-queue length by config name (cached answers of showMessagesQueue); instances absent are not known. */
  sendQueues?: () => Promise<Record<string, number>>;
  now?: () => number;
}

export interface UiMetrics {
  readonly registry: Registry;
  /** Prometheus text exposition. */
  render(): Promise<string>;
  close(): void;
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
      for (const [, p] of await opts.pauses()) {
        if (typeof p?.until === 'number' && p.until > t) this.inc({ instance: p.instance ?? 'unknown', scope: p.scope ?? 'unknown' });
      }
    },
  });
  const sendQueues = opts.sendQueues;
  if (!sendQueues) return;
  new Gauge({
    name: 'msgflow_send_queue_length',
    help: "Messages waiting in each instance's send queue (showMessagesQueue, asked at most every few seconds), by instance config name",
    labelNames: ['instance'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [instance, n] of Object.entries(await sendQueues())) this.set({ instance }, n);
    },
  });
}

/** The counters the bus feeds, by the key busHandlers uses. */
const COUNTERS = {
  runsFinished: {
    name: 'msgflow_runs_finished_total',
    help: 'Runs that ended in this process, by flow and outcome',
    labelNames: ['flow', 'status'],
  },
  items: {
    name: 'msgflow_items_total',
    help: 'Items processed by finished steps in this process, by action (job) and outcome',
    labelNames: ['action', 'outcome'],
  },
  waits: { name: 'msgflow_waits_total', help: 'Durable waits entered (rate-limit pauses, send windows), by flow', labelNames: ['flow'] },
  retries: { name: 'msgflow_step_retries_total', help: 'Step attempts retried, by flow', labelNames: ['flow'] },
  apiCalls: {
    name: 'msgflow_api_calls_total',
    help: 'Instance API calls made through the configured clients (after their retries), by instance config name, method and outcome (ok or the error code)',
    labelNames: ['instance', 'method', 'outcome'],
  },
  runsDeleted: {
    name: 'msgflow_runs_deleted_total',
    help: 'Finished runs the retention (config.yaml store.retention) deleted in this process, by flow',
    labelNames: ['flow'],
  },
  rateLimitWaits: {
    name: 'msgflow_rate_limit_waits_total',
    help: 'Calls the instance answered with a rate limit (HTTP 429, or checkAccount rate_limit_exceeded that pauses the checks), by instance config name and method',
    labelNames: ['instance', 'method'],
  },
} as const;

/** The error codes of a rate-limit answer (src/api/errors.ts RateLimitError). */
const RATE_LIMIT_CODES = new Set(['TOO_MANY_REQUESTS', 'CHECK_ACCOUNT_RATE_LIMIT']);

type Counters = { [K in keyof typeof COUNTERS]: Counter<(typeof COUNTERS)[K]['labelNames'][number]> } & {
  notificationLag: Histogram<'instance'>;
};

function defineCounters(registry: Registry): Counters {
  const out: Record<string, Counter<string> | Histogram<string>> = {};
  for (const [key, def] of Object.entries(COUNTERS))
    out[key] = new Counter({ ...def, labelNames: [...def.labelNames], registers: [registry] });
  out.notificationLag = new Histogram({
    name: 'msgflow_notification_lag_seconds',
    help: "Time from a notification's own timestamp to its receipt by the daemon, by instance config name",
    labelNames: ['instance'],
    buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900],
    registers: [registry],
  });
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
    'api:call': (e) => {
      c.apiCalls.inc({ instance: e.instance, method: e.method, outcome: e.outcome });
      if (RATE_LIMIT_CODES.has(e.outcome)) c.rateLimitWaits.inc({ instance: e.instance, method: e.method });
    },
    'runs:deleted': (e) => {
      for (const [flow, n] of Object.entries(e.byFlow)) c.runsDeleted.inc({ flow }, n);
    },
    'notification:received': (e) => c.notificationLag.observe({ instance: e.instance }, Math.max(0, e.lagMs) / 1000),
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
