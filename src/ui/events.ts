/**
 * `GET /api/events`: server-sent events for the pages. Two sources feed it:
 * the engine bus (runs of this process, at once) and the run index's poll of
 * the store (runs of other processes: a `msgflow run` in a terminal beside
 * the daemon, or everything when the server is `msgflow ui`). Step progress
 * is coalesced per run and step and sent at most every `throttleMs`, so a
 * 100,000-item step costs the browser a few events a second, not 100,000.
 *
 * Events (each `data:` is JSON):
 * - `run`: a run summary (see toRunSummary) whenever its status or counts change;
 * - `step`: `{ runId, flow, step, action?, status?, done, total?, failed? }`.
 */
import type { ServerResponse } from 'node:http';
import type { EngineBus, RunRef } from '../engine/events.js';
import type { RunRecord } from '../store/types.js';
import type { RunIndex } from './run-index.js';
import { toRunSummary } from './views.js';

export interface EventHubOptions {
  bus: EngineBus;
  index: RunIndex;
  /** Minimum time between two progress events of one step. @default 250 */
  throttleMs?: number;
  /** How often the store is polled for other processes' runs while a page listens. @default 1000 */
  pollMs?: number;
  /** Comment line that keeps proxies from closing an idle stream. @default 15000 */
  heartbeatMs?: number;
  /** Text filter every event goes through before leaving (secret scrubbing). */
  scrub: (text: string) => string;
}

export interface EventHub {
  /** Starts streaming to `res` (headers included) until the client goes away. */
  attach(res: ServerResponse): void;
  readonly clients: number;
  close(): void;
}

interface StepState {
  runId: string;
  flow: string;
  step: string;
  action?: string;
  status?: string;
  done: number;
  total?: number;
  failed?: number;
}

export function createEventHub(opts: EventHubOptions): EventHub {
  const throttleMs = opts.throttleMs ?? 250;
  const pollMs = opts.pollMs ?? 1000;
  const heartbeatMs = opts.heartbeatMs ?? 15_000;
  const clients = new Set<ServerResponse>();
  const pendingSteps = new Map<string, StepState>();
  const pendingRuns = new Set<string>();
  let flushTimer: NodeJS.Timeout | undefined;
  let pollTimer: NodeJS.Timeout | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let closed = false;

  const send = (event: string, data: unknown) => {
    const text = `event: ${event}\ndata: ${opts.scrub(JSON.stringify(data))}\n\n`;
    for (const res of clients) res.write(text);
  };

  const flush = async () => {
    flushTimer = undefined;
    const runIds = [...pendingRuns];
    pendingRuns.clear();
    const steps = [...pendingSteps.values()];
    pendingSteps.clear();
    for (const s of steps) send('step', s);
    const runs = await Promise.all(runIds.map((id) => opts.index.refresh(id).catch(() => undefined)));
    for (const r of runs) if (r) send('run', toRunSummary(r));
  };
  const schedule = () => {
    if (closed || clients.size === 0) {
      pendingRuns.clear();
      pendingSteps.clear();
      return;
    }
    flushTimer ??= setTimeout(() => void flush().catch(() => {}), throttleMs);
  };

  const runChanged = (e: RunRef) => {
    pendingRuns.add(e.runId);
    schedule();
  };
  const stepChanged = (e: RunRef & { step: string; done?: number; total?: number; failed?: number; action?: string; status?: string }) => {
    const key = `${e.runId}\u0000${e.step}`;
    const prev = pendingSteps.get(key);
    pendingSteps.set(key, {
      runId: e.runId,
      flow: e.flow,
      step: e.step,
      action: e.action ?? prev?.action,
      status: e.status ?? prev?.status,
      done: e.done ?? prev?.done ?? 0,
      total: e.total ?? prev?.total,
      failed: e.failed ?? prev?.failed,
    });
    // The run's counts move with its steps.
    pendingRuns.add(e.runId);
    schedule();
  };
  const onStepStarted = (e: RunRef & { step: string; action: string; total?: number }) => stepChanged({ ...e, status: 'running', done: 0 });
  const onStepFinished = (e: RunRef & { step: string; status: string; done: number; failed: number }) => stepChanged(e);
  const onItem = (e: RunRef & { step: string }) => runChanged(e);

  const runEvents = ['run:started', 'run:finished', 'run:failed', 'run:waiting', 'run:resumed', 'run:interrupted'] as const;
  for (const name of runEvents) opts.bus.on(name, runChanged);
  opts.bus.on('step:started', onStepStarted);
  opts.bus.on('step:finished', onStepFinished);
  opts.bus.on('step:progress', stepChanged);
  opts.bus.on('item:finished', onItem);

  const poll = async () => {
    pollTimer = undefined;
    if (closed || clients.size === 0) return;
    try {
      const changedRuns: RunRecord[] = await opts.index.poll();
      for (const r of changedRuns) send('run', toRunSummary(r));
    } catch {
      // A store that is briefly unreachable: the next poll tries again; /healthz tells the operator.
    }
    if (!closed && clients.size > 0) pollTimer = setTimeout(() => void poll(), pollMs);
  };

  return {
    attach(res) {
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      res.write(`retry: 2000\n: msgflow events\n\n`);
      clients.add(res);
      res.on('close', () => clients.delete(res));
      heartbeat ??= setInterval(() => {
        for (const c of clients) c.write(': keep-alive\n\n');
      }, heartbeatMs);
      heartbeat.unref?.();
      if (!pollTimer) pollTimer = setTimeout(() => void poll(), pollMs);
    },
    get clients() {
      return clients.size;
    },
    close() {
      closed = true;
      for (const name of runEvents) opts.bus.off(name, runChanged);
      opts.bus.off('step:started', onStepStarted);
      opts.bus.off('step:finished', onStepFinished);
      opts.bus.off('step:progress', stepChanged);
      opts.bus.off('item:finished', onItem);
      if (flushTimer) clearTimeout(flushTimer);
      if (pollTimer) clearTimeout(pollTimer);
      if (heartbeat) clearInterval(heartbeat);
      for (const c of clients) c.end();
      clients.clear();
    },
  };
}
