/**
 * The embedded driver ("lowdb"): small JSON documents for what changes rarely
 * and append-only JSON-lines logs for everything that grows with the data, so
 * that no write costs more as the store fills up.
 *
 * Layout under `dir`:
 *   runs.jsonl                 the run index: one line per run created
 *                              (`{id,flow,t,s}`) and per status change
 *                              (`{id,s}`), shared by every process (O_APPEND)
 *   runs/<runId>/run.json      { run, steps, waits }   (lowdb: atomic temp+rename writes of one small document)
 *   runs/<runId>/inputs.json   the resolved inputs, written once
 *   runs/<runId>/items.jsonl   one ItemResult per line (item-log.ts)
 *   runs/<runId>/journal/<stream>.jsonl   the run's journals, appended
 *   runs/<runId>/state.<g>.jsonl          the run's own kv namespace `run:<runId>` (kv-log.ts)
 *   kv/<namespace>.<g>.jsonl (+ .snap.jsonl)  every other kv namespace (kv-log.ts)
 *
 * No directory holds a file per key or per item: a kv namespace is one log
 * (plus a snapshot after compaction) whatever its size, with an index in
 * memory that holds locations, not values. kv-log.ts documents how several
 * processes share a namespace and how compaction stays crash-safe.
 *
 * `listRuns` reads the run index (one short line per run, followed by size
 * as other processes append) and opens only the run documents it returns:
 * with a limit it stops once it has enough, and a status filter (the engine
 * looking for resumable runs at start) skips runs the index knows finished.
 * A status change is indexed after the run document is written, so the index
 * can lag behind a crash but never run ahead of it; runs indexed as resumable
 * are always re-read.
 *   leases/<name>/<gen>.json   run ownership, daemon and concurrency claims (see lease-files.ts)
 *
 * One process owns a run at a time (the one executing it); other processes
 * (e.g. `msgflow runs`) only read, and always from disk.
 *
 * Data written by earlier versions is read as is (run.json, items.jsonl); a
 * store without a run index gets one built from runs/ on first open, and a
 * kv namespace still in the old one-file-per-key layout (kv/<namespace>/) is
 * imported into its log the first time it is opened, then removed.
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, linkSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Low } from 'lowdb';
import { JSONFile } from 'lowdb/node';
import { FlowError } from '../api/errors.js';
import type { DurableState } from './types.js';
import { runNotFound } from './errors.js';
import { ItemLog, readLog, streamLog } from './item-log.js';
import { KvLog } from './kv-log.js';
import { LineTail } from './line-tail.js';
import { fileLeases } from './lease-files.js';
import { applyRunPatch, filterRuns } from './run-records.js';
import { type EngineStore, type ItemResult, type RunQuery, type RunRecord, type RunStatus, type StepRecord, type WaitRecord, RESUMABLE_STATUSES } from './types.js';

interface RunFile {
  run: RunRecord;
  steps: StepRecord[];
  waits: Record<string, WaitRecord>;
}

export interface LowdbStoreOptions {
  /** Directory of the state files; created when missing. */
  dir: string;
  /** Key/value logs: compact once they hold at least this many bytes. @default 4194304 */
  kvCompactMinBytes?: number;
}

/** A run as the index knows it. */
interface IndexedRun {
  flow: string;
  startedAt: number;
  status: RunStatus;
}

const MAX_NAME = 150;

/** A file-name-safe name (no dots, no slashes) for a namespace: readable when short, a hash otherwise. */
function fileNameOf(key: string): string {
  const enc = encodeURIComponent(key).replace(/\./g, '%2E').replace(/\*/g, '%2A');
  return enc.length <= MAX_NAME ? enc : `~${createHash('sha256').update(key).digest('hex')}`;
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

  const kvLogs = new Map<string, KvLog>();
  function kvLog(namespace: string): KvLog {
    let log = kvLogs.get(namespace);
    if (!log) {
      const runId = namespace.startsWith('run:') ? namespace.slice(4) : undefined;
      const own = runId !== undefined && SAFE_ID.test(runId) && runId !== '.' && runId !== '..';
      log = new KvLog({
        dir: own ? join(runsDir, runId) : kvDir,
        name: own ? 'state' : fileNameOf(namespace),
        // The layout of earlier versions: kv/<namespace>/<key>.json
        legacyDir: join(kvDir, fileNameOf(namespace)),
        ...(options.kvCompactMinBytes === undefined ? {} : { compactMinBytes: options.kvCompactMinBytes }),
      });
      kvLogs.set(namespace, log);
    }
    return log;
  }

  /** A finished run's own namespace is not used any more: release its files (it reopens if read). */
  async function closeRunState(id: string): Promise<void> {
    const log = kvLogs.get(`run:${id}`);
    if (!log) return;
    kvLogs.delete(`run:${id}`);
    await log.close();
  }

  function kv(namespace: string): DurableState {
    // Looked up per call: a released namespace reopens on its next use.
    return {
      get: (key) => kvLog(namespace).get(key),
      set: (key, value) => kvLog(namespace).set(key, value),
      delete: (key) => kvLog(namespace).delete(key),
      entries: (prefix) => kvLog(namespace).entries(prefix),
    };
  }

  // The run index (runs.jsonl).
  const indexFile = join(options.dir, 'runs.jsonl');
  let indexReady: Promise<{ writer: ItemLog; tail: LineTail; fd: number }> | undefined;
  const indexed = new Map<string, IndexedRun>();

  /** Creates the index when missing: from runs/ (a store of an earlier version), atomically (link). */
  async function buildIndex(): Promise<void> {
    if (existsSync(indexFile)) return;
    await mkdir(options.dir, { recursive: true });
    let ids: string[] = [];
    try {
      ids = (await readdir(runsDir)).filter((id) => SAFE_ID.test(id));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    let text = '';
    for (const id of ids) {
      const run = (await readJson<RunFile>(runFile(id)).catch(() => undefined))?.run;
      if (run) text += JSON.stringify({ id, flow: run.flow, t: run.startedAt, s: run.status }) + '\n';
    }
    const tmp = `${indexFile}.${process.pid}.tmp`;
    const fd = openSync(tmp, 'w');
    try {
      writeSync(fd, text);
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(tmp, indexFile);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    } finally {
      unlinkSync(tmp);
    }
  }

  function runIndex(): Promise<{ writer: ItemLog; tail: LineTail; fd: number }> {
    if (!indexReady) {
      indexReady = (async () => {
        await buildIndex();
        const writer = await ItemLog.open(indexFile, { shared: true });
        const fd = openSync(indexFile, 'r');
        return { writer, fd, tail: new LineTail(fd) };
      })();
      indexReady.catch(() => (indexReady = undefined));
    }
    return indexReady;
  }

  async function readIndex(): Promise<Map<string, IndexedRun>> {
    const { tail } = await runIndex();
    tail.pull((buf, start, end) => {
      let e: { id?: unknown; flow?: unknown; t?: unknown; s?: unknown };
      try {
        e = JSON.parse(buf.toString('utf8', start, end)) as typeof e;
      } catch {
        return; // a line torn by a crash
      }
      if (typeof e.id !== 'string') return;
      const cur = indexed.get(e.id);
      if (typeof e.flow === 'string' && typeof e.t === 'number') indexed.set(e.id, { flow: e.flow, startedAt: e.t, status: e.s as RunStatus });
      else if (cur && typeof e.s === 'string') cur.status = e.s as RunStatus;
    });
    return indexed;
  }

  return {
    driver: 'lowdb',
    async createRun(run) {
      checkId(run.id);
      // Indexed first: a crash in between leaves an index line without a run (skipped), never a run the index misses.
      await (await runIndex()).writer.append([{ id: run.id, flow: run.flow, t: run.startedAt, s: run.status }]);
      await ownRun(run.id, { run: structuredClone(run), steps: [], waits: {} });
    },
    async updateRun(id, patch) {
      const db = await ownRun(id);
      const before = db.data.run.status;
      db.data.run = applyRunPatch(db.data.run, patch);
      await db.write();
      const status = db.data.run.status;
      if (status !== before) await (await runIndex()).writer.append([{ id, s: status }]);
      // A finished run gets no more items nor state: release its files.
      if (!RESUMABLE_STATUSES.includes(status)) await Promise.all([closeLog(id), closeRunState(id)]);
      return structuredClone(db.data.run);
    },
    async getRun(id) {
      if (!SAFE_ID.test(id)) return undefined;
      return (await readRun(id))?.run;
    },
    async listRuns(query: RunQuery = {}) {
      const index = await readIndex();
      const wanted = query.status;
      // The index may lag behind a run's document (see the file comment): a run it knows as resumable is re-read.
      const candidates = [...index.entries()]
        .filter(([, r]) => (query.flow === undefined || r.flow === query.flow) && (!wanted || wanted.includes(r.status) || RESUMABLE_STATUSES.includes(r.status)))
        .sort(([ia, a], [ib, b]) => b.startedAt - a.startedAt || (ia < ib ? 1 : ia > ib ? -1 : 0));
      const limit = query.limit === undefined ? Infinity : Math.max(0, query.limit);
      const out: RunRecord[] = [];
      // In pages, so a small limit reads few documents and a large list reads them concurrently.
      for (let i = 0; i < candidates.length && out.length < limit; i += 32) {
        const page = await Promise.all(candidates.slice(i, i + 32).map(([id]) => readRun(id).catch(() => undefined)));
        for (const r of filterRuns(page.flatMap((p) => (p?.run ? [p.run] : [])), { ...query, limit: undefined })) out.push(r);
      }
      return filterRuns(out, query);
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
      const kvOpen = [...kvLogs.values()];
      kvLogs.clear();
      await Promise.all(kvOpen.map((l) => l.close()));
      const index = indexReady;
      indexReady = undefined;
      if (index) {
        const ix = await index.catch(() => undefined);
        if (ix) {
          await ix.writer.close();
          closeSync(ix.fd);
        }
      }
      const open = [...journals.values()];
      journals.clear();
      await Promise.all(open.map(async (p) => (await p.catch(() => undefined))?.close()));
      // Let lowdb's pending writes land.
      for (const p of dbs.values()) await (await p.catch(() => undefined))?.write();
      dbs.clear();
    },
  };
}
