/**
 * The embedded driver ("lowdb"): small JSON documents for what changes rarely
 * and append-only JSON-lines logs for everything that grows with the data, so
 * that no write costs more as the store fills up.
 *
 * Layout under `dir`:
 *   runs.jsonl                 the run index: one line per run created
 *                              (`{id,flow,t,s}`), per status change
 *                              (`{id,s}`) and per run deleted (`{id,gone}`),
 *                              shared by every process (O_APPEND)
 *   runs/<runId>/run.jsonl     the run's document { run, steps, waits } as its changes, appended
 *                              (`{run}` the whole record after each update, `{step}`, `{wait}`,
 *                              `{unwait}`), compacted to the document once changes outnumber it
 *   runs/<runId>/run.json      the same document as earlier versions wrote it (read when there is no run.jsonl)
 *   runs/<runId>/inputs.json   the resolved inputs, written once, when not in run.jsonl (`{inputs}`: saved
 *                              by the process that created the run, as the engine does)
 *   runs/<runId>/items.jsonl   one ItemResult per line
 *   runs/<runId>/journal.<stream>.jsonl   the run's journals, appended (earlier versions:
 *                              journal/<stream>.jsonl, read before it)
 *   runs/<runId>/state.<g>.jsonl          the run's own kv namespace `run:<runId>` (kv-log.ts)
 *   kv/<namespace>.<g>.jsonl (+ .snap.jsonl)  every other kv namespace (kv-log.ts)
 *
 * Why a log of changes rather than a document rewritten through temp + rename:
 * a dialog message changes its run's document some eight times (created,
 * step started, step done, finished...), and on ext4 each rename over an
 * existing file makes the kernel start writing the new one out first
 * (auto_da_alloc): 1.3-1.8 ms per rewrite measured here, against some 10 µs
 * for an append (docs/performance.md, "Dialog sessions").
 *
 * Every .jsonl file is an append-only log of src/util/append-log.ts (which
 * says what survives a crash) whose readers `skip-and-report` a line that is
 * not a record: in the shared files (runs.jsonl, the kv logs) a crash can
 * leave one mid-file; in a run's items and journals (one writer: a torn tail
 * is cut before its next append, a failed write cut back) only damage can,
 * and the run goes on without that one record rather than not at all. A
 * run's files are released when the run finishes (they reopen if written
 * again).
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
import { existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Low } from 'lowdb';
import { JSONFile } from 'lowdb/node';
import { FlowError } from '../api/errors.js';
import type { DurableState } from './types.js';
import { runNotFound } from './errors.js';
import { fileStoreError, guardStore } from './guard.js';
import {
  AppendLog,
  createFileOnce,
  jsonLines,
  jsonRecords,
  LogTail,
  readRecords,
  scanLog,
  streamRecords,
  type AppendLogOptions,
  type CorruptLinePolicy,
} from '../util/append-log.js';
import { KvLog } from './kv-log.js';
import { type FileLeases, fileLeases } from './lease-files.js';
import { applyRunPatch, filterRuns, refuseUnfinished } from './run-records.js';
import {
  type EngineStore,
  type ItemResult,
  type Lease,
  type RunQuery,
  type RunRecord,
  type RunStatus,
  type StepRecord,
  type WaitRecord,
  RESUMABLE_STATUSES,
  runItemsNamespace,
} from './types.js';

interface RunFile {
  run: RunRecord;
  steps: StepRecord[];
  waits: Record<string, WaitRecord>;
  /** The resolved inputs, when saved by the process that created the run (else in inputs.json). */
  inputs?: Record<string, unknown>;
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

/** Whether `id` can name a run's directory (a path part of its own, never `.` or `..`). */
const isRunId = (id: string) => SAFE_ID.test(id) && id !== '.' && id !== '..';

function checkId(id: string): string {
  if (!isRunId(id)) throw new FlowError('USAGE', { reason: `invalid run id '${id}': expected 1-128 letters, digits, '.', '_' or '-'` });
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

/** One change of a run's document: a line of runs/<id>/run.jsonl. */
type DocChange =
  { run: RunRecord } | { step: StepRecord } | { wait: WaitRecord } | { unwait: string } | { inputs: Record<string, unknown> };

/** Applies a change to a document being rebuilt (every change is idempotent: a repeated line changes nothing). */
function applyChange(doc: Partial<RunFile> & Omit<RunFile, 'run'>, c: DocChange): void {
  if ('run' in c) doc.run = c.run;
  else if ('step' in c) {
    const i = doc.steps.findIndex((s) => s.step === c.step.step);
    if (i === -1) doc.steps.push(c.step);
    else doc.steps[i] = c.step;
  } else if ('wait' in c) doc.waits[c.wait.key] = c.wait;
  else if ('unwait' in c) delete doc.waits[c.unwait];
  else if ('inputs' in c) doc.inputs = c.inputs;
}

/** A document as the changes that rebuild it (what a compaction writes). */
function changesOf(doc: RunFile): DocChange[] {
  return [
    { run: doc.run },
    ...(doc.inputs ? [{ inputs: doc.inputs }] : []),
    ...doc.steps.map((step) => ({ step })),
    ...Object.values(doc.waits).map((wait) => ({ wait })),
  ];
}

/** A run's document from its log, or from the run.json of an earlier version; undefined when there is none. */
async function readRunDoc(runsDir: string, id: string): Promise<{ doc: RunFile; changes: number; legacy: boolean } | undefined> {
  // A run not created yet (the engine asks before creating one whose id a notification chose): one stat, no failing opens.
  if (!statSync(join(runsDir, id), { throwIfNoEntry: false })) return undefined;
  const { records } = await readRecords<DocChange | null>(join(runsDir, id, 'run.jsonl'), CORRUPT_LINES);
  if (records.length === 0) {
    const legacy = await readJson<RunFile>(join(runsDir, id, 'run.json'));
    return legacy?.run ? { doc: legacy, changes: 0, legacy: true } : undefined;
  }
  const doc: Partial<RunFile> & Omit<RunFile, 'run'> = { steps: [], waits: {} };
  for (const c of records) if (c && typeof c === 'object') applyChange(doc, c);
  return doc.run ? { doc: doc as RunFile, changes: records.length, legacy: false } : undefined;
}

/**
 * The document of a run this process owns: held in memory (authoritative),
 * each change appended to the run's log, which is compacted to the document
 * once changes outnumber its parts (a long run's counters do not grow it).
 */
class RunDoc {
  constructor(
    readonly data: RunFile,
    private readonly log: () => AppendLog,
    private changes: number,
  ) {}

  /** Writes `change`, already applied to `data`. */
  write(change: DocChange): Promise<void> {
    this.changes++;
    if (this.changes <= 2 * (1 + this.data.steps.length + Object.keys(this.data.waits).length) + 32)
      return this.log().appendRecords([change]);
    return this.compact();
  }

  /** Replaces the log by the document itself (atomic: temp + rename). */
  compact(): Promise<void> {
    const all = changesOf(this.data);
    this.changes = all.length;
    const text = jsonLines(all);
    return this.log().rewrite(() => [text]);
  }
}

/**
 * The file of a journal stream: names are free text (`check/-`), encoded so
 * each maps to one safe file name, beside the run's other files
 * (`journal.<stream>.jsonl`: a directory of its own cost each run a mkdir);
 * `legacy`: where earlier versions kept it (`journal/<stream>.jsonl`).
 */
function journalFile(runsDir: string, id: string, stream: string, legacy = false): string {
  const name = encodeURIComponent(stream).replace(/\./g, '%2E');
  return legacy ? join(runsDir, checkId(id), 'journal', `${name}.jsonl`) : join(runsDir, checkId(id), `journal.${name}.jsonl`);
}

/** Things opened once per key (a run document, a log) and shared by every caller; a failed open is forgotten. */
class OpenOnce<T> {
  private readonly open = new Map<string, Promise<T>>();

  get(key: string, opener: () => Promise<T>): Promise<T> {
    let p = this.open.get(key);
    if (!p) {
      p = opener();
      this.open.set(key, p);
      p.catch(() => this.open.delete(key));
    }
    return p;
  }

  peek(key: string): Promise<T> | undefined {
    return this.open.get(key);
  }

  /** Forgets `key` (its next get opens it again). */
  forget(key: string): void {
    this.open.delete(key);
  }

  /** Forgets everything; returns what was open (failed opens as undefined). */
  async drain(): Promise<T[]> {
    const all = [...this.open.values()];
    this.open.clear();
    return (await Promise.all(all.map((p) => p.catch(() => undefined)))).filter((x): x is Awaited<T> => x !== undefined);
  }
}

/** The kv namespaces, each a KvLog opened on first use and released when its run finishes. */
class KvLogs {
  private readonly logs = new Map<string, KvLog>();

  constructor(
    private readonly runsDir: string,
    private readonly kvDir: string,
    private readonly compactMinBytes: number | undefined,
    /** Whether this process owns a run (holds its lease): then it is the only writer of the run's namespace. */
    private readonly owns: (runId: string) => boolean,
    /** Whether this process created a run and has not released its files since: its namespace has no file yet. */
    private readonly fresh: (runId: string) => boolean,
  ) {}

  of(namespace: string): KvLog {
    let log = this.logs.get(namespace);
    if (!log) {
      const runId = namespace.startsWith('run:') ? namespace.slice(4) : undefined;
      const own = runId !== undefined && isRunId(runId);
      log = new KvLog({
        dir: own ? join(this.runsDir, runId) : this.kvDir,
        name: own ? 'state' : fileNameOf(namespace),
        // The layout of earlier versions: kv/<namespace>/<key>.json
        legacyDir: join(this.kvDir, fileNameOf(namespace)),
        ...(this.compactMinBytes === undefined ? {} : { compactMinBytes: this.compactMinBytes }),
        ...(own ? { exclusive: () => this.owns(runId), fresh: this.fresh(runId) } : {}),
      });
      this.logs.set(namespace, log);
    }
    return log;
  }

  /** Deletes a namespace's files (a finished run's). */
  async drop(namespace: string): Promise<void> {
    const log = this.of(namespace);
    this.logs.delete(namespace);
    await log.destroy();
  }

  /** Releases a namespace's files (it reopens if used again). */
  async close(namespace: string): Promise<void> {
    const log = this.logs.get(namespace);
    if (!log) return;
    this.logs.delete(namespace);
    await log.close();
  }

  async closeAll(): Promise<void> {
    const open = [...this.logs.values()];
    this.logs.clear();
    await Promise.all(open.map((l) => l.close()));
  }
}

/** What this store's readers do with a line that is not a record (see the file comment). */
const CORRUPT_LINES: CorruptLinePolicy = 'skip-and-report';

/** A run's items and journals, each an append-only log opened on first use, released when the run finishes. */
class RunLogs {
  private readonly runs = new Map<string, Map<string, AppendLog>>();

  /** The log `name` of a run; `file` (its path) is only worked out when it is first opened. */
  of(runId: string, name: string, file: () => string, options: Partial<AppendLogOptions> = {}): AppendLog {
    const open = this.runs.get(runId)?.get(name);
    if (open) return open;
    const log = new AppendLog(file(), { ...options, corrupt: CORRUPT_LINES });
    let logs = this.runs.get(runId);
    if (!logs) this.runs.set(runId, (logs = new Map()));
    logs.set(name, log);
    return log;
  }

  /** Releases a run's files once their pending writes are done (a later write reopens them). */
  async close(runId: string): Promise<void> {
    const logs = this.runs.get(runId);
    this.runs.delete(runId);
    await Promise.all([...(logs?.values() ?? [])].map((l) => l.close()));
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.runs.keys()].map((id) => this.close(id)));
  }
}

type IndexHandle = { writer: AppendLog; tail: LogTail };

/** The run index (runs.jsonl): see the file comment. */
class RunIndex {
  private ready: Promise<IndexHandle> | undefined;
  private readonly indexed = new Map<string, IndexedRun>();
  private readonly file: string;

  constructor(
    private readonly dir: string,
    private readonly runsDir: string,
  ) {
    this.file = join(dir, 'runs.jsonl');
  }

  async append(entry: { id: string; flow?: string; t?: number; s: RunStatus }): Promise<void> {
    await (await this.open()).writer.appendRecords([entry]);
  }

  /** Indexes a run's deletion (`{id,gone}`): every reader, in any process, forgets it. */
  async remove(id: string): Promise<void> {
    await (await this.open()).writer.appendRecords([{ id, gone: 1 }]);
    this.indexed.delete(id);
  }

  /** Every run indexed so far, with what was appended since the last read. */
  async read(): Promise<Map<string, IndexedRun>> {
    const { tail } = await this.open();
    tail.pull(
      jsonRecords<{ id?: unknown; flow?: unknown; t?: unknown; s?: unknown; gone?: unknown } | null>((e) => {
        if (typeof e?.id !== 'string') return;
        if (e.gone) {
          this.indexed.delete(e.id);
          return;
        }
        const cur = this.indexed.get(e.id);
        if (typeof e.flow === 'string' && typeof e.t === 'number')
          this.indexed.set(e.id, { flow: e.flow, startedAt: e.t, status: e.s as RunStatus });
        else if (cur && typeof e.s === 'string') cur.status = e.s as RunStatus;
      }),
    );
    return this.indexed;
  }

  async close(): Promise<void> {
    const index = this.ready;
    this.ready = undefined;
    const ix = await index?.catch(() => undefined);
    if (!ix) return;
    await ix.writer.close();
    ix.tail.close();
  }

  private open(): Promise<IndexHandle> {
    if (!this.ready) {
      this.ready = (async () => {
        await this.build();
        const writer = new AppendLog(this.file, { corrupt: CORRUPT_LINES, shared: true });
        return { writer, tail: new LogTail(openSync(this.file, 'r'), CORRUPT_LINES, this.file) };
      })();
      this.ready.catch(() => (this.ready = undefined));
    }
    return this.ready;
  }

  /** Creates the index when missing: from runs/ (a store of an earlier version), atomically (link). */
  private async build(): Promise<void> {
    if (existsSync(this.file)) return;
    await mkdir(this.dir, { recursive: true });
    let ids: string[] = [];
    try {
      ids = (await readdir(this.runsDir)).filter((id) => SAFE_ID.test(id));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    let text = '';
    for (const id of ids) {
      const run = (await readRunDoc(this.runsDir, id).catch(() => undefined))?.doc.run;
      if (run) text += JSON.stringify({ id, flow: run.flow, t: run.startedAt, s: run.status }) + '\n';
    }
    createFileOnce(this.file, text);
  }
}

/**
 * @example
 * const store = createLowdbStore({ dir: '.msgflow/state' });
 */
export function createLowdbStore(options: LowdbStoreOptions): EngineStore {
  // A file that cannot be written (a read-only directory, a full disk) is STORE_UNAVAILABLE naming the file and the fix.
  return guardStore(new LowdbStore(options), fileStoreError('lowdb'));
}

/**
 * A class over small helpers (run index, run logs, kv logs) so each
 * operation stays short. `kv` and `readJournal` (which wrappers such as the
 * outage tests' Proxy call with `this` being the wrapper) read fields only.
 */
class LowdbStore implements EngineStore {
  readonly driver = 'lowdb';
  private readonly runsDir: string;
  private readonly leases: FileLeases;
  /** Runs this process owns (created or updated here): their in-memory copy is authoritative. */
  private readonly docs = new OpenOnce<RunDoc>();
  /** Runs this process created whose files it has not released since (KvLogs' `fresh`). */
  private readonly created = new Set<string>();
  private readonly runLogs = new RunLogs();
  private readonly kvLogs: KvLogs;
  private readonly index: RunIndex;

  constructor(options: LowdbStoreOptions) {
    this.runsDir = join(options.dir, 'runs');
    this.leases = fileLeases(join(options.dir, 'leases'));
    this.kvLogs = new KvLogs(
      this.runsDir,
      join(options.dir, 'kv'),
      options.kvCompactMinBytes,
      (id) => this.docs.peek(id) !== undefined,
      (id) => this.created.has(id),
    );
    this.index = new RunIndex(options.dir, this.runsDir);
  }

  async createRun(run: RunRecord): Promise<void> {
    checkId(run.id);
    // Indexed first: a crash in between leaves an index line without a run (skipped), never a run the index misses.
    await this.index.append({ id: run.id, flow: run.flow, t: run.startedAt, s: run.status });
    await this.ownRun(run.id, { run: structuredClone(run), steps: [], waits: {} });
    this.created.add(run.id);
  }
  async updateRun(id: string, patch: Partial<Omit<RunRecord, 'id'>>): Promise<RunRecord> {
    const db = await this.ownRun(id);
    const before = db.data.run.status;
    db.data.run = applyRunPatch(db.data.run, patch);
    await db.write({ run: db.data.run });
    const status = db.data.run.status;
    if (status !== before) await this.index.append({ id, s: status });
    // A finished run gets no more items nor state: release its files, and its
    // document (written, so read from disk from now on): memory holds the runs in flight, not every run since start.
    if (!RESUMABLE_STATUSES.includes(status)) {
      this.docs.forget(id);
      this.created.delete(id);
      await Promise.all([this.runLogs.close(id), this.kvLogs.close(`run:${id}`)]);
    }
    return structuredClone(db.data.run);
  }
  async getRun(id: string): Promise<RunRecord | undefined> {
    if (!SAFE_ID.test(id)) return undefined;
    return (await this.readRun(id))?.run;
  }
  async listRuns(query: RunQuery = {}): Promise<RunRecord[]> {
    const index = await this.index.read();
    const wanted = query.status;
    // The index may lag behind a run's document (see the file comment): a run it knows as resumable is re-read.
    const candidates = [...index.entries()]
      .filter(
        ([, r]) =>
          (query.flow === undefined || r.flow === query.flow) &&
          // A run finishes after it starts: one started since then cannot have finished before.
          (query.finishedBefore === undefined || r.startedAt < query.finishedBefore) &&
          (!wanted || wanted.includes(r.status) || RESUMABLE_STATUSES.includes(r.status)),
      )
      .sort(([ia, a], [ib, b]) => b.startedAt - a.startedAt || (ia < ib ? 1 : ia > ib ? -1 : 0));
    const limit = query.limit === undefined ? Infinity : Math.max(0, query.limit);
    const out: RunRecord[] = [];
    // In pages, so a small limit reads few documents and a large list reads them concurrently.
    for (let i = 0; i < candidates.length && out.length < limit; i += 32) {
      const page = await Promise.all(candidates.slice(i, i + 32).map(([id]) => this.readRun(id).catch(() => undefined)));
      for (const r of filterRuns(
        page.flatMap((p) => (p?.run ? [p.run] : [])),
        { ...query, limit: undefined },
      ))
        out.push(r);
    }
    return filterRuns(out, query);
  }
  async deleteRun(id: string): Promise<boolean> {
    if (!isRunId(id)) return false;
    const doc = await this.readRun(id);
    if (doc) refuseUnfinished(doc.run);
    this.docs.forget(id);
    this.created.delete(id);
    await Promise.all([this.runLogs.close(id), this.kvLogs.close(`run:${id}`), this.kvLogs.drop(runItemsNamespace(id))]);
    // The files first, then the index line: a crash in between leaves an index
    // line whose run is gone (listed as nothing), never files no index names.
    await rm(join(this.runsDir, checkId(id)), { recursive: true, force: true });
    if (doc || (await this.index.read()).has(id)) await this.index.remove(id);
    return doc !== undefined;
  }
  async saveInputs(runId: string, inputs: Record<string, unknown>): Promise<void> {
    const own = this.docs.peek(checkId(runId));
    if (own) {
      // In the run's document: two files (a temp and its rename) fewer per run.
      const doc = await own;
      doc.data.inputs = structuredClone(inputs);
      return doc.write({ inputs: doc.data.inputs });
    }
    const db = new Low<Record<string, unknown>>(new JSONFile(join(this.runsDir, checkId(runId), 'inputs.json')), inputs);
    mkdirSync(join(this.runsDir, runId), { recursive: true });
    await db.write();
  }
  async loadInputs(runId: string): Promise<Record<string, unknown> | undefined> {
    const inDoc = (await this.readRun(runId))?.inputs;
    if (inDoc) return inDoc;
    return readJson<Record<string, unknown>>(join(this.runsDir, checkId(runId), 'inputs.json'));
  }
  async saveStep(step: StepRecord): Promise<void> {
    const db = await this.ownRun(step.runId);
    const copy = JSON.parse(JSON.stringify(step)) as StepRecord;
    const i = db.data.steps.findIndex((s) => s.step === step.step);
    if (i === -1) db.data.steps.push(copy);
    else db.data.steps[i] = copy;
    await db.write({ step: copy });
  }
  async getSteps(runId: string): Promise<StepRecord[]> {
    return (await this.readRun(runId))?.steps ?? [];
  }
  async appendItems(runId: string, items: readonly ItemResult[]): Promise<void> {
    if (items.length === 0) return;
    await this.runLogs.of(runId, 'items', () => this.itemFile(runId)).appendRecords(items);
  }
  async getItems(runId: string, step: string): Promise<Map<number, ItemResult>> {
    const out = new Map<number, ItemResult>();
    await scanLog(
      this.itemFile(runId),
      CORRUPT_LINES,
      jsonRecords<ItemResult>((r) => {
        if (r.step === step) out.set(r.index, r);
      }),
    );
    return out;
  }
  async appendJournal(runId: string, stream: string, entries: readonly unknown[]): Promise<void> {
    if (entries.length === 0) return;
    await this.runLogs.of(runId, `journal/${stream}`, () => journalFile(this.runsDir, runId, stream)).appendRecords(entries);
  }
  async *readJournal<T>(runId: string, stream: string): AsyncIterable<T> {
    // A run started by an earlier version has its first entries there (a stat, not a failing open, when not).
    const legacy = journalFile(this.runsDir, runId, stream, true);
    if (statSync(legacy, { throwIfNoEntry: false })) yield* streamRecords<T>(legacy, CORRUPT_LINES);
    yield* streamRecords<T>(journalFile(this.runsDir, runId, stream), CORRUPT_LINES);
  }
  async setWait(runId: string, wait: WaitRecord): Promise<void> {
    const db = await this.ownRun(runId);
    db.data.waits[wait.key] = structuredClone(wait);
    await db.write({ wait: db.data.waits[wait.key]! });
  }
  async deleteWait(runId: string, key: string): Promise<void> {
    const db = await this.ownRun(runId);
    if (!(key in db.data.waits)) return;
    delete db.data.waits[key];
    await db.write({ unwait: key });
  }
  async listWaits(runId: string): Promise<WaitRecord[]> {
    return Object.values((await this.readRun(runId))?.waits ?? {});
  }
  acquireLease(name: string, lease: Lease): Promise<Lease | undefined> {
    return this.leases.acquire(name, lease);
  }
  renewLease(name: string, token: string, expiresAt: number): Promise<boolean> {
    return this.leases.renew(name, token, expiresAt);
  }
  releaseLease(name: string, token: string): Promise<void> {
    return this.leases.release(name, token);
  }
  getLease(name: string): Promise<Lease | undefined> {
    return this.leases.get(name);
  }
  kv(namespace: string): DurableState {
    const logs = this.kvLogs;
    // Looked up per call: a released namespace reopens on its next use.
    return {
      get: (key) => logs.of(namespace).get(key),
      set: (key, value) => logs.of(namespace).set(key, value),
      delete: (key) => logs.of(namespace).delete(key),
      entries: (prefix) => logs.of(namespace).entries(prefix),
    };
  }
  /** Closes every file even when one fails (a store that stopped taking writes), then throws the first failure. */
  async close(): Promise<void> {
    const failures: unknown[] = [];
    const attempt = async (op: () => Promise<unknown>) => {
      try {
        await op();
      } catch (e) {
        failures.push(e);
      }
    };
    await attempt(() => this.runLogs.closeAll());
    await attempt(() => this.kvLogs.closeAll());
    await attempt(() => this.index.close());
    // The documents' logs were closed with the run logs above: the open documents are only forgotten.
    await this.docs.drain();
    this.created.clear();
    if (failures.length > 0) throw failures[0];
  }

  private itemFile(id: string): string {
    return join(this.runsDir, checkId(id), 'items.jsonl');
  }

  /**
   * The log of a run's document. It holds no descriptor between writes (a
   * run writes it a few times per step; an open costs microseconds), so a
   * file or directory put in its place is met at the next write.
   */
  private docLog(id: string): AppendLog {
    return this.runLogs.of(id, 'doc', () => join(this.runsDir, checkId(id), 'run.jsonl'), { idleCloseMs: 0, commit: 'at-once' });
  }

  private ownRun(id: string, initial?: RunFile): Promise<RunDoc> {
    checkId(id);
    return this.docs.get(id, async () => {
      const found = initial ? undefined : await readRunDoc(this.runsDir, id);
      const data = initial ?? found?.doc;
      if (!data?.run) throw runNotFound(id);
      const doc = new RunDoc(data, () => this.docLog(id), found?.changes ?? 0);
      // A new run, or one of an earlier version (run.json): its log starts with the whole document
      // (appended when there is no log yet: one file created rather than a temp and its rename).
      if (initial && !existsSync(join(this.runsDir, id, 'run.jsonl'))) await doc.write({ run: data.run });
      else if (initial || found?.legacy) await doc.compact();
      return doc;
    });
  }

  private async readRun(id: string): Promise<RunFile | undefined> {
    const own = this.docs.peek(id);
    if (own) return structuredClone((await own).data);
    return (await readRunDoc(this.runsDir, checkId(id)))?.doc;
  }
}
