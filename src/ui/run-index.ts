/**
 * The dashboard's view of run history. The embedded store answers
 * `listRuns` by reading every run's file, which with 10,000 runs takes far
 * longer than a page may wait; the dashboard therefore keeps every run record
 * in memory, reloads the whole history in the background at most every
 * `reloadMs`, and re-reads only the unfinished runs (the only ones that
 * change) on demand. Runs of this process are exact at once (the engine's
 * live snapshots); runs of other processes show within `reloadMs`.
 */
import type { Engine } from '../engine/run/index.js';
import { filterRuns } from '../store/run-records.js';
import type { EngineStore, RunQuery, RunRecord } from '../store/types.js';
import { RESUMABLE_STATUSES } from '../store/types.js';

export interface RunIndexOptions {
  store: EngineStore;
  engine: Engine;
  /**
   * Minimum time between two full reloads of the history (they read every
   * run file: about 2 s for 10,000 runs with the embedded store). Runs of this
   * process and unfinished runs do not wait for it. @default 30000
   */
  reloadMs?: number;
  /** Minimum time between two re-reads of the unfinished runs. @default 500 */
  liveMs?: number;
  now?: () => number;
}

export interface RunIndex {
  /** Newest first, filtered like EngineStore.listRuns. */
  list(query?: RunQuery): Promise<RunRecord[]>;
  /** Reads one run now (store or live snapshot) and updates the index; undefined when absent. */
  refresh(id: string): Promise<RunRecord | undefined>;
  /**
   * Re-reads unfinished runs (and, when due, the whole history); returns the
   * records that changed since the last call that saw them.
   */
  poll(): Promise<RunRecord[]>;
  /** Every run record known, unsorted (for metrics). */
  all(): Promise<RunRecord[]>;
}

const changed = (a: RunRecord | undefined, b: RunRecord) =>
  !a || a.status !== b.status || a.updatedAt !== b.updatedAt || a.itemsDone !== b.itemsDone || a.itemsFailed !== b.itemsFailed || a.cancelRequested !== b.cancelRequested;

export function createRunIndex(opts: RunIndexOptions): RunIndex {
  const reloadMs = opts.reloadMs ?? 30_000;
  const liveMs = opts.liveMs ?? 500;
  const now = opts.now ?? Date.now;
  const runs = new Map<string, RunRecord>();
  /**
   * `runs` newest first, rebuilt only when a run comes or goes: a request
   * walks it (reading each record's latest version from the map) instead of
   * sorting 10,000 records.
   */
  let sorted: RunRecord[] | undefined;
  let loadedAt = -Infinity;
  let liveAt = -Infinity;
  let loading: Promise<RunRecord[]> | undefined;
  let living: Promise<RunRecord[]> | undefined;

  const put = (r: RunRecord): boolean => {
    const before = runs.get(r.id);
    runs.set(r.id, r);
    // The order depends only on startedAt and id: a record that changed otherwise keeps its place (list() reads the map).
    if (before?.startedAt !== r.startedAt) sorted = undefined;
    return changed(before, r);
  };
  const remove = (id: string) => {
    if (runs.delete(id)) sorted = undefined;
  };
  const newestFirst = (): RunRecord[] => (sorted ??= filterRuns([...runs.values()]));

  /** Full reload, single-flight. */
  const reload = (): Promise<RunRecord[]> =>
    (loading ??= (async () => {
      try {
        const fresh = await opts.store.listRuns();
        const out: RunRecord[] = [];
        const seen = new Set<string>();
        for (const r of fresh) {
          seen.add(r.id);
          if (put(r)) out.push(r);
        }
        for (const id of [...runs.keys()]) if (!seen.has(id)) remove(id);
        loadedAt = now();
        return out;
      } finally {
        loading = undefined;
      }
    })());

  /** Unfinished runs only: few, and the only records that change. */
  const live = (): Promise<RunRecord[]> =>
    (living ??= (async () => {
      try {
        const ids = [...runs.values()].filter((r) => RESUMABLE_STATUSES.includes(r.status)).map((r) => r.id);
        const fresh = await Promise.all(ids.map((id) => opts.engine.getRun(id).catch(() => undefined)));
        for (const r of opts.engine.activeRuns()) fresh.push(r);
        const out: RunRecord[] = [];
        for (const r of fresh) if (r && put(r)) out.push(r);
        liveAt = now();
        return out;
      } finally {
        living = undefined;
      }
    })());

  async function ensure(): Promise<void> {
    if (loadedAt === -Infinity) await reload();
    else if (now() - loadedAt >= reloadMs) void reload().catch(() => {});
    if (now() - liveAt >= liveMs) await live();
  }

  return {
    async list(query = {}) {
      await ensure();
      const limit = query.limit ?? Infinity;
      const out: RunRecord[] = [];
      for (const old of newestFirst()) {
        if (out.length >= limit) break;
        const r = runs.get(old.id);
        if (!r) continue;
        if (query.flow !== undefined && r.flow !== query.flow) continue;
        if (query.status && !query.status.includes(r.status)) continue;
        out.push(r);
      }
      return out;
    },
    async refresh(id) {
      const r = await opts.engine.getRun(id);
      if (r) put(r);
      else remove(id);
      return r;
    },
    async poll() {
      const out = new Map<string, RunRecord>();
      if (loadedAt === -Infinity || now() - loadedAt >= reloadMs) for (const r of await reload()) out.set(r.id, r);
      for (const r of await live()) out.set(r.id, r);
      return [...out.values()];
    },
    async all() {
      await ensure();
      return [...runs.values()];
    },
  };
}
