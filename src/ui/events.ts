/**
 * `GET /api/events`: server-sent events for the pages. Two sources feed it:
 * the engine bus (runs of this process, at once) and the run index's poll of
 * the store (runs of other processes: a `msgflow run` in a terminal beside
 * the daemon, or everything when the server is `msgflow ui`). Step progress
 * is coalesced per run and step and sent at most every `throttleMs`, so a
 * 100,000-item step costs the browser a few events a second, not 100,000.
 * A page that does not read keeps only the latest event of each run and step
 * while its socket is full, and is dropped past a bound (sse.ts).
 *
 * Events (each `data:` is JSON):
 * - `run`: a run summary (see toRunSummary) whenever its status or counts change;
 * - `step`: `{ runId, flow, step, action?, status?, done, total?, failed? }`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ProgressCounts } from '../engine/action.js';
import type { EngineBus, RunRef } from '../engine/events.js';
import type { RunRecord } from '../store/types.js';
import type { RunIndex } from './run-index.js';
import type { SseStream, SseStreams } from './sse.js';
import { toRunSummary } from './views.js';

export interface EventHubOptions {
  bus: EngineBus;
  index: RunIndex;
  /** Minimum time between two progress events of one step. @default 250 */
  throttleMs?: number;
  /** How often the store is polled for other processes' runs while a page listens. @default 1000 */
  pollMs?: number;
  /** The server's open streams and their limits (shared with the flow followers). */
  streams: SseStreams;
  /** Text filter every event goes through before leaving (secret scrubbing). */
  scrub: (text: string) => string;
}

export interface EventHub {
  /**
   * Starts streaming to `res` (headers included) until the client goes away;
   * throws (429, 503) when the client or the server holds too many streams.
   */
  attach(req: IncomingMessage, res: ServerResponse): void;
  readonly clients: number;
  close(): void;
}

/** A step as the dashboard last heard of it: its counters as ctx.progress gives them. */
type StepState = {
  runId: string;
  flow: string;
  step: string;
  action?: string;
  status?: string;
} & Omit<ProgressCounts, 'waiting'>;

export function createEventHub(opts: EventHubOptions): EventHub {
  return new SseHub(opts);
}

type StepEvent = RunRef & {
  step: string;
  done?: number;
  total?: number;
  failed?: number;
  invalid?: number;
  duplicate?: number;
  skipped?: number;
  action?: string;
  status?: string;
};

const RUN_EVENTS = ['run:started', 'run:finished', 'run:failed', 'run:waiting', 'run:resumed', 'run:interrupted'] as const;

class SseHub implements EventHub {
  private readonly throttleMs: number;
  private readonly pollMs: number;
  private readonly streams = new Set<SseStream>();
  private readonly pendingSteps = new Map<string, StepState>();
  private readonly pendingRuns = new Set<string>();
  private flushTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private closed = false;

  // Arrow properties: the same function is given to bus.on and bus.off.
  private readonly runChanged = (e: RunRef) => {
    this.pendingRuns.add(e.runId);
    this.schedule();
  };
  private readonly stepChanged = (e: StepEvent) => {
    const key = `${e.runId}\u0000${e.step}`;
    const prev = this.pendingSteps.get(key);
    this.pendingSteps.set(key, {
      runId: e.runId,
      flow: e.flow,
      step: e.step,
      action: e.action ?? prev?.action,
      status: e.status ?? prev?.status,
      done: e.done ?? prev?.done ?? 0,
      total: e.total ?? prev?.total,
      failed: e.failed ?? prev?.failed,
      invalid: e.invalid ?? prev?.invalid,
      duplicate: e.duplicate ?? prev?.duplicate,
      skipped: e.skipped ?? prev?.skipped,
    });
    // The run's counts move with its steps.
    this.runChanged(e);
  };
  private readonly onStepStarted = (e: RunRef & { step: string; action: string; total?: number }) =>
    this.stepChanged({ ...e, status: 'running', done: 0 });

  constructor(private readonly opts: EventHubOptions) {
    this.throttleMs = opts.throttleMs ?? 250;
    this.pollMs = opts.pollMs ?? 1000;
    for (const name of RUN_EVENTS) opts.bus.on(name, this.runChanged);
    opts.bus.on('step:started', this.onStepStarted);
    opts.bus.on('step:finished', this.stepChanged);
    opts.bus.on('step:progress', this.stepChanged);
    opts.bus.on('item:finished', this.runChanged);
  }

  get clients(): number {
    return this.streams.size;
  }

  attach(req: IncomingMessage, res: ServerResponse): void {
    const stream = this.opts.streams.start(req, res, `retry: 2000\n: msgflow events\n\n`, () => this.streams.delete(stream));
    this.streams.add(stream);
    this.pollTimer ??= setTimeout(() => void this.poll(), this.pollMs);
  }

  close(): void {
    this.closed = true;
    const bus = this.opts.bus;
    for (const name of RUN_EVENTS) bus.off(name, this.runChanged);
    bus.off('step:started', this.onStepStarted);
    bus.off('step:finished', this.stepChanged);
    bus.off('step:progress', this.stepChanged);
    bus.off('item:finished', this.runChanged);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    if (this.pollTimer) clearTimeout(this.pollTimer);
    for (const c of this.streams) c.end();
    this.streams.clear();
  }

  /** One event to every page; a client not reading keeps only the latest of each run and step (`key`). */
  private send(event: string, data: unknown, key: string): void {
    const text = `event: ${event}\ndata: ${this.opts.scrub(JSON.stringify(data))}\n\n`;
    for (const s of this.streams) s.send(text, key);
  }

  private schedule(): void {
    if (this.closed || this.streams.size === 0) {
      this.pendingRuns.clear();
      this.pendingSteps.clear();
      return;
    }
    this.flushTimer ??= setTimeout(() => void this.flush().catch(() => {}), this.throttleMs);
  }

  private async flush(): Promise<void> {
    this.flushTimer = undefined;
    const runIds = [...this.pendingRuns];
    this.pendingRuns.clear();
    const steps = [...this.pendingSteps.values()];
    this.pendingSteps.clear();
    for (const s of steps) this.send('step', s, `step\u0000${s.runId}\u0000${s.step}`);
    const runs = await Promise.all(runIds.map((id) => this.opts.index.refresh(id).catch(() => undefined)));
    for (const r of runs) if (r) this.send('run', toRunSummary(r), `run\u0000${r.id}`);
  }

  private async poll(): Promise<void> {
    this.pollTimer = undefined;
    if (this.closed || this.streams.size === 0) return;
    try {
      const changedRuns: RunRecord[] = await this.opts.index.poll();
      for (const r of changedRuns) this.send('run', toRunSummary(r), `run\u0000${r.id}`);
    } catch {
      // A store that is briefly unreachable: the next poll tries again; /healthz tells the operator.
    }
    if (!this.closed && this.streams.size > 0) this.pollTimer = setTimeout(() => void this.poll(), this.pollMs);
  }
}
