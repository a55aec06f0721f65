/**
 * The BullMQ executor, the run's side: a forEach step's items become jobs of
 * the instance's queue (ids derived from run, step and item: adding them
 * again after a restart is a no-op), and the step waits until every item is
 * recorded. Results arrive through QueueEvents; when the events are quiet
 * the item log is read again, so a result whose event was missed (this
 * process restarted, Redis trimmed the stream) is still counted — once.
 *
 * A single step sent to workers (engine/run/executor.ts placement: a job, a
 * dialog step with `executor: workers`) is one job of the same queue, its id
 * derived from run and step; the run follows its progress and reads its
 * outcome from the job's result or, when the events are quiet, from the
 * store (step-host.ts).
 */
import { type Job, Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import { FlowError } from '../../api/errors.js';
import type { ItemBatch, ItemExecutor, QueueDepth, StepUnit } from '../../engine/run/executor.js';
import { localExecutor } from '../../engine/run/executor.js';
import { fromErrorInfo } from '../../engine/run/errors.js';
import { StepFatalError, type UnitOutcome } from '../../engine/run/unit-runner.js';
import { runItemsNamespace, type EngineStore, type ErrorInfo, type ItemResult } from '../../store/types.js';
import type { ItemJobData, ItemJobResult } from './item-host.js';
import { type BullmqTarget, bullmqConnection, itemJobId, itemQueueName, stepJobId } from './names.js';
import { stepOutcomeKey, type StepJobData, type StepJobResult, type StepOutcomeRecord, type StepProgress } from './step-host.js';

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
  queue: Queue<ItemJobData | StepJobData>;
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
        const queue = new Queue<ItemJobData | StepJobData>(name, { connection: this.connection(), prefix: this.o.target.prefix });
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

  /** A single step on the workers: its job added (a no-op when it exists), its progress followed, its outcome returned. */
  async runStep(unit: StepUnit): Promise<UnitOutcome> {
    const lane = await this.lane(this.o.identityFor(unit.flow.instance));
    const jobId = stepJobId(unit.runId, unit.step.id);
    const follow = new StepFollow(unit, this.o.store, lane.queue, jobId);
    const onCompleted = ({ jobId: id, returnvalue }: { jobId: string; returnvalue: unknown }) =>
      id === jobId && follow.completed(returnvalue);
    const onProgress = ({ jobId: id, data }: { jobId: string; data: unknown }) => id === jobId && follow.progress(data as StepProgress);
    const onFailed = ({ jobId: id }: { jobId: string }) => id === jobId && follow.wakeUp();
    // Listening before adding: no result can slip between the two.
    lane.events.on('completed', onCompleted);
    lane.events.on('progress', onProgress);
    lane.events.on('failed', onFailed);
    try {
      // Recorded by an earlier process of the run (its job may be gone): not added again.
      if (!(await follow.reconcile())) {
        const data: StepJobData = { kind: 'step', runId: unit.runId, step: unit.step.id, ...(unit.trace ? { trace: unit.trace } : {}) };
        await lane.queue.add(unit.step.id, data, { ...ITEM_JOB_OPTIONS, jobId });
      }
      return await follow.settled();
    } finally {
      lane.events.off('completed', onCompleted);
      lane.events.off('progress', onProgress);
      lane.events.off('failed', onFailed);
    }
  }

  private async enqueue(batch: ItemBatch, queue: Queue<ItemJobData | StepJobData>, wait: ItemWait): Promise<void> {
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

/**
 * Waits up to RECONCILE_MS: ended early by the signal or by the wake-up it
 * hands to `onWake` (an event came), which it takes back when it ends.
 */
function nap(signal: AbortSignal, onWake: (wake: (() => void) | undefined) => void): Promise<void> {
  return new Promise<void>((resolve) => {
    const t = setTimeout(() => done(), RECONCILE_MS);
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      onWake(undefined);
      resolve();
    };
    onWake(done);
    signal.addEventListener('abort', done, { once: true });
  });
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
  async failed(jobId: string, reason: string, queue: Queue<ItemJobData | StepJobData>): Promise<void> {
    if (!jobId.startsWith(this.prefix)) return;
    const job = (await queue.getJob(jobId)) as Job<ItemJobData> | undefined;
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
      await nap(signal, (wake) => (this.wake = wake));
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

/** Follows one single step's job: its progress to the run, its outcome once recorded. */
class StepFollow {
  private outcome: StepOutcomeRecord | undefined;
  private wake: (() => void) | undefined;
  private lastEvent = Date.now();

  constructor(
    private readonly unit: StepUnit,
    private readonly store: EngineStore,
    private readonly queue: Queue<ItemJobData | StepJobData>,
    private readonly jobId: string,
  ) {}

  wakeUp(): void {
    this.wake?.();
  }

  completed(returnvalue: unknown): void {
    const r = (typeof returnvalue === 'string' ? JSON.parse(returnvalue) : returnvalue) as StepJobResult | null;
    if (r?.kind === 'recorded') this.outcome ??= r.outcome;
    this.wakeUp();
  }

  progress(p: StepProgress): void {
    this.lastEvent = Date.now();
    if ('counts' in p) this.unit.progress(p.counts);
    else if ('waiting' in p) this.unit.waiting(p.waiting);
    else this.unit.resumed(p.resumed);
  }

  /**
   * Reads what the events may have missed: the outcome in the store, or a
   * job that failed all its attempts (recorded failed here: the workers
   * could not). True once the outcome is known.
   */
  async reconcile(): Promise<boolean> {
    this.lastEvent = Date.now();
    const { runId, step } = this.unit;
    this.outcome ??= await this.store.kv(runItemsNamespace(runId)).get<StepOutcomeRecord>(stepOutcomeKey(step.id));
    if (this.outcome) return true;
    const job = await this.queue.getJob(this.jobId);
    if (!job || !(await job.isFailed()) || job.attemptsMade < (job.opts.attempts ?? 1)) return false;
    const err = new FlowError('STEP_WORKER_FAILED', { step: step.id, reason: job.failedReason });
    this.outcome = {
      status: 'failed',
      error: { message: err.message, code: err.code, step: step.id },
      attempts: job.attemptsMade,
      finishedAt: Date.now(),
    };
    return true;
  }

  /** The step's outcome; `interrupted` when the run stops following it (the worker goes on; a resumed run follows it again). */
  async settled(): Promise<UnitOutcome> {
    const { signal } = this.unit;
    while (!signal.aborted && !this.outcome) {
      await nap(signal, (wake) => (this.wake = wake));
      if (!this.outcome && !signal.aborted && Date.now() - this.lastEvent >= RECONCILE_MS) await this.reconcile();
    }
    const o = this.outcome;
    if (!o) return { interrupted: true };
    // The worker's error, as the run records it: its message and catalogue code.
    if (o.fatal) throw new StepFatalError(fromErrorInfo(o.error ?? { message: 'failed' }), this.unit.step.id);
    return {
      interrupted: false,
      status: o.status,
      attempts: o.attempts,
      ...(o.output === undefined ? {} : { output: o.output }),
      ...(o.error ? { error: o.error, cause: fromErrorInfo(o.error) } : {}),
      ...(o.progress ? { progress: o.progress } : {}),
    };
  }
}
