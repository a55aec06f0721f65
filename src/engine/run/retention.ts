/**
 * Run retention: a finished run (succeeded, failed or cancelled) whose end is
 * older than the retention is deleted with everything kept for it
 * (EngineStore.deleteRun: record, inputs, steps, items, waits, journals, its
 * own state). A bot that answers every message with a run otherwise keeps
 * some kilobytes per message for good: on disk with lowdb, in memory with
 * Redis.
 *
 * What is never deleted: a run that may go on (running, waiting,
 * interrupted), whatever its age; and what runs share (`shared:` state such
 * as opt-outs and pauses, the scheduler's state, sessions), which is not a
 * run's.
 *
 * The retention is at least a day ({@link MIN_RETENTION_MS}): a run that a
 * notification started is known by its id, derived from the notification,
 * and the service redelivers a notification it did not see deleted for up to
 * 24 hours; a run deleted sooner could be started again by the same message.
 *
 * `msgflow start` runs {@link startRetention} when config.yaml sets
 * `store.retention`; `msgflow runs prune` runs {@link pruneRuns} once.
 */
import { FlowError } from '../../api/errors.js';
import { MIN_RETENTION_MS } from '../../store/config.js';
import type { EngineStore, RunQuery, RunStatus } from '../../store/types.js';
import type { Clock } from '../../util/clock.js';
import { formatDuration } from '../../util/duration.js';
import type { Logger } from '../../util/logger.js';
import type { EngineBus } from '../events.js';

/** The statuses of a run that is over for good. */
export const FINISHED_STATUSES: readonly RunStatus[] = ['succeeded', 'failed', 'cancelled'];

export { MIN_RETENTION_MS };

/** Runs deleted at once within a batch. */
const DELETE_CONCURRENCY = 16;

/** How often the daemon deletes what has aged past the retention. */
export const RETENTION_INTERVAL_MS = 3_600_000;

export interface PruneOptions {
  /** Runs that finished longer ago than this are deleted (at least {@link MIN_RETENTION_MS}). */
  olderThanMs: number;
  /** The time the age is measured from (ms since the epoch). */
  now: number;
  /** Only this flow's runs. @default every flow */
  flow?: string;
  /** Count what would be deleted, delete nothing. @default false */
  dryRun?: boolean;
  /** Runs listed and deleted at a time. @default 200 */
  batch?: number;
  /** Stops between two deletions (the daemon stopping). */
  signal?: AbortSignal;
  /** Told what was deleted (`runs:deleted`: the log line, the metric). @default nobody */
  bus?: EngineBus;
}

export interface PruneResult {
  /** Runs that finished before this time were deleted (or would be, dry run). */
  cutoff: number;
  /** Runs deleted; with dryRun, runs that would be. */
  deleted: number;
  /** `deleted` by flow. */
  byFlow: Record<string, number>;
  dryRun: boolean;
}

/**
 * Deletes (or, dry run, counts) the finished runs older than `olderThanMs`,
 * a batch at a time, so that memory does not grow with what is deleted.
 *
 * @example await pruneRuns(store, { olderThanMs: 30 * 86_400_000, now: Date.now() })
 */
export async function pruneRuns(store: EngineStore, o: PruneOptions): Promise<PruneResult> {
  checkRetention(o.olderThanMs, 'olderThanMs');
  const cutoff = o.now - o.olderThanMs;
  const query: RunQuery = { status: FINISHED_STATUSES, finishedBefore: cutoff, ...(o.flow === undefined ? {} : { flow: o.flow }) };
  const result: PruneResult = { cutoff, deleted: 0, byFlow: {}, dryRun: o.dryRun ?? false };
  const count = (flow: string) => {
    result.deleted++;
    result.byFlow[flow] = (result.byFlow[flow] ?? 0) + 1;
  };
  if (o.dryRun) {
    for (const r of await store.listRuns(query)) count(r.flow);
    return result;
  }
  try {
    await deleteInBatches(store, query, Math.max(1, o.batch ?? 200), count, o.signal);
  } finally {
    // What was deleted is told even when a later deletion failed.
    if (result.deleted > 0) o.bus?.emit('runs:deleted', { deleted: result.deleted, byFlow: result.byFlow, cutoff });
  }
  return result;
}

async function deleteInBatches(
  store: EngineStore,
  query: RunQuery,
  batch: number,
  count: (flow: string) => void,
  signal: AbortSignal | undefined,
): Promise<void> {
  for (;;) {
    const runs = await store.listRuns({ ...query, limit: batch });
    let gone = 0;
    // A few at once: each deletion waits on the backend (round trips, unlinks), not on this process.
    for (let i = 0; i < runs.length; i += DELETE_CONCURRENCY) {
      if (signal?.aborted) return;
      const some = runs.slice(i, i + DELETE_CONCURRENCY);
      const done = await Promise.all(some.map((r) => store.deleteRun(r.id)));
      some.forEach((r, k) => {
        if (!done[k]) return;
        count(r.flow);
        gone++;
      });
    }
    // A batch that deleted nothing would be listed again: stop rather than loop.
    if (runs.length < batch || gone === 0) return;
  }
}

/** Throws USAGE when `ms` is not a retention (a duration of at least a day); `where` names the setting. */
export function checkRetention(ms: number, where: string): void {
  if (!Number.isFinite(ms) || ms < MIN_RETENTION_MS)
    throw new FlowError('USAGE', {
      reason: `${where}: a retention of ${Number.isFinite(ms) ? formatDuration(ms) : String(ms)} is too short: runs are kept at least 1d (the service redelivers a notification for up to 24 hours)`,
    });
}

export interface RetentionOptions {
  store: EngineStore;
  clock: Clock;
  /** Where a failed pass is reported. */
  logger: Logger;
  /** Where each pass that deleted runs is told (`runs:deleted`: the log line, the metric). */
  bus: EngineBus;
  /** config.yaml `store.retention`. */
  retentionMs: number;
  /** @default RETENTION_INTERVAL_MS (hourly) */
  intervalMs?: number;
}

/** The daemon's retention: a pass at start, then one every `intervalMs`. */
export interface Retention {
  /** Resolves when the pass under way (if any) has stopped. */
  stop(): Promise<void>;
  /** Passes completed so far. */
  readonly passes: number;
}

/**
 * Deletes what has aged past the retention now and then every hour, on the
 * engine's clock. A pass that fails (the store unreachable) is logged and
 * tried again at the next one: nothing depends on it but disk and memory.
 */
export function startRetention(o: RetentionOptions): Retention {
  checkRetention(o.retentionMs, 'store.retention');
  const stopped = new AbortController();
  const interval = o.intervalMs ?? RETENTION_INTERVAL_MS;
  let passes = 0;
  const pass = async () => {
    try {
      // The log line comes from the bus (engine/progress/log-subscriber.ts), as every run event's does.
      await pruneRuns(o.store, { olderThanMs: o.retentionMs, now: o.clock.now(), signal: stopped.signal, bus: o.bus });
    } catch (e) {
      o.logger.warn(`retention: this pass stopped, the next one is in ${formatDuration(interval)}: ${(e as Error).message}`);
    }
    passes++;
  };
  const loop = (async () => {
    while (!stopped.signal.aborted) {
      // The next pass is due an interval after this one began, not after it ended: a long pass, or
      // a clock that moved on meanwhile (a virtual one), makes the next one sooner, never later.
      const next = o.clock.now() + interval;
      await pass();
      await o.clock.sleep(Math.max(0, next - o.clock.now()), stopped.signal).catch(() => undefined);
    }
  })();
  return {
    async stop() {
      stopped.abort();
      await loop;
    },
    get passes() {
      return passes;
    },
  };
}
