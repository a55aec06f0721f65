/**
 * The memory driver: everything in process memory, lost on exit. For tests,
 * `--dry-run` and embedding. Values are copied through JSON on the way in and
 * out so that it behaves like the durable drivers (no shared references, no
 * non-JSON values).
 */
import type { DurableState } from './types.js';
import { runNotFound } from './errors.js';
import type { EngineStore, ItemResult, Lease, RunQuery, RunRecord, StepRecord, WaitRecord } from './types.js';
import { applyRunPatch, filterRuns } from './run-records.js';

const copy = <T>(v: T): T => (v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T));

interface RunData {
  run: RunRecord;
  steps: Map<string, StepRecord>;
  items: ItemResult[];
  waits: Map<string, WaitRecord>;
  inputs?: Record<string, unknown>;
}

/** A DurableState over a Map, JSON-copying values. */
export function memoryState(map: Map<string, unknown> = new Map()): DurableState {
  return {
    async get<T>(key: string) {
      return copy(map.get(key)) as T | undefined;
    },
    async set(key, value) {
      if (value === undefined) map.delete(key);
      else map.set(key, copy(value));
    },
    async delete(key) {
      map.delete(key);
    },
    async entries<T>(prefix = '') {
      return [...map.entries()]
        .filter(([k]) => k.startsWith(prefix))
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, copy(v) as T] as [string, T]);
    },
  };
}

/** @example const store = createMemoryStore(); */
export function createMemoryStore(): EngineStore {
  const runs = new Map<string, RunData>();
  const kvs = new Map<string, Map<string, unknown>>();
  const journals = new Map<string, unknown[]>();
  // Leases: one process, so a map is atomic enough (every operation is synchronous).
  const leases = new Map<string, Lease>();
  const need = (id: string): RunData => {
    const r = runs.get(id);
    if (!r) throw runNotFound(id);
    return r;
  };

  return {
    driver: 'memory',
    async createRun(run) {
      runs.set(run.id, { run: copy(run), steps: new Map(), items: [], waits: new Map() });
    },
    async updateRun(id, patch) {
      const r = need(id);
      r.run = applyRunPatch(r.run, patch);
      return copy(r.run);
    },
    async getRun(id) {
      return copy(runs.get(id)?.run);
    },
    async listRuns(query: RunQuery = {}) {
      return filterRuns([...runs.values()].map((r) => copy(r.run)), query);
    },
    async saveInputs(runId, inputs) {
      need(runId).inputs = copy(inputs);
    },
    async loadInputs(runId) {
      return copy(runs.get(runId)?.inputs);
    },
    async saveStep(step) {
      need(step.runId).steps.set(step.step, copy(step));
    },
    async getSteps(runId) {
      return [...(runs.get(runId)?.steps.values() ?? [])].map(copy);
    },
    async appendItems(runId, items) {
      const r = need(runId);
      for (const it of items) r.items.push(copy(it));
    },
    async getItems(runId, step) {
      const out = new Map<number, ItemResult>();
      for (const it of runs.get(runId)?.items ?? []) if (it.step === step) out.set(it.index, copy(it));
      return out;
    },
    async appendJournal(runId, stream, entries) {
      const key = `${runId}\u0000${stream}`;
      let j = journals.get(key);
      if (!j) journals.set(key, (j = []));
      for (const e of entries) j.push(copy(e));
    },
    async *readJournal<T>(runId: string, stream: string): AsyncIterable<T> {
      // A snapshot of the length: entries appended while replaying are not part of this replay.
      const j = journals.get(`${runId}\u0000${stream}`) ?? [];
      const n = j.length;
      for (let i = 0; i < n; i++) yield copy(j[i]) as T;
    },
    async setWait(runId, wait) {
      need(runId).waits.set(wait.key, copy(wait));
    },
    async getWait(runId, key) {
      return copy(runs.get(runId)?.waits.get(key));
    },
    async deleteWait(runId, key) {
      runs.get(runId)?.waits.delete(key);
    },
    async listWaits(runId) {
      return [...(runs.get(runId)?.waits.values() ?? [])].map(copy);
    },
    async acquireLease(name, lease) {
      const cur = leases.get(name);
      if (cur && cur.token !== lease.token && cur.expiresAt > Date.now()) return copy(cur);
      leases.set(name, copy(lease));
      return undefined;
    },
    async renewLease(name, token, expiresAt) {
      const cur = leases.get(name);
      if (!cur || cur.token !== token) return false;
      cur.expiresAt = expiresAt;
      return true;
    },
    async releaseLease(name, token) {
      if (leases.get(name)?.token === token) leases.delete(name);
    },
    async getLease(name) {
      return copy(leases.get(name));
    },
    kv(namespace) {
      let m = kvs.get(namespace);
      if (!m) kvs.set(namespace, (m = new Map()));
      return memoryState(m);
    },
    async close() {},
  };
}
