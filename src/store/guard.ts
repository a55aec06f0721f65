/**
 * One place where a driver's backend failures become STORE_UNAVAILABLE: every
 * operation of a store (runs, items, journals, waits, leases, kv namespaces,
 * close) goes through `toError`, so no raw ioredis or file-system error
 * reaches the engine. The engine treats STORE_UNAVAILABLE as an
 * interruption (the run stops resumable, no item is failed for it); a raw
 * error would fail the item or the step instead.
 */
import { dirname } from 'node:path';
import { MsgflowError } from '../api/errors.js';
import type { DurableState, EngineStore } from './types.js';

/** Maps a backend error to the error callers see (STORE_UNAVAILABLE, or the error itself when it is not the backend's). */
export type StoreErrorMapper = (e: unknown) => unknown;

const OPS = [
  'createRun',
  'updateRun',
  'getRun',
  'listRuns',
  'deleteRun',
  'saveInputs',
  'loadInputs',
  'saveStep',
  'getSteps',
  'appendItems',
  'getItems',
  'appendJournal',
  'setWait',
  'deleteWait',
  'listWaits',
  'acquireLease',
  'renewLease',
  'releaseLease',
  'getLease',
  'close',
] as const;

/**
 * Maps the failures of one store's operations. `fail`, the rejection handler
 * of every operation's promise, is made once: a bulk job makes several store
 * calls per record, and an async wrapper per call was a measurable part of each.
 */
class FailureMapper {
  readonly fail = (e: unknown): never => {
    throw this.toError(e);
  };

  constructor(readonly toError: StoreErrorMapper) {}

  /** An operation's promise with its failure mapped; a synchronous throw too. */
  run<T>(op: () => Promise<T>): Promise<T> {
    try {
      // Promise.resolve: the very promise when it is one (every store operation returns one).
      return Promise.resolve(op()).then(undefined, this.fail);
    } catch (e) {
      return Promise.reject(this.toError(e));
    }
  }
}

function guardState(state: DurableState, m: FailureMapper): DurableState {
  return {
    get: (key) => m.run(() => state.get(key)),
    set: (key, value) => m.run(() => state.set(key, value)),
    delete: (key) => m.run(() => state.delete(key)),
    entries: (prefix) => m.run(() => state.entries(prefix)),
  };
}

async function* guardJournal<T>(journal: AsyncIterable<T>, toError: StoreErrorMapper): AsyncIterable<T> {
  try {
    yield* journal;
  } catch (e) {
    throw toError(e);
  }
}

/**
 * The same store with every failure mapped through `toError`. Other
 * properties (`driver`, a driver's `connection`) are the store's own.
 *
 * @example return guardStore(new LowdbStore(options), fileStoreError('lowdb'));
 */
export function guardStore<S extends EngineStore>(store: S, toError: StoreErrorMapper): S {
  const table = store as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const m = new FailureMapper(toError);
  const guarded: Record<string, unknown> = {};
  for (const op of OPS) guarded[op] = (...args: unknown[]) => m.run(() => table[op].apply(store, args));
  guarded.kv = (namespace: string) => guardState(store.kv(namespace), m);
  guarded.readJournal = <T>(runId: string, stream: string) => guardJournal(store.readJournal<T>(runId, stream), toError);
  // Over the store as prototype: what is not an operation (driver, connection) reads through to it.
  return Object.assign(Object.create(store) as S, guarded);
}

/** What a file-system error code means, and what the user does about it. */
const FILE_FIXES: Record<string, { what: string; fix: (path: string) => string }> = {
  EACCES: { what: 'permission denied', fix: (p) => `make ${dirname(p)} writable (and readable) by the user msgflow runs as` },
  EPERM: { what: 'operation not permitted', fix: (p) => `make ${dirname(p)} writable by the user msgflow runs as` },
  EROFS: { what: 'the file system is read-only', fix: () => 'remount it read-write, or point store.dir at a writable place' },
  ENOSPC: { what: 'no space left on the device', fix: () => 'free some disk space' },
  EDQUOT: { what: 'the disk quota is used up', fix: () => 'free some space or raise the quota' },
  EISDIR: { what: 'a directory is in the way', fix: () => 'remove it' },
  ENOTDIR: { what: 'a file is in the way of a directory', fix: (p) => `remove the file that stands in the path ${p}` },
  EEXIST: { what: 'a file is in the way', fix: () => 'remove it' },
  EMFILE: { what: 'too many open files', fix: () => 'raise the open-file limit (ulimit -n)' },
  ENFILE: { what: 'too many open files on the system', fix: () => 'raise the system open-file limit' },
  EIO: { what: 'an I/O error', fix: () => 'check the disk' },
};

const VERBS: Record<string, string> = {
  open: 'write',
  write: 'write',
  rename: 'rename into',
  mkdir: 'create',
  unlink: 'remove',
  read: 'read',
};

/**
 * The mapper of a driver on files (lowdb): a file-system error (one with a
 * `syscall`) becomes STORE_UNAVAILABLE whose reason names the file, what
 * went wrong and what to fix, e.g. `cannot write /srv/app/.msgflow/state/runs/r1/run.jsonl
 * (EACCES: permission denied): make /srv/app/.msgflow/state/runs/r1 writable ...`.
 */
export function fileStoreError(driver: string): StoreErrorMapper {
  return (e) => {
    if (e instanceof MsgflowError) return e;
    const err = e as (NodeJS.ErrnoException & { dest?: string }) | undefined;
    if (typeof err?.code !== 'string' || typeof err.syscall !== 'string') return e;
    const path = err.path ?? err.dest ?? '';
    const known = FILE_FIXES[err.code];
    const what = known?.what ?? err.message;
    const fix = known ? known.fix(path) : 'check that the store directory can be written';
    const reason = `cannot ${VERBS[err.syscall] ?? err.syscall} ${path} (${err.code}: ${what}): ${fix}`;
    return new MsgflowError('STORE_UNAVAILABLE', { driver, reason, path }, { cause: e });
  };
}
