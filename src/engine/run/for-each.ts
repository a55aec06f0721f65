/**
 * The run's side of one forEach step: the per-item `if:`, running an item in
 * this process, and counting every recorded result exactly once (whichever
 * process recorded it). Executors (executor.ts) decide where items run.
 */
import type { ItemResult, StepRecord } from '../../store/types.js';
import type { ExprScope } from '../expr/interpreter.js';
import { evaluateCondition } from '../expr/template.js';
import type { FlowStep } from '../flow/types.js';
import type { RegisteredAction } from '../registry/registry.js';
import { errorInfo } from './errors.js';
import type { ItemSink } from './executor.js';
import { runUnit } from './unit-runner.js';
import type { RunScope } from './unit-context.js';

export interface ForEachParts {
  sh: RunScope;
  step: FlowStep;
  def: RegisteredAction;
  scope: ExprScope;
  items: readonly unknown[];
  /** The step's record, whose counts this updates. */
  rec: StepRecord;
  /** Outputs by index, for `steps.<id>.results`. */
  results: unknown[];
  /** The per-item `if:` applies (it reads `item` or `index`). */
  perItem: boolean;
  /** The run's own counters. */
  count(status: 'succeeded' | 'failed' | 'skipped'): void;
  /** Writes the step's and the run's counts (throttled by the caller's interval). */
  saveProgress(): Promise<void>;
  progressSaveIntervalMs: number;
}

export class ForEachItems implements ItemSink {
  /** Indexes already counted: a result recorded twice (a re-run job) counts once. */
  private readonly seen = new Set<number>();
  private lastSave = Date.now();
  private saving: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly p: ForEachParts,
    prior: Iterable<number>,
  ) {
    for (const i of prior) this.seen.add(i);
  }

  /** The scope an item's templates see. */
  itemScope(index: number): ExprScope {
    return { ...this.p.scope, item: this.p.items[index], index };
  }

  async admit(index: number): Promise<boolean> {
    const { step, sh } = this.p;
    if (!this.p.perItem) return true;
    let go = false;
    let condError: unknown;
    try {
      go = evaluateCondition(step.if!, this.itemScope(index), step.templates);
    } catch (e) {
      condError = e;
    }
    if (go) return true;
    // `if:` false for this item: recorded as skipped (not redone on resume), counted, never called.
    const now = sh.clock.now();
    const result: ItemResult =
      condError === undefined
        ? { step: step.id, index, status: 'skipped', attempts: 0, finishedAt: now }
        : { step: step.id, index, status: 'failed', attempts: 0, finishedAt: now, error: errorInfo(condError, step.id, index) };
    await sh.store.appendItems(sh.runId, [result]);
    this.accept(result);
    return false;
  }

  async runHere(index: number): Promise<boolean> {
    const { sh, step, def } = this.p;
    const out = await runUnit(sh, step, def, this.itemScope(index), index);
    if (out.interrupted) return false;
    const result: ItemResult = { step: step.id, index, status: out.status, attempts: out.attempts, finishedAt: sh.clock.now() };
    if (out.output !== undefined) result.output = out.output;
    if (out.error) result.error = out.error;
    await sh.store.appendItems(sh.runId, [result]); // recorded before this worker takes the next item
    this.accept(result);
    return true;
  }

  accept(result: ItemResult): void {
    const { rec, sh, step } = this.p;
    if (this.seen.has(result.index)) return;
    this.seen.add(result.index);
    const ref = { runId: sh.runId, flow: sh.flow.name, step: step.id, index: result.index };
    if (result.status === 'skipped') {
      rec.skipped = (rec.skipped ?? 0) + 1;
      this.p.count('skipped');
      sh.bus.emit('item:finished', { ...ref, status: 'skipped' });
    } else if (result.status === 'succeeded') {
      rec.done++;
      this.p.results[result.index] = result.output ?? null;
      this.p.count('succeeded');
      sh.bus.emit('item:finished', { ...ref, status: 'succeeded' });
    } else {
      rec.failed++;
      this.p.count('failed');
      sh.bus.emit('item:finished', { ...ref, status: 'failed', error: result.error?.message });
    }
    // Progress for other processes (`msgflow runs`), throttled on real time.
    const now = Date.now();
    if (now - this.lastSave >= this.p.progressSaveIntervalMs) {
      this.lastSave = now;
      this.saving = this.saving.then(() => this.p.saveProgress()).catch(() => {});
    }
  }

  /** Whether a result for the index was counted. */
  has(index: number): boolean {
    return this.seen.has(index);
  }

  /** Settles once the last throttled progress write is done. */
  flushed(): Promise<unknown> {
    return this.saving;
  }
}
