/**
 * The dashboard's view of run history, kept in memory so that a page never
 * waits for the store to list 10,000 runs. Three reads keep it current, each
 * single-flight and spaced so that it never takes more than a small share of
 * the time, whatever the store's cost:
 *
 * - live: the unfinished runs (the only records that change), by id, every
 *   `liveMs`; runs of this process come from the engine's live snapshots;
 * - recent: the newest `recentLimit` runs (`listRuns({ limit })`), which is
 *   how runs started by other processes (a `msgflow run` beside the daemon,
 *   or everything under `msgflow ui`) appear;
 * - full: the whole history, at start and rarely after (runs removed, old
 *   runs changed by another process).
 *
 * The spacing of recent and full adapts to their cost (10 and 100 times the
 * last one's duration): a store that lists cheaply (an index) is followed
 * closely, one that reads every run file is not hammered.
 */
import type { Engine } from '../engine/run/types.js';
import { filterRuns } from '../store/run-records.js';
import type { EngineStore, RunQuery, RunRecord } from '../store/types.js';
import { RESUMABLE_STATUSES } from '../store/types.js';

export interface RunIndexOptions {
  store: EngineStore;
  engine: Engine;
  /** Minimum time between two full reloads of the history; it also grows to 100 times the last one's duration. @default 60000 */
  reloadMs?: number;
  /** Minimum time between two reads of the newest runs; it also grows to 10 times the last one's duration. @default 1000 */
  recentMs?: number;
  /** How many of the newest runs a recent read asks for. @default 100 */
  recentLimit?: number;
  /** Minimum time between two re-reads of the unfinished runs. @default 500 */
  liveMs?: number;
  now?: () => number;
}

export interface RunIndex {
  /** Newest first, filtered like EngineStore.listRuns. */
  list(query?: RunQuery): Promise<RunRecord[]>;
  /** Starts the reads that are due; waits only for the first load and the (cheap) live read. */
  ensure(): Promise<void>;
  /** `list` without reading anything: what the index holds now; `match` narrows it further (a search, run-search.ts). */
  listNow(query?: RunQuery, match?: (r: RunRecord) => boolean): RunRecord[];
  /** The record the index holds for a run, without reading anything. */
  get(id: string): RunRecord | undefined;
  /** Reads one run now (store or live snapshot) and updates the index; undefined when absent. */
  refresh(id: string): Promise<RunRecord | undefined>;
  /** Runs the reads that are due; returns the records that changed since they were last seen. */
  poll(): Promise<RunRecord[]>;
  /** Every run record known, unsorted (for metrics). */
  all(): Promise<RunRecord[]>;
  /** Grows whenever a record is added, removed or changes what a list shows: answers built from the index can be reused while it stays. */
  version(): number;
}

const changed = (a: RunRecord | undefined, b: RunRecord) =>
  !a ||
  a.status !== b.status ||
  a.updatedAt !== b.updatedAt ||
  a.itemsDone !== b.itemsDone ||
  a.itemsFailed !== b.itemsFailed ||
  a.itemsInvalid !== b.itemsInvalid ||
  a.itemsDuplicate !== b.itemsDuplicate ||
  a.itemsSkipped !== b.itemsSkipped ||
  a.cancelRequested !== b.cancelRequested ||
  a.currentStep !== b.currentStep ||
  a.waitingUntil !== b.waitingUntil ||
  a.waitReason !== b.waitReason ||
  a.finishedAt !== b.finishedAt;

/** A read that runs at most once at a time and at most every max(minMs, factor × its last duration). */
function paced(minMs: number, factor: number, now: () => number, read: () => Promise<RunRecord[]>) {
  let at = -Infinity;
  let gap = minMs;
  let running: Promise<RunRecord[]> | undefined;
  return {
    get done() {
      return at !== -Infinity;
    },
    due: () => now() - at >= gap,
    run: (): Promise<RunRecord[]> =>
      (running ??= (async () => {
        const started = now();
        try {
          return await read();
        } finally {
          at = now();
          gap = Math.max(minMs, factor * (at - started));
          running = undefined;
        }
      })()),
  };
}

/**
 * The records `query` selects, walking `order` (newest first) and reading
 * each record's latest version from `runs`.
 */
function pick(order: RunRecord[], runs: Map<string, RunRecord>, query: RunQuery, match?: (r: RunRecord) => boolean): RunRecord[] {
  const limit = query.limit ?? Infinity;
  const out: RunRecord[] = [];
  for (const old of order) {
    if (out.length >= limit) break;
    const r = runs.get(old.id);
    if (!r) continue;
    if (query.flow !== undefined && r.flow !== query.flow) continue;
    if (query.status && !query.status.includes(r.status)) continue;
    if (match && !match(r)) continue;
    out.push(r);
  }
  return out;
}

export function createRunIndex(opts: RunIndexOptions): RunIndex {
  const now = opts.now ?? Date.now;
  const recentLimit = opts.recentLimit ?? 100;
  const runs = new Map<string, RunRecord>();
  /**
   * `runs` newest first, rebuilt only when a run comes or goes: a request
   * walks it (reading each record's latest version from the map) instead of
   * sorting 10,000 records.
   */
  let sorted: RunRecord[] | undefined;
  let version = 0;

  const put = (r: RunRecord): boolean => {
    const before = runs.get(r.id);
    // Reads overlap (a request's refresh, the SSE flush's live read): one that
    // started earlier may land later, and must not put an older state back.
    if (before && r.updatedAt < before.updatedAt) return false;
    runs.set(r.id, r);
    // The order depends only on startedAt and id: a record that changed otherwise keeps its place.
    if (before?.startedAt !== r.startedAt) sorted = undefined;
    const differs = changed(before, r) || before?.startedAt !== r.startedAt;
    if (differs) version++;
    return differs;
  };
  const remove = (id: string) => {
    if (runs.delete(id)) {
      sorted = undefined;
      version++;
    }
  };
  const newestFirst = (): RunRecord[] => (sorted ??= filterRuns([...runs.values()]));
  const putAll = (records: Iterable<RunRecord | undefined>): RunRecord[] => {
    const out: RunRecord[] = [];
    for (const r of records) if (r && put(r)) out.push(r);
    return out;
  };

  const full = paced(opts.reloadMs ?? 60_000, 100, now, async () => {
    const fresh = await opts.store.listRuns();
    const seen = new Set(fresh.map((r) => r.id));
    for (const id of [...runs.keys()]) if (!seen.has(id)) remove(id);
    return putAll(fresh);
  });
  const recent = paced(opts.recentMs ?? 1000, 10, now, async () => putAll(await opts.store.listRuns({ limit: recentLimit })));
  const live = paced(opts.liveMs ?? 500, 1, now, async () => {
    const ids = [...runs.values()].filter((r) => RESUMABLE_STATUSES.includes(r.status)).map((r) => r.id);
    const fresh = await Promise.all(ids.map((id) => opts.engine.getRun(id).catch(() => undefined)));
    return putAll([...fresh, ...opts.engine.activeRuns()]);
  });

  /** For requests: never waits for more than the first load and the (cheap) live read. */
  async function ensure(): Promise<void> {
    if (!full.done) await full.run();
    else if (full.due()) void full.run().catch(() => {});
    else if (recent.due()) void recent.run().catch(() => {});
    if (live.due()) await live.run();
  }

  const listNow = (query: RunQuery = {}, match?: (r: RunRecord) => boolean): RunRecord[] => pick(newestFirst(), runs, query, match);

  return {
    async list(query = {}) {
      await ensure();
      return listNow(query);
    },
    ensure,
    listNow,
    get: (id) => runs.get(id),
    async refresh(id) {
      const r = await opts.engine.getRun(id);
      if (r) put(r);
      else remove(id);
      return r;
    },
    async poll() {
      const out = new Map<string, RunRecord>();
      const add = (rs: RunRecord[]) => rs.forEach((r) => out.set(r.id, r));
      if (!full.done || full.due()) add(await full.run());
      else if (recent.due()) add(await recent.run());
      if (live.due()) add(await live.run());
      return [...out.values()];
    },
    async all() {
      await ensure();
      return [...runs.values()];
    },
    version: () => version,
  };
}
