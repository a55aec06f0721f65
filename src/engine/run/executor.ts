/**
 * The executor seam: who works the items of a forEach step, and a single
 * step that is a unit of work on an instance (a job, a dialog step). The run
 * itself (its steps, its record, its lease) is always driven by one process;
 * the executor decides where its units run — in this process (`local`, the
 * default) or on BullMQ workers (src/runtime/bullmq). Which steps may go to
 * workers is {@link placement}'s rule.
 */
import type { ItemResult, WaitRecord } from '../../store/types.js';
import type { ProgressCounts } from '../action.js';
import type { Flow, FlowStep } from '../flow/types.js';
import { subflowName } from '../flow/subflows.js';
import type { RegisteredAction } from '../registry/registry.js';
import type { UnitOutcome } from './unit-runner.js';

/** What an executor reports back to the run about one forEach step's items. */
export interface ItemSink {
  /**
   * Evaluates a per-item `if:`; false when the item was recorded here as
   * skipped (or failed, when the condition could not be evaluated).
   */
  admit(index: number): Promise<boolean>;
  /** Runs the item in this process and records it; false when the run was interrupted meanwhile. */
  runHere(index: number): Promise<boolean>;
  /** Counts a result recorded by any process; a second result for the same index is ignored. */
  accept(result: ItemResult): void;
}

/** One forEach step's items, handed to an executor. */
export interface ItemBatch {
  runId: string;
  flow: Flow;
  step: FlowStep;
  /** The evaluated forEach list. */
  items: readonly unknown[];
  /** Indexes not recorded yet (a resumed step skips the rest). */
  pending: readonly number[];
  /** A dry run: no action is called (an executor may keep its items local). */
  dryRun: boolean;
  /** Aborted on interrupt and cancel: stop taking items. */
  signal: AbortSignal;
  sink: ItemSink;
  /** The step span's W3C trace context when the run is traced: items worked elsewhere continue it. @default none */
  trace?: Record<string, string>;
}

/** A single step handed to an executor that works it elsewhere (ItemExecutor.runStep). */
export interface StepUnit {
  runId: string;
  flow: Flow;
  step: FlowStep;
  /** Aborted on interrupt and cancel: stop following the step (a worker goes on with it; a cancel reaches it through the store). */
  signal: AbortSignal;
  /** The job's counts (its ctx.progress) as the worker reports them. */
  progress(counts: ProgressCounts): void;
  /** The step entered a durable wait on the worker (a send window, a pause) ... */
  waiting(wait: WaitRecord): void;
  /** ... and left it. */
  resumed(wait: WaitRecord): void;
  /** The step span's W3C trace context when the run is traced. @default none */
  trace?: Record<string, string>;
}

export interface ItemExecutor {
  /** `local` or `bullmq`: shown in logs and on the dashboard. */
  readonly name: string;
  /**
   * Works every pending item of the batch, each recorded (ItemSink.accept)
   * before it returns; returns early when the signal aborts. A rejection
   * (the store is down, a fatal error) fails or interrupts the run.
   */
  run(batch: ItemBatch): Promise<void>;
  /**
   * Works a single step that {@link placement} sends to `workers` elsewhere
   * and resolves its outcome as the worker recorded it (an outcome recorded
   * before, by an earlier process of the run, is returned as is), or
   * `{ interrupted: true }` when the signal aborts. Absent (the local
   * executor): every single step runs in the process that drives the run.
   */
  runStep?(unit: StepUnit): Promise<UnitOutcome>;
  /** Items of an instance identity not worked yet and in progress, when the executor queues them (bullmq). */
  depth?(identity: string): Promise<QueueDepth>;
}

/**
 * Where a step's work goes when the executor has workers (bullmq): a forEach
 * step's items and a single step whose action is a unit of work on an
 * instance (ActionDefinition.runsOnWorkers: the jobs) go to `workers`,
 * any other single step stays `local`, in the process that drives the run;
 * a step's `executor:` says otherwise. A sub-flow step starts its child runs
 * through the engine that drives the run: always local (each child's own
 * units may go to workers). With the local executor everything is local.
 */
export function placement(
  step: Pick<FlowStep, 'uses' | 'forEach' | 'executor'>,
  def: Pick<RegisteredAction, 'runsOnWorkers'> | undefined,
): 'workers' | 'local' {
  if (subflowName(step.uses) !== undefined) return 'local';
  if (step.executor) return step.executor;
  return step.forEach !== undefined || def?.runsOnWorkers === true ? 'workers' : 'local';
}

/** An instance's item queue (the dashboard's queue depth). */
export interface QueueDepth {
  waiting: number;
  active: number;
  delayed: number;
}

/** Today's in-process executor: `step.concurrency` items at a time, in this process. */
export const localExecutor: ItemExecutor = {
  name: 'local',
  async run(batch) {
    const { pending, signal, sink } = batch;
    let next = 0;
    let firstError: unknown;
    const worker = async (): Promise<void> => {
      while (next < pending.length && !signal.aborted && firstError === undefined) {
        const index = pending[next++];
        if (!(await sink.admit(index))) continue;
        if (!(await sink.runHere(index))) return;
      }
    };
    const n = Math.max(1, Math.min(batch.step.concurrency, pending.length));
    await Promise.all(
      Array.from({ length: n }, () =>
        worker().catch((e: unknown) => {
          firstError ??= e;
        }),
      ),
    );
    if (firstError !== undefined) throw firstError;
  },
};
