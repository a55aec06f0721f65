/**
 * The engine's storage contract. Kept deliberately small so that a driver for
 * another backend (Redis, SQL) only has to implement these few operations;
 * every driver passes the same conformance suite (test/store/conformance.ts).
 *
 * Durability contract: when a returned promise resolves, the record survives
 * `kill -9` of the process (it has been handed to the OS / the server). Power
 * loss is out of scope for the embedded driver (no fsync per write).
 *
 * Outages: a driver whose backend cannot be reached (the redis driver while
 * Redis is down) rejects the call with
 * `MsgflowError('STORE_UNAVAILABLE', { driver, reason })` within a few
 * seconds instead of hanging. A rejected call is never sent later, but one
 * the backend received just before the connection broke may have been
 * applied: its outcome is unknown, as with any lost answer. The engine turns
 * that error into an `interrupted` (resumable) run, never a `failed` one.
 */

/** Durable key/value storage; values must be JSON-serialisable. */
export interface DurableState {
  get<T = unknown>(key: string): Promise<T | undefined>;
  set(key: string, value: unknown): Promise<void>;
  delete(key: string): Promise<void>;
  /** Every key with this prefix, with its value. */
  entries<T = unknown>(prefix?: string): Promise<Array<[string, T]>>;
}

/** Life cycle of a run. `running`/`waiting`/`interrupted` runs are resumable. */
export type RunStatus = 'running' | 'waiting' | 'succeeded' | 'failed' | 'interrupted' | 'cancelled';

export type RunTrigger = 'manual' | 'schedule' | 'missed' | 'startup' | 'resume' | 'notification' | 'subflow' | 'backfill' | 'alert';

/** The run and step that started a sub-flow run (`uses: flow/<name>`). */
export interface RunParent {
  runId: string;
  flow: string;
  step: string;
  /** The forEach item the child runs for, when the step fans out. */
  item?: number;
}

/** Statuses a run can be resumed from after a crash or a graceful stop. */
export const RESUMABLE_STATUSES: readonly RunStatus[] = ['running', 'waiting', 'interrupted'];

export interface ErrorInfo {
  message: string;
  /** Catalogue code when the error was a MsgflowError. */
  code?: string;
  step?: string;
  /** forEach item index, when the error belongs to one item. */
  item?: number;
  field?: string;
}

/**
 * A run that plans a campaign or applies a plan: `write` (a dry run whose
 * broadcast step writes who gets what, from which instance and when, to
 * `path`) or `apply` (a run whose broadcast step sends exactly the plan at
 * `path`). `inputs`: the `-i` overrides the plan was made with (written into it).
 */
export interface RunPlan {
  mode: 'write' | 'apply';
  /** Absolute path of the plan file. */
  path: string;
  /** @default {} */
  inputs?: Record<string, string>;
}

export interface RunRecord {
  /** Stable across restarts. */
  id: string;
  flow: string;
  /** Absolute path of the flow file when the run started. */
  file?: string;
  status: RunStatus;
  trigger: RunTrigger;
  dryRun: boolean;
  /** Ms since the epoch (engine clock). */
  startedAt: number;
  finishedAt?: number;
  durationMs?: number;
  updatedAt: number;
  /**
   * What became of the run's items, over every step (a forEach step's items,
   * a job's records, 1 for any other step): each ends in exactly one of
   * done, failed, invalid, duplicate and skipped (see {@link ItemCounts}).
   */
  itemsDone: number;
  itemsFailed: number;
  /** @default 0 */
  itemsInvalid?: number;
  /** @default 0 */
  itemsDuplicate?: number;
  /** @default 0 */
  itemsSkipped?: number;
  /** The step being executed (or last executed). */
  currentStep?: string;
  /** Set while the run is paused on a durable wait. */
  waitingUntil?: number;
  waitReason?: string;
  error?: ErrorInfo;
  /** Number of times the run was resumed after a crash or a stop. @default 0 */
  resumes: number;
  /** Set by `msgflow runs cancel`: the owner stops at the next item boundary and marks the run `cancelled`. */
  cancelRequested?: boolean;
  /** The process executing the run; a live owner elsewhere means "do not resume". */
  owner?: RunOwner;
  /** Hash of the resolved inputs the run started with: `msgflow run` resumes only a run with the same. */
  inputsHash?: string;
  /** Hash of the flow file's content when the run started. */
  flowHash?: string;
  /** Times the run's owner process died (crashed, was killed) while executing it; counted before each resume. @default 0 */
  crashes?: number;
  /** What the last crash looked like (owner, step), for the `crashed the process N times` reason. */
  lastCrash?: string;
  /** Concurrency group the run holds a slot of (`concurrency.group`, default the flow name). */
  group?: string;
  /**
   * The key value whose slots of the group the run holds (`concurrency.key`,
   * or the chat of the notification that started it), computed once when the
   * run was decided: a resume takes the same. Absent: the group's shared slots.
   */
  concurrencyKey?: string;
  /** `msgflow runs retry`: the finished run whose failed items this run redoes. */
  retryOf?: string;
  /**
   * The notification that started the run (trigger `notification`), as
   * `event` in its expressions; stored with the run so a resume sees it too.
   * Its `instanceData.idInstance` is removed (ids never reach run records).
   */
  event?: Record<string, unknown>;
  /** A campaign's plan this run writes (`msgflow run --plan`) or applies (`msgflow apply`). @default none */
  plan?: RunPlan;
  /**
   * Each input read from a data file (`file:`), with whether that file lay in
   * the input's data folders when the run started (engine/flow/inputs.ts
   * dataFolders): the dashboard previews only those. Absent on runs recorded
   * before it existed and on flows that read no data file.
   */
  dataInputs?: Record<string, boolean>;
  /** A sub-flow run (trigger `subflow`): the run and step that started it. */
  parent?: RunParent;
  /** The flow's `outputs:` evaluated when the run succeeded: a sub-flow step's output. */
  outputs?: Record<string, unknown>;
  /** A schedule's slot (ms since the epoch) the run stands for: set on `backfill` runs. */
  slot?: number;
}

/**
 * A time-limited claim held in the store (one live owner of a run, one
 * daemon per store, a flow's concurrency slot). The holder renews it by
 * heartbeat; once `expiresAt` is past it is free for anyone, whatever host
 * held it.
 */
export interface Lease {
  /** Unique per claim: renewals and releases compare it. */
  token: string;
  pid: number;
  /** Host id of the holder (hostname, or MSGFLOW_HOST_ID). */
  host: string;
  /** The holder process's start time on its host (defeats pid reuse). */
  procStart?: string;
  /** Wall-clock ms since the epoch; the lease lapses unless renewed before. */
  expiresAt: number;
  acquiredAt: number;
  /** The run this claim is for, when it is a run's or a concurrency slot's. */
  runId?: string;
  /** What holds it, for messages (`msgflow run`, `msgflow start`). */
  label?: string;
}

export interface RunOwner {
  pid: number;
  host: string;
}

/** `cancelled`: the step was running when its run was cancelled (its finished items are kept). */
export type StepStatus = 'running' | 'waiting' | 'succeeded' | 'failed' | 'skipped' | 'cancelled';

export interface StepRecord {
  runId: string;
  step: string;
  action: string;
  status: StepStatus;
  startedAt: number;
  finishedAt?: number;
  /** forEach: number of items; single step: 1. Undefined until known. */
  total?: number;
  done: number;
  failed: number;
  /** Input records rejected before any call (a job's own count, from ctx.progress). @default 0 */
  invalid?: number;
  /** Input records that repeat an earlier one, the first winning (a job's own count). @default 0 */
  duplicate?: number;
  /** Items or records not attempted by design (`if:` false for the item, opted out, dry-run predictions). @default 0 */
  skipped?: number;
  /** Records held by a durable wait when last reported. @default 0 */
  waiting?: number;
  /**
   * Single step: the action's return value. forEach steps keep their per-item
   * results in the item log, not here, so this record stays small.
   */
  output?: unknown;
  forEach: boolean;
  error?: ErrorInfo;
}

/** The outcome of one forEach item (or of a single step, index 0), appended to the run's item log. */
export interface ItemResult {
  step: string;
  index: number;
  /** `skipped`: a per-item `if:` was false (the action was not called). */
  status: 'succeeded' | 'failed' | 'skipped';
  output?: unknown;
  error?: ErrorInfo;
  /** Attempts used (rate-limit waits excluded). */
  attempts: number;
  finishedAt: number;
}

/**
 * The one set of counters of a step or a run, shown the same by the log
 * lines, the progress bar, `msgflow runs`, the dashboard and the events:
 * every item (a job's record) ends in exactly one of them.
 */
export interface ItemCounts {
  /** Succeeded. */
  done: number;
  failed: number;
  /** Rejected before any call (bad input). */
  invalid?: number;
  /** Repeated an earlier item (the first wins). */
  duplicate?: number;
  /** Not attempted by design (`if:` false, opted out, dry-run predictions). */
  skipped?: number;
}

/** The five counters of a run's record (RunRecord.items*). */
export type RunCountFields = Pick<RunRecord, 'itemsDone' | 'itemsFailed' | 'itemsInvalid' | 'itemsDuplicate' | 'itemsSkipped'>;

/** Every counter set: an absent one (a record written before it existed) is 0. */
export function allCounts(c: ItemCounts): Required<ItemCounts> {
  return { done: c.done, failed: c.failed, invalid: c.invalid ?? 0, duplicate: c.duplicate ?? 0, skipped: c.skipped ?? 0 };
}

/** A run's counters as {@link ItemCounts}, every one set. */
export function runCounts(r: RunCountFields): Required<ItemCounts> {
  return allCounts({
    done: r.itemsDone,
    failed: r.itemsFailed,
    invalid: r.itemsInvalid,
    duplicate: r.itemsDuplicate,
    skipped: r.itemsSkipped,
  });
}

/** Counters as a run's record holds them, every one set. */
export function runCountFields(r: RunCountFields): Required<RunCountFields> {
  const c = runCounts(r);
  return { itemsDone: c.done, itemsFailed: c.failed, itemsInvalid: c.invalid, itemsDuplicate: c.duplicate, itemsSkipped: c.skipped };
}

/** A durable timer: an absolute wake time that survives restarts. */
export interface WaitRecord {
  /** Unique within the run, e.g. `check/12/rate-limit`. */
  key: string;
  until: number;
  reason: string;
  step: string;
  item?: number;
  createdAt: number;
}

export interface RunQuery {
  flow?: string;
  status?: readonly RunStatus[];
  /** Only runs that finished before this time (ms since the epoch): what a retention pass deletes. */
  finishedBefore?: number;
  /** Newest first; at most this many. */
  limit?: number;
}

/**
 * A driver's connection to its backend, for drivers that have one (redis):
 * its state is known without making a call.
 */
export interface StoreConnection {
  /** False while the backend cannot be reached (the driver is reconnecting, or not connected yet). */
  readonly reachable: boolean;
  /** Calls `listener` each time the backend answers again after an outage; returns what unsubscribes it. */
  onReachable(listener: () => void): () => void;
}

/**
 * The kv namespace of a run's records written by any process (BullMQ workers'
 * item results and step outcomes: runtime/bullmq), unlike `run:<id>`, which
 * only the run's owner writes. Both go with the run (deleteRun).
 */
export function runItemsNamespace(runId: string): string {
  return `run-items:${runId}`;
}

export interface EngineStore {
  /** Which driver this is, for messages (`lowdb`, `memory`, ...). */
  readonly driver: string;
  /** The backend connection (redis); absent for drivers without one (lowdb, memory). */
  readonly connection?: StoreConnection;

  createRun(run: RunRecord): Promise<void>;
  /** Shallow-merges `patch` and returns the new record; RUN_NOT_FOUND when absent. */
  updateRun(id: string, patch: Partial<Omit<RunRecord, 'id'>>): Promise<RunRecord>;
  getRun(id: string): Promise<RunRecord | undefined>;
  /** Newest (by startedAt) first. */
  listRuns(query?: RunQuery): Promise<RunRecord[]>;
  /**
   * Deletes a finished run with everything kept for it: its record, inputs,
   * steps, items, waits, journals and its kv namespaces (`run:<id>`,
   * {@link runItemsNamespace}).
   * Resolves false when there was no such run. A run that may still go on
   * (running, waiting, interrupted) is refused with RUN_UNFINISHED: its owner
   * would write into a run that is gone.
   */
  deleteRun(id: string): Promise<boolean>;

  /** The resolved inputs a run started with, stored once so that a resume sees the same items. */
  saveInputs(runId: string, inputs: Record<string, unknown>): Promise<void>;
  loadInputs(runId: string): Promise<Record<string, unknown> | undefined>;

  /** Insert or replace the record of `step.step` within its run. */
  saveStep(step: StepRecord): Promise<void>;
  /** In the order they were first saved. */
  getSteps(runId: string): Promise<StepRecord[]>;

  /**
   * Appends item results to the run's item log. Resolves once they are
   * durable; callers may call it concurrently (drivers batch writes).
   */
  appendItems(runId: string, items: readonly ItemResult[]): Promise<void>;
  /** Replays the item log of a step: one result per index, the last recorded wins. */
  getItems(runId: string, step: string): Promise<Map<number, ItemResult>>;

  setWait(runId: string, wait: WaitRecord): Promise<void>;
  deleteWait(runId: string, key: string): Promise<void>;
  listWaits(runId: string): Promise<WaitRecord[]>;

  /**
   * Appends to a named journal of a run (`stream` is e.g. `check/-`): an
   * append-only log whose write cost does not depend on its length. Resolves
   * once the entries are durable.
   */
  appendJournal(runId: string, stream: string, entries: readonly unknown[]): Promise<void>;
  /** Replays a journal, oldest first, streamed; empty when it does not exist. */
  readJournal<T = unknown>(runId: string, stream: string): AsyncIterable<T>;

  /**
   * Takes lease `name` atomically (across processes, and hosts sharing the
   * store) when it is free, lapsed (`expiresAt` past, wall clock) or already
   * held with `lease.token` (then it is renewed). Resolves undefined when
   * taken, else with the current holder.
   */
  acquireLease(name: string, lease: Lease): Promise<Lease | undefined>;
  /** Extends the lease to `expiresAt` if `token` still holds it; false when it was lost. */
  renewLease(name: string, token: string, expiresAt: number): Promise<boolean>;
  /** Frees the lease if `token` holds it (compare-and-delete); else does nothing. Also breaks a dead holder's lease. */
  releaseLease(name: string, token: string): Promise<void>;
  /** The current holder (possibly lapsed: compare `expiresAt`), or undefined. */
  getLease(name: string): Promise<Lease | undefined>;

  /** Durable key/value namespace (scheduler state, action state shared across runs, run-scoped state). */
  kv(namespace: string): DurableState;

  /** Flushes pending writes and releases files/connections. */
  close(): Promise<void>;
}
