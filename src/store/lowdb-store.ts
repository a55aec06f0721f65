/**
 * The embedded driver: lowdb JSON files for what changes rarely (a run's
 * record, its steps and waits; key/value namespaces) and an append-only
 * JSON-lines item log per run for what changes per item (see item-log.ts).
 *
 * Layout under `dir`:
 *   runs/<runId>/run.json      { run, steps, waits }   (lowdb: atomic temp+rename writes)
 *   runs/<runId>/inputs.json   the resolved inputs, written once
 *   runs/<runId>/items.jsonl   one ItemResult per line
 *   kv/<namespace>/<key>.json  one file per key (see kv-files.ts: shared across processes)
 *   leases/<name>/<gen>.json   run ownership, daemon and concurrency claims (see lease-files.ts)
 *
 * One process owns a run at a time (the one executing it); other processes
 * (e.g. `msgflow runs`) only read, and always from disk.
 */
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Low } from 'lowdb';
import { JSONFile } from 'lowdb/node';
import { FlowError } from '../api/errors.js';
import type { DurableState } from './types.js';
import { runNotFound } from './errors.js';
import { ItemLog, readLog, streamLog } from './item-log.js';
import { fileKv } from './kv-files.js';
import { fileLeases } from './lease-files.js';
import { applyRunPatch, filterRuns } from './run-records.js';
import { type EngineStore, type ItemResult, type RunQuery, type RunRecord, type StepRecord, type WaitRecord, RESUMABLE_STATUSES } from './types.js';

interface RunFile {
  run: RunRecord;
  steps: StepRecord[];
  waits: Record<string, WaitRecord>;
}

export interface LowdbStoreOptions {
  /** Directory of the state files; created when missing. */
  dir: string;
}

const SAFE_ID = /^[A-Za-z0-9._-]{1,128}$/;

function checkId(id: string): string {
  if (!SAFE_ID.test(id) || id === '.' || id === '..')
    throw new FlowError('USAGE', { reason: `invalid run id '${id}': expected 1-128 letters, digits, '.', '_' or '-'` });
  return id;
}

async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/**
 * @example
 * const store = createLowdbStore({ dir: '.msgflow/state' });
 */
export function createLowdbStore(options: LowdbStoreOptions): EngineStore {
  const runsDir = join(options.dir, 'runs');
  const kvDir = join(options.dir, 'kv');
  const leases = fileLeases(join(options.dir, 'leases'));
  /** Runs this process owns (created or updated here): their in-memory copy is authoritative. */
  const dbs = new Map<string, Promise<Low<RunFile>>>();
  const logs = new Map<string, Promise<ItemLog>>();

  const runFile = (id: string) => join(runsDir, checkId(id), 'run.json');
  const itemFile = (id: string) => join(runsDir, checkId(id), 'items.jsonl');
  // Stream names are free text (`check/-`): encoded so each maps to one safe file name.
  const journalFile = (id: string, stream: string) => join(runsDir, checkId(id), 'journal', `${encodeURIComponent(stream).replace(/\./g, '%2E')}.jsonl`);
  const journals = new Map<string, Promise<ItemLog>>();

  function journalOf(id: string, stream: string): Promise<ItemLog> {
    const file = journalFile(id, stream);
    let p = journals.get(file);
    if (!p) {
      p = ItemLog.open(file);
      journals.set(file, p);
      p.catch(() => journals.delete(file));
    }
    return p;
  }

  function ownRun(id: string, initial?: RunFile): Promise<Low<RunFile>> {
    let p = dbs.get(id);
    if (!p) {
      p = (async () => {
        const data = initial ?? (await readJson<RunFile>(runFile(id)));
        if (!data?.run) throw runNotFound(id);
        await mkdir(join(runsDir, checkId(id)), { recursive: true });
        const db = new Low<RunFile>(new JSONFile(runFile(id)), data);
        if (initial) await db.write();
        return db;
      })();
      dbs.set(id, p);
      p.catch(() => dbs.delete(id));
    }
    return p;
  }

  async function readRun(id: string): Promise<RunFile | undefined> {
    const own = dbs.get(id);
    if (own) return structuredClone((await own).data);
    return readJson<RunFile>(runFile(id));
  }

  function logOf(id: string): Promise<ItemLog> {
    let p = logs.get(id);
    if (!p) {
      p = ItemLog.open(itemFile(id));
      logs.set(id, p);
      p.catch(() => logs.delete(id));
    }
    return p;
  }

  async function closeLog(id: string): Promise<void> {
    const p = logs.get(id);
    if (!p) return;
    logs.delete(id);
    await (await p).close();
  }

  function kv(namespace: string): DurableState {
    return fileKv(kvDir, namespace);
  }

  return {
    driver: 'lowdb',
    async createRun(run) {
      checkId(run.id);
      await ownRun(run.id, { run: structuredClone(run), steps: [], waits: {} });
    },
    async updateRun(id, patch) {
      const db = await ownRun(id);
      db.data.run = applyRunPatch(db.data.run, patch);
      await db.write();
      // A finished run gets no more items: release its file descriptor.
      if (!RESUMABLE_STATUSES.includes(db.data.run.status)) await closeLog(id);
      return structuredClone(db.data.run);
    },
    async getRun(id) {
      if (!SAFE_ID.test(id)) return undefined;
      return (await readRun(id))?.run;
    },
    async listRuns(query: RunQuery = {}) {
      let ids: string[];
      try {
        ids = await readdir(runsDir);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw e;
      }
      const runs = await Promise.all(ids.filter((id) => SAFE_ID.test(id)).map((id) => readRun(id).catch(() => undefined)));
      return filterRuns(runs.flatMap((r) => (r?.run ? [r.run] : [])), query);
    },
    async saveInputs(runId, inputs) {
      const db = new Low<Record<string, unknown>>(new JSONFile(join(runsDir, checkId(runId), 'inputs.json')), inputs);
      await mkdir(join(runsDir, runId), { recursive: true });
      await db.write();
    },
    async loadInputs(runId) {
      return readJson<Record<string, unknown>>(join(runsDir, checkId(runId), 'inputs.json'));
    },
    async saveStep(step) {
      const db = await ownRun(step.runId);
      const copy = JSON.parse(JSON.stringify(step)) as StepRecord;
      const i = db.data.steps.findIndex((s) => s.step === step.step);
      if (i === -1) db.data.steps.push(copy);
      else db.data.steps[i] = copy;
      await db.write();
    },
    async getSteps(runId) {
      return (await readRun(runId))?.steps ?? [];
    },
    async appendItems(runId, items) {
      if (items.length === 0) return;
      await (await logOf(runId)).append(items);
    },
    async getItems(runId, step) {
      const { records } = await readLog<ItemResult>(itemFile(runId));
      const out = new Map<number, ItemResult>();
      for (const r of records) if (r.step === step) out.set(r.index, r);
      return out;
    },
    async appendJournal(runId, stream, entries) {
      if (entries.length === 0) return;
      await (await journalOf(runId, stream)).append(entries);
    },
    async *readJournal<T>(runId: string, stream: string): AsyncIterable<T> {
      yield* streamLog<T>(journalFile(runId, stream));
    },
    async setWait(runId, wait) {
      const db = await ownRun(runId);
      db.data.waits[wait.key] = structuredClone(wait);
      await db.write();
    },
    async getWait(runId, key) {
      return (await readRun(runId))?.waits[key];
    },
    async deleteWait(runId, key) {
      const db = await ownRun(runId);
      if (!(key in db.data.waits)) return;
      delete db.data.waits[key];
      await db.write();
    },
    async listWaits(runId) {
      return Object.values((await readRun(runId))?.waits ?? {});
    },
    acquireLease: (name, lease) => leases.acquire(name, lease),
    renewLease: (name, token, expiresAt) => leases.renew(name, token, expiresAt),
    releaseLease: (name, token) => leases.release(name, token),
    getLease: (name) => leases.get(name),
    kv,
    async close() {
      await Promise.all([...logs.keys()].map(closeLog));
      const open = [...journals.values()];
      journals.clear();
      await Promise.all(open.map(async (p) => (await p.catch(() => undefined))?.close()));
      // Let lowdb's pending writes land.
      for (const p of dbs.values()) await (await p.catch(() => undefined))?.write();
      dbs.clear();
    },
  };
}
