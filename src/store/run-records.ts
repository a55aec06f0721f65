import { FlowError } from '../api/errors.js';
import { RESUMABLE_STATUSES, type RunQuery, type RunRecord } from './types.js';

/** Applies a RunQuery: filter by flow, status and finish time, newest first, then limit. Shared by the drivers. */
export function filterRuns(runs: RunRecord[], query: RunQuery = {}): RunRecord[] {
  const out = runs
    .filter(
      (r) =>
        (query.flow === undefined || r.flow === query.flow) &&
        (!query.status || query.status.includes(r.status)) &&
        (query.finishedBefore === undefined || (r.finishedAt !== undefined && r.finishedAt < query.finishedBefore)),
    )
    .sort((a, b) => b.startedAt - a.startedAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  return query.limit === undefined ? out : out.slice(0, Math.max(0, query.limit));
}

/**
 * Merges a patch into a run record. A key present with `undefined` removes the
 * field (e.g. `waitingUntil` once the wait is over), which a JSON round trip
 * alone would silently ignore.
 */
export function applyRunPatch(run: RunRecord, patch: Partial<Omit<RunRecord, 'id'>>): RunRecord {
  const out: Record<string, unknown> = { ...run };
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) delete out[k];
    else out[k] = JSON.parse(JSON.stringify(v)) as unknown;
  }
  out.id = run.id;
  return out as unknown as RunRecord;
}

/**
 * The refusal of deleteRun for a run that may still go on: its owner would
 * write into a run that is gone. Shared by the drivers.
 */
export function refuseUnfinished(run: RunRecord): void {
  if (RESUMABLE_STATUSES.includes(run.status)) throw new FlowError('RUN_UNFINISHED', { runId: run.id, status: run.status, flow: run.flow });
}
