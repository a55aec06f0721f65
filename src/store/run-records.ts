import type { RunQuery, RunRecord } from './types.js';

/** Applies a RunQuery: filter by flow and status, newest first, then limit. Shared by the drivers. */
export function filterRuns(runs: RunRecord[], query: RunQuery = {}): RunRecord[] {
  const out = runs
    .filter((r) => (query.flow === undefined || r.flow === query.flow) && (!query.status || query.status.includes(r.status)))
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
