/**
 * The BullMQ executor, the run's side: a forEach step's items become jobs of
 * the instance's queue (ids derived from run, step and item: adding them
 * again after a restart is a no-op), and the step waits until every item is
 * recorded. Results arrive through QueueEvents; when the events are quiet
 * the item log is read again, so a result whose event was missed (this
 * process restarted, Redis trimmed the stream) is still counted — once.
 */
import { type Job, Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import { FlowError } from '../../api/errors.js';
import type { ItemBatch, ItemExecutor, QueueDepth } from '../../engine/run/executor.js';
import { localExecutor } from '../../engine/run/executor.js';
import { fromErrorInfo } from '../../engine/run/errors.js';
import { StepFatalError } from '../../engine/run/unit-runner.js';
import type { EngineStore, ErrorInfo, ItemResult } from '../../store/types.js';
import type { ItemJobData, ItemJobResult } from './item-host.js';
import { type BullmqTarget, bullmqConnection, itemJobId, itemQueueName } from './names.js';

/** Jobs added per round trip. */
const CHUNK = 500;
/** How long the events may be quiet before the item log is read again. */
const RECONCILE_MS = 2000;

/** Job options of every item: completed jobs are kept a day so a re-enqueue within it stays a no-op. */
export const ITEM_JOB_OPTIONS = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: { age: 24 * 3600 },
  removeOnFail: { age: 7 * 24 * 3600 },
} as const;

export interface BullmqExecutorOptions {
  target: BullmqTarget;
  store: EngineStore;
  identityFor(instance: string): string;
}

interface Lane {
  queue: Queue<ItemJobData>;
  events: QueueEvents;
}

export class BullmqExecutor implements ItemExecutor {
  readonly name = 'bullmq';
  private readonly lanes = new Map<string, Promise<Lane>>();
  private readonly connections: Redis[] = [];

  constructor(private readonly o: BullmqExecutorOptions) {}

  private connection(): Redis {
    const c = bullmqConnection(this.o.target.url);
    this.connections.push(c);
    return c;
  }

  private lane(identity: string): Promise<Lane> {
    let l = this.lanes.get(identity);
    if (!l) {
      l = (async () => {
        const name = itemQueueName(identity);
        const queue = new Queue<ItemJobData>(name, { connection: this.connection(), prefix: this.o.target.prefix });
        const events = new QueueEvents(name, { connection: this.connection(), prefix: this.o.target.prefix });
        await events.waitUntilReady();
        return { queue, events };
      })();
      this.lanes.set(identity, l);
    }
    return l;
  }

  /** Items waiting, active and delayed in the instance's queue (the dashboard's queue depth). */
  async depth(identity: string): Promise<QueueDepth> {
    const { queue } = await this.lane(identity);
    const c = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    return { waiting: (c.waiting ?? 0) + (c.prioritized ?? 0), active: c.active ?? 0, delayed: c.delayed ?? 0 };
  }

  async run(batch: ItemBatch): Promise<void> {
    // A dry run calls nothing: its items need no worker.
    if (batch.dryRun) return localExecutor.run(batch);
    const lane = await this.lane(this.o.identityFor(batch.flow.instance));
    const wait = new ItemWait(batch, this.o.store);
    const onCompleted = ({ jobId, returnvalue }: { jobId: string; returnvalue: unknown }) => wait.completed(jobId, returnvalue);
    const onFailed = ({ jobId, failedReason }: { jobId: string; failedReason: string }) =>
      void wait.failed(jobId, failedReason, lane.queue);
    // Listening before adding: no result can slip between the two.
    lane.events.on('completed', onCompleted);
    lane.events.on('failed', onFailed);
    try {
      await this.enqueue(batch, lane.queue, wait);
      await wait.settled();
    } finally {
      lane.events.off('completed', onCompleted);
      lane.events.off('failed', onFailed);
    }
  }

  private async enqueue(batch: ItemBatch, queue: Queue<ItemJobData>, wait: ItemWait): Promise<void> {
    const { runId, step, items, pending, sink, signal, trace } = batch;
    for (let at = 0; at < pending.length && !signal.aborted; at += CHUNK) {
      const jobs = [];
      for (const index of pending.slice(at, at + CHUNK)) {
        if (!(await sink.admit(index))) {
          wait.admitted(index, false);
          continue;
        }
        wait.admitted(index, true);
        jobs.push({
          name: step.id,
          data: { runId, step: step.id, index, item: items[index], ...(trace ? { trace } : {}) },
          opts: { ...ITEM_JOB_OPTIONS, jobId: itemJobId(runId, step.id, index) },
        });
      }
      if (jobs.length > 0) await queue.addBulk(jobs);
    }
    wait.enqueued();
  }

  async close(): Promise<void> {
    for (const l of this.lanes.values()) {
      const lane = await l.catch(() => undefined);
      await lane?.events.close().catch(() => {});
      await lane?.queue.close().catch(() => {});
    }
    for (const c of this.connections) c.disconnect();
  }
}

/** Waits until every admitted item of a batch is recorded, counting each once. */
class ItemWait {
  private readonly open = new Set<number>();
  private readonly prefix: string;
  private allAdded = false;
  private fatal: ErrorInfo | undefined;
  private wake: (() => void) | undefined;
  private lastEvent = Date.now();

  constructor(
    private readonly batch: ItemBatch,
    private readonly store: EngineStore,
  ) {
    this.prefix = itemJobId(batch.runId, batch.step.id, 0).slice(0, -1);
  }

  admitted(index: number, queued: boolean): void {
    if (queued) this.open.add(index);
  }

  enqueued(): void {
    this.allAdded = true;
    this.wake?.();
  }

  private accept(result: ItemResult): void {
    if (!this.open.delete(result.index)) return;
    this.batch.sink.accept(result);
    this.lastEvent = Date.now();
    if (this.open.size === 0) this.wake?.();
  }

  completed(jobId: string, returnvalue: unknown): void {
    if (!jobId.startsWith(this.prefix)) return;
    const r = (typeof returnvalue === 'string' ? JSON.parse(returnvalue) : returnvalue) as ItemJobResult | null;
    if (!r || r.kind !== 'recorded') return; // dropped: the run is over or cancelled
    if (r.fatal) this.fatal ??= r.fatal;
    this.accept(r.result);
    if (r.fatal) this.wake?.();
  }

  /** A job that failed all its attempts: the item is recorded failed here (the workers could not). */
  async failed(jobId: string, reason: string, queue: Queue<ItemJobData>): Promise<void> {
    if (!jobId.startsWith(this.prefix)) return;
    const job: Job<ItemJobData> | undefined = await queue.getJob(jobId);
    if (!job || job.attemptsMade < (job.opts.attempts ?? 1)) return;
    const { step } = this.batch;
    const err = new FlowError('ITEM_WORKER_FAILED', { step: step.id, item: job.data.index, reason });
    const result: ItemResult = {
      step: step.id,
      index: job.data.index,
      status: 'failed',
      attempts: job.attemptsMade,
      finishedAt: Date.now(),
      error: { message: err.message, code: err.code, step: step.id, item: job.data.index },
    };
    await this.store.appendItems(this.batch.runId, [result]);
    this.accept(result);
  }

  /** Resolves when every item is counted; rejects with the first fatal error; returns early on abort. */
  async settled(): Promise<void> {
    const { signal } = this.batch;
    while (!signal.aborted && this.fatal === undefined && !(this.allAdded && this.open.size === 0)) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => done(), RECONCILE_MS);
        const done = () => {
          clearTimeout(t);
          signal.removeEventListener('abort', done);
          this.wake = undefined;
          resolve();
        };
        this.wake = done;
        signal.addEventListener('abort', done, { once: true });
      });
      if (Date.now() - this.lastEvent >= RECONCILE_MS && this.open.size > 0) await this.reconcile();
    }
    if (this.fatal) {
      // The worker's error, as the run records it: its message and catalogue code.
      throw new StepFatalError(fromErrorInfo(this.fatal), this.batch.step.id);
    }
  }

  /** Reads the item log: results whose event this process did not see. */
  private async reconcile(): Promise<void> {
    const items = await this.store.getItems(this.batch.runId, this.batch.step.id);
    for (const r of items.values()) if (this.open.has(r.index)) this.accept(r);
    this.lastEvent = Date.now();
  }
}
