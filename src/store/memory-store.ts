/**
 * The memory driver: everything in process memory, lost on exit. For tests,
 * `--dry-run` and embedding. Values are copied through JSON on the way in and
 * out so that it behaves like the durable drivers (no shared references, no
 * non-JSON values).
 */
import type { DurableState } from './types.js';
import { flatString } from '../util/flat-string.js';
import { runNotFound } from './errors.js';
import {
  runItemsNamespace,
  type EngineStore,
  type ItemResult,
  type Lease,
  type RunQuery,
  type RunRecord,
  type StepRecord,
  type WaitRecord,
} from './types.js';
import { applyRunPatch, filterRuns, refuseUnfinished } from './run-records.js';

const copy = <T>(v: T): T => (v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T));

interface RunData {
  run: RunRecord;
  steps: Map<string, StepRecord>;
  items: ItemResult[];
  waits: Map<string, WaitRecord>;
  inputs?: Record<string, unknown>;
}

/**
 * A DurableState over a Map of JSON texts: a value is copied by one
 * stringify on the way in and one parse on the way out, and a campaign's
 * 100,000 records are kept as compact strings rather than objects.
 */
export function memoryState(map: Map<string, string> = new Map()): DurableState {
  const parsed = <T>(text: string | undefined) => (text === undefined ? undefined : (JSON.parse(text) as T));
  return {
    async get<T>(key: string) {
      return parsed<T>(map.get(key));
    },
    async set(key, value) {
      const text = value === undefined ? undefined : (JSON.stringify(value) as string | undefined);
      if (text === undefined) map.delete(key);
      // Kept flat (util/flat-string.ts): a new key may be a rope (a prefix and a key), and
      // JSON.stringify may answer one too (the sticky sender's record came as two pieces).
      else map.set(map.has(key) ? key : flatString(key), flatString(text));
    },
    async delete(key) {
      map.delete(key);
    },
    async entries<T>(prefix = '') {
      return [...map.entries()]
        .filter(([k]) => k.startsWith(prefix))
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, parsed<T>(v)!] as [string, T]);
    },
  };
}

/** @example const store = createMemoryStore(); */
export function createMemoryStore(): EngineStore {
  return new MemoryStore();
}

/**
 * A class rather than one closure so that each operation stays short. Its
 * methods read fields only (no calls through `this`), so a wrapper that
 * forwards calls to it (a Proxy in the outage tests) sees each call once.
 */
class MemoryStore implements EngineStore {
  readonly driver = 'memory';
  private readonly runs = new Map<string, RunData>();
  private readonly kvs = new Map<string, Map<string, string>>();
  private readonly journals = new Map<string, unknown[]>();
  // Leases: one process, so a map is atomic enough (every operation is synchronous).
  private readonly leases = new Map<string, Lease>();

  async createRun(run: RunRecord): Promise<void> {
    this.runs.set(run.id, { run: copy(run), steps: new Map(), items: [], waits: new Map() });
  }
  async updateRun(id: string, patch: Partial<Omit<RunRecord, 'id'>>): Promise<RunRecord> {
    const r = need(this.runs, id);
    r.run = applyRunPatch(r.run, patch);
    return copy(r.run);
  }
  async getRun(id: string): Promise<RunRecord | undefined> {
    return copy(this.runs.get(id)?.run);
  }
  async listRuns(query: RunQuery = {}): Promise<RunRecord[]> {
    return filterRuns(
      [...this.runs.values()].map((r) => copy(r.run)),
      query,
    );
  }
  async deleteRun(id: string): Promise<boolean> {
    const r = this.runs.get(id);
    if (!r) return false;
    refuseUnfinished(r.run);
    this.runs.delete(id);
    this.kvs.delete(`run:${id}`);
    this.kvs.delete(runItemsNamespace(id));
    for (const key of this.journals.keys()) if (key.startsWith(`${id}\u0000`)) this.journals.delete(key);
    return true;
  }
  async saveInputs(runId: string, inputs: Record<string, unknown>): Promise<void> {
    need(this.runs, runId).inputs = copy(inputs);
  }
  async loadInputs(runId: string): Promise<Record<string, unknown> | undefined> {
    return copy(this.runs.get(runId)?.inputs);
  }
  async saveStep(step: StepRecord): Promise<void> {
    need(this.runs, step.runId).steps.set(step.step, copy(step));
  }
  async getSteps(runId: string): Promise<StepRecord[]> {
    return [...(this.runs.get(runId)?.steps.values() ?? [])].map(copy);
  }
  async appendItems(runId: string, items: readonly ItemResult[]): Promise<void> {
    const r = need(this.runs, runId);
    for (const it of items) r.items.push(copy(it));
  }
  async getItems(runId: string, step: string): Promise<Map<number, ItemResult>> {
    const out = new Map<number, ItemResult>();
    for (const it of this.runs.get(runId)?.items ?? []) if (it.step === step) out.set(it.index, copy(it));
    return out;
  }
  async appendJournal(runId: string, stream: string, entries: readonly unknown[]): Promise<void> {
    const key = `${runId}\u0000${stream}`;
    let j = this.journals.get(key);
    if (!j) this.journals.set(key, (j = []));
    for (const e of entries) j.push(copy(e));
  }
  async *readJournal<T>(runId: string, stream: string): AsyncIterable<T> {
    // A snapshot of the length: entries appended while replaying are not part of this replay.
    const j = this.journals.get(`${runId}\u0000${stream}`) ?? [];
    const n = j.length;
    for (let i = 0; i < n; i++) yield copy(j[i]) as T;
  }
  async setWait(runId: string, wait: WaitRecord): Promise<void> {
    need(this.runs, runId).waits.set(wait.key, copy(wait));
  }
  async deleteWait(runId: string, key: string): Promise<void> {
    this.runs.get(runId)?.waits.delete(key);
  }
  async listWaits(runId: string): Promise<WaitRecord[]> {
    return [...(this.runs.get(runId)?.waits.values() ?? [])].map(copy);
  }
  async acquireLease(name: string, lease: Lease): Promise<Lease | undefined> {
    const cur = this.leases.get(name);
    if (cur && cur.token !== lease.token && cur.expiresAt > Date.now()) return copy(cur);
    this.leases.set(name, copy(lease));
    return undefined;
  }
  async renewLease(name: string, token: string, expiresAt: number): Promise<boolean> {
    const cur = this.leases.get(name);
    if (!cur || cur.token !== token) return false;
    cur.expiresAt = expiresAt;
    return true;
  }
  async releaseLease(name: string, token: string): Promise<void> {
    if (this.leases.get(name)?.token === token) this.leases.delete(name);
  }
  async getLease(name: string): Promise<Lease | undefined> {
    return copy(this.leases.get(name));
  }
  kv(namespace: string): DurableState {
    let m = this.kvs.get(namespace);
    if (!m) this.kvs.set(namespace, (m = new Map()));
    return memoryState(m);
  }
  async close(): Promise<void> {}
}

function need(runs: Map<string, RunData>, id: string): RunData {
  const r = runs.get(id);
  if (!r) throw runNotFound(id);
  return r;
}
