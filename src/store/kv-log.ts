/**
 * A key/value namespace of the embedded driver: an append-only JSON-lines log
 * shared by every process using the state directory, with an index in memory
 * and compaction into a snapshot when the log holds mostly dead entries.
 *
 * Files, for a namespace whose file name is `N` (see lowdb-store.ts):
 *   N.<g>.jsonl        the log of generation g: `["key",value]` sets and `["key"]` deletes
 *   N.<g>.snap.jsonl   the state at the start of generation g (one line per live key)
 * The state is snap(S) + log(S) + log(S+1) + ... + log(G), where G is the
 * highest generation and S the highest one ≤ G with a snapshot (none: from 0).
 *
 * Cost: a write appends one line (group-committed with the writes of the
 * same turn: one write(2)); a read of a present key is one pread at an offset
 * the index holds. The index keeps, per key, a slot in typed arrays (file,
 * offset, length), never the value, and the key: a key of a text and a
 * number (`n:79001112233`) as that number in typed arrays too
 * (src/util/number-map.ts), about 35-55 bytes a key in all; any other key
 * as a string in a Map, about 60-90 bytes.
 *
 * Several processes (a daemon and a `msgflow run`) share a namespace:
 * - Writes are O_APPEND, one write(2) per batch, each batch starting with a
 *   newline (a `shared` AppendLog, src/util/append-log.ts): concurrent
 *   appenders never interleave within a batch, and a line torn by kill -9
 *   ends at the next batch's newline as one line that is not a record, which
 *   readers skip (`skip-and-report`).
 * - Before a read a process tails the log (one fstat: nothing to do when
 *   the size did not change), so it sees the other processes' writes
 *   acknowledged before the read was asked for. Gets asked for together
 *   share a tail: the first of a turn of the event loop tails at once, the
 *   others of that turn wait for one tail at its end (records in flight ask
 *   in bursts). It looks for a newer generation only once the log it tails
 *   was sealed (below): no path is probed on a get or a set.
 * - A process that holds the lease of the run a namespace belongs to
 *   (`exclusive`) is its only writer: its index is authoritative and a read
 *   is one pread, with no check of the disk. Other processes still tail it.
 *
 * Compaction (when the files hold more than `compactRatio` × the live bytes,
 * and at least `compactMinBytes`): append a seal line (`{"seal":g}`) to log(g),
 * create log(g+1) with O_EXCL (the atomic step: only one process compacts a
 * generation), read log(g) to its end, write the whole state to a temporary
 * file, rename it to snap(g+1), then delete the files of generations ≤ g. A
 * writer that appended to log(g) tails it after its write (indexing its own
 * line): when no seal precedes its line, any compaction seals later and so
 * reads the line. When one does, the writer checks that log(g+1) exists;
 * if so the compactor may have read log(g) before the write landed, and the
 * writer appends the line again to the new generation (replaying a set
 * twice is harmless); if not, a compactor that creates it later reads log(g)
 * after the write. A log(g) unlinked under the writer means the same as
 * log(g+1) existing. Sealing first means that only a sealed log makes anyone
 * look for the next generation, so the common write and read probe no path.
 * A crash at any point leaves a readable store: before the rename, snap(g+1)
 * is absent and state(g) + log(g+1) is read; after it, the snapshot is
 * complete; a seal without a log(g+1) (a crash between the two) only costs
 * the writers of log(g) a probe per write until the next compaction.
 */
import {
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { AppendLog, createFileOnce, jsonLines, LogTail } from '../util/append-log.js';
import { TextKeyMap } from '../util/number-map.js';
import { isProcessAlive } from '../util/process-alive.js';
import type { DurableState } from './types.js';

export interface KvLogOptions {
  /** Directory holding the namespace's files (shared with other namespaces). */
  dir: string;
  /** File-name-safe name of the namespace: no dots, no slashes. */
  name: string;
  /** A legacy directory of one `{k,v}` JSON file per key, imported once when the log does not exist yet. */
  legacyDir?: string;
  /** Compact only once the files hold at least this many bytes. @default 4194304 */
  compactMinBytes?: number;
  /** Compact when the files hold more than this multiple of the live entries' bytes. @default 2 */
  compactRatio?: number;
  /**
   * True while this process is the namespace's only writer (it holds the
   * lease of the run the namespace belongs to): reads then trust the index
   * and skip the check for other processes' writes.
   * @default () => false
   */
  exclusive?: () => boolean;
  /**
   * The namespace is new (its run was created by this process a moment
   * ago): its first load creates generation 0 in `dir`, which exists, without
   * listing the directory or looking for a legacy one. Should a file of it
   * exist after all, it is loaded as usual.
   * @default false
   */
  fresh?: boolean;
  /** Test seam: called at each step of a compaction (`created`, `snapshot-written`, `renamed`), e.g. to crash there. */
  onCompactStep?: (step: 'created' | 'snapshot-written' | 'renamed') => void;
}

interface ChainFile {
  path: string;
  tail: LogTail;
  /** A compaction sealed this log: a newer generation may exist. */
  sealed: boolean;
}

/** Slot storage in typed arrays: a key's location costs 13 bytes, not an object. */
class Slots {
  file = new Uint8Array(1024);
  off = new Float64Array(1024);
  len = new Uint32Array(1024);
  private free: number[] = [];
  private next = 0;

  alloc(): number {
    const s = this.free.pop();
    if (s !== undefined) return s;
    if (this.next === this.len.length) {
      const grow = <A extends Uint8Array | Float64Array | Uint32Array>(a: A): A => {
        const b = new (a.constructor as new (n: number) => A)(a.length * 2);
        b.set(a);
        return b;
      };
      this.file = grow(this.file);
      this.off = grow(this.off);
      this.len = grow(this.len);
    }
    return this.next++;
  }

  release(s: number): void {
    this.free.push(s);
  }
}

/** A promise and its settlers (Promise.withResolvers is Node 22). */
interface Waiter {
  promise: Promise<void>;
  resolve: () => void;
  reject: (e: unknown) => void;
}

function waiter(): Waiter {
  const w = {} as Waiter;
  w.promise = new Promise<void>((resolve, reject) => Object.assign(w, { resolve, reject }));
  return w;
}

const enoent = (e: unknown) => (e as NodeJS.ErrnoException).code === 'ENOENT';
const eexist = (e: unknown) => (e as NodeJS.ErrnoException).code === 'EEXIST';
const MAX_CHAIN = 32;
/** The line a compaction appends to the log it retires (see the file comment). */
const SEAL = Buffer.from('{"seal":');
/** A line without the shape of a set or a delete: torn by a crash (the log's policy skips it). */
const NOT_A_RECORD = 'expected ["key", value] or ["key"]';

export class KvLog implements DurableState {
  private readonly dir: string;
  private readonly name: string;
  private chain: ChainFile[] = [];
  private gen = -1;
  private index = new TextKeyMap();
  private slots = new Slots();
  private liveBytes = 0;
  private writer: { gen: number; log: AppendLog } | undefined;
  /** Closes of writers of retired generations (each waits for its pending writes). */
  private retired: Array<Promise<unknown>> = [];
  private readBuf = Buffer.allocUnsafe(4096);
  private closed = false;
  private compacting = false;
  /** Parse every line when loading (after a torn line was found by its shape alone). */
  private validate = false;
  private escaped = false;
  /** Refreshed once while `exclusive`: the index holds every write since (all of them this process's). */
  private caughtUpExclusive = false;
  /** Writes of this process that reached the current log, counted; and how many of them had when it was last tailed to its end. */
  private landedWrites = 0;
  private tailedAfter = 0;
  /** Gets of the current burst (see {@link catchUpForGet}): open until the end of the turn; `waiting` settles with its closing probe. */
  private burst: { waiting: Waiter | undefined } | undefined;

  constructor(private readonly options: KvLogOptions) {
    this.dir = options.dir;
    this.name = options.name;
  }

  private logPath(g: number): string {
    return join(this.dir, `${this.name}.${g}.jsonl`);
  }

  private snapPath(g: number): string {
    return join(this.dir, `${this.name}.${g}.snap.jsonl`);
  }

  /** Generations present on disk: logs and snapshots. */
  private listGenerations(): { logs: number[]; snaps: number[]; temps: string[] } {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (e) {
      if (enoent(e)) return { logs: [], snaps: [], temps: [] };
      throw e;
    }
    const logs: number[] = [];
    const snaps: number[] = [];
    const temps: string[] = [];
    const head = `${this.name}.`;
    for (const n of names) {
      if (!n.startsWith(head)) continue;
      const m = /^(\d+)\.(snap\.)?jsonl(\.\d+\.tmp)?$/.exec(n.slice(head.length));
      if (!m) continue;
      if (m[3]) temps.push(n);
      else (m[2] ? snaps : logs).push(Number(m[1]));
    }
    return { logs: logs.sort((a, b) => a - b), snaps: snaps.sort((a, b) => a - b), temps };
  }

  private closeChain(): void {
    for (const f of this.chain) f.tail.close();
    this.chain = [];
  }

  /** Rebuilds the index from the files on disk. */
  private reload(): void {
    for (let attempt = 0; ; attempt++) {
      this.closeChain();
      this.index = new TextKeyMap();
      this.slots = new Slots();
      this.liveBytes = 0;
      if (attempt === 0 && this.createFresh()) return;
      let { logs, snaps } = this.listGenerations();
      if (logs.length === 0) {
        this.create();
        ({ logs, snaps } = this.listGenerations());
      }
      const top = logs[logs.length - 1];
      const base = snaps.filter((g) => g <= top).pop();
      const paths = base === undefined ? [] : [this.snapPath(base)];
      for (let g = base ?? logs[0]; g <= top; g++) paths.push(this.logPath(g));
      try {
        for (const path of paths) this.chain.push({ path, tail: new LogTail(openSync(path, 'r'), 'skip-and-report', path), sealed: false });
      } catch (e) {
        // A compaction deleted a file between the listing and the open: list again.
        if (enoent(e) && attempt < 20) continue;
        throw e;
      }
      this.gen = top;
      for (let i = 0; i < this.chain.length; i++) this.pullFile(i);
      return;
    }
  }

  /** Creates generation 0 of a `fresh` namespace (once): true when this process created it, so it is empty. */
  private createFresh(): boolean {
    if (!this.options.fresh || this.gen !== -1) return false;
    const path = this.logPath(0);
    let fd: number;
    try {
      fd = openSync(path, 'wx+');
    } catch (e) {
      if (eexist(e) || enoent(e)) return false;
      throw e;
    }
    this.chain.push({ path, tail: new LogTail(fd, 'skip-and-report', path), sealed: false });
    this.gen = 0;
    return true;
  }

  /** Creates generation 0 of a new namespace, importing a legacy per-key directory first. */
  private create(): void {
    mkdirSync(this.dir, { recursive: true });
    const legacy = this.options.legacyDir;
    if (legacy && existsSync(legacy)) {
      const lines: string[] = [];
      for (const f of readdirSync(legacy)) {
        if (!f.endsWith('.json')) continue;
        try {
          const e = JSON.parse(readFileSync(join(legacy, f), 'utf8')) as { k: string; v: unknown };
          if (typeof e.k === 'string' && e.v !== undefined) lines.push(JSON.stringify([e.k, e.v]));
        } catch {
          // A file removed meanwhile, or unreadable: nothing to import.
        }
      }
      // A second importer never replaces the first one's snapshot.
      createFileOnce(this.snapPath(0), lines.map((l) => l + '\n').join(''));
    }
    try {
      closeSync(openSync(this.logPath(0), 'wx'));
    } catch (e) {
      if (!eexist(e)) throw e;
    }
    if (legacy) rmSync(legacy, { recursive: true, force: true });
  }

  /**
   * Reads the new complete lines of chain file `i` into the index; false when
   * the file was unlinked. Lines are checked by shape only (`["key",…]` or
   * `["key"]`), not parsed: parsing every value would triple the time to
   * load a large namespace. A line torn by a crash that still has the right
   * shape is caught when its value is read ({@link readLine}), which then
   * reloads with every line parsed (`validate`).
   */
  private pullFile(i: number): boolean {
    const f = this.chain[i];
    const validate = this.validate && !(i === 0 && f.path.endsWith('.snap.jsonl'));
    return f.tail.pull((buf, start, end, offset) => {
      if (buf[start] === 0x7b && end - start > SEAL.length && buf.compare(SEAL, 0, SEAL.length, start, start + SEAL.length) === 0) {
        f.sealed = true;
        return;
      }
      const k = this.keyEnd(buf, start, end);
      let isSet: boolean;
      if (k === -1) return NOT_A_RECORD;
      if (k + 2 === end && buf[k + 1] === 0x5d) isSet = false;
      else if (buf[k + 1] === 0x2c && buf[end - 1] === 0x5d && end > k + 3) isSet = true;
      else return NOT_A_RECORD;
      if (validate) {
        try {
          JSON.parse(buf.toString('utf8', start, end));
        } catch (e) {
          return `not a JSON record (${(e as Error).message})`;
        }
      }
      const key = this.keyOf(buf, start, k);
      const old = this.index.get(key);
      if (old !== undefined) {
        this.liveBytes -= this.slots.len[old] + 1;
        if (!isSet) {
          this.index.delete(key);
          this.slots.release(old);
          return;
        }
      } else if (!isSet) return;
      const s = old ?? this.slots.alloc();
      this.slots.file[s] = i;
      this.slots.off[s] = offset;
      this.slots.len[s] = end - start;
      this.liveBytes += end - start + 1;
      if (old === undefined) this.index.set(key, s);
    });
  }

  /** Index of the quote closing the key of a line `["key"…`, or -1 when the line does not start like a record. */
  private keyEnd(buf: Buffer, start: number, end: number): number {
    if (end - start < 4 || buf[start] !== 0x5b || buf[start + 1] !== 0x22) return -1;
    this.escaped = false;
    for (let i = start + 2; i < end; i++) {
      const c = buf[i];
      if (c === 0x5c) {
        this.escaped = true;
        i++;
      } else if (c === 0x22) return i;
    }
    return -1;
  }

  /** The key of a line whose key string ends at `close` (set by {@link keyEnd}). */
  private keyOf(buf: Buffer, start: number, close: number): string {
    return this.escaped ? (JSON.parse(buf.toString('utf8', start + 1, close + 1)) as string) : buf.toString('utf8', start + 2, close);
  }

  /**
   * Brings the index up to date with every process's writes. Cheap when
   * nothing changed: one fstat. A path is probed only once the log was sealed.
   */
  private refresh(): void {
    if (this.closed) throw new Error(`key/value log ${this.name} is closed`);
    if (this.chain.length === 0) return this.reload();
    for (;;) {
      const last = this.chain.length - 1;
      if (!this.pullFile(last)) return this.reload();
      if (!this.chain[last].sealed || !existsSync(this.logPath(this.gen + 1))) return;
      // Lines that landed in log(g) before log(g+1) existed are not replayed by their writers: read them first.
      if (!this.pullFile(last)) return this.reload();
      if (existsSync(this.snapPath(this.gen + 1)) || this.chain.length >= MAX_CHAIN) return this.reload();
      const tail = LogTail.open(this.logPath(this.gen + 1), 'skip-and-report');
      if (!tail) return this.reload();
      this.chain.push({ path: this.logPath(this.gen + 1), tail, sealed: false });
      this.gen++;
    }
  }

  /**
   * Catches up before a get (or a delete), with one probe serving every get of a burst:
   * the first get of a burst probes at once (no wait); a get made while
   * that burst is open waits for the probe that closes it, at the end of the
   * event loop's turn (setImmediate), and shares it with every other get
   * made meanwhile. Each get still sees every write acknowledged (by any
   * process) before it was made: its probe runs after it was made. Records
   * in flight make their gets in one turn: two probes a turn, not one per get.
   */
  private catchUpForGet(): Promise<void> | undefined {
    if (this.exclusiveAndCurrent()) return undefined;
    if (this.burst === undefined) {
      this.refreshShared();
      this.burst = { waiting: undefined };
      setImmediate(() => this.closeBurst());
      return undefined;
    }
    return (this.burst.waiting ??= waiter()).promise;
  }

  /** Ends a burst of gets: one probe for the gets that waited for it. */
  private closeBurst(): void {
    const waiting = this.burst?.waiting;
    this.burst = undefined;
    if (!waiting) return;
    try {
      this.refreshShared();
      waiting.resolve();
    } catch (e) {
      waiting.reject(e);
    }
  }

  private exclusiveAndCurrent(): boolean {
    return this.options.exclusive?.() === true && this.caughtUpExclusive && this.chain.length > 0 && !this.closed;
  }

  /** Catches up unless this process is the only writer and caught up since it became so (its index is then current). */
  private refreshShared(): void {
    if (this.exclusiveAndCurrent()) return;
    this.refresh();
    this.caughtUpExclusive = this.options.exclusive?.() === true;
  }

  private readLine(s: number): unknown[] | undefined {
    const len = this.slots.len[s];
    if (this.readBuf.length < len) this.readBuf = Buffer.allocUnsafe(Math.max(len, this.readBuf.length * 2));
    const f = this.chain[this.slots.file[s]];
    let got = 0;
    while (got < len) {
      const n = readSync(f.tail.fd, this.readBuf, got, len - got, this.slots.off[s] + got);
      if (n === 0) break;
      got += n;
    }
    try {
      return JSON.parse(this.readBuf.toString('utf8', 0, got)) as unknown[];
    } catch {
      return undefined;
    }
  }

  /** The value at slot `s`; a torn line found here triggers a reload that parses every line. */
  private valueAt(key: string): unknown {
    for (;;) {
      const s = this.index.get(key);
      if (s === undefined) return undefined;
      const rec = this.readLine(s);
      if (rec) return rec[1];
      if (this.validate) throw new Error(`key/value log ${this.name}: unreadable entry for key '${key}'`);
      this.validate = true;
      this.reload();
    }
  }

  private writerFor(g: number): AppendLog {
    if (this.writer?.gen !== g) {
      if (this.writer) this.retired.push(this.writer.log.close().catch(() => undefined));
      this.writer = { gen: g, log: new AppendLog(this.logPath(g), { corrupt: 'skip-and-report', shared: true }) };
    }
    return this.writer.log;
  }

  private async write(record: unknown[]): Promise<void> {
    if (this.closed) throw new Error(`key/value log ${this.name} is closed`);
    if (this.chain.length === 0) this.reload();
    for (let attempt = 0; ; attempt++) {
      const g = this.gen;
      let mine = 0;
      try {
        await this.writerFor(g).append(jsonLines([record]), () => void (mine = ++this.landedWrites));
        if (this.gen === g && this.tailedAfter >= mine && !this.chain[this.chain.length - 1].sealed) break;
      } catch (e) {
        // The generation was retired (and deleted) before the writer opened it.
        if (enoent(e) && attempt < 20) {
          this.refresh();
          continue;
        }
        throw e;
      }
      if (this.closed || this.landed(g)) break;
      if (attempt >= 20) throw new Error(`key/value log ${this.name}: could not append across compactions`);
    }
    this.maybeCompact();
  }

  /**
   * After a write to log(g): indexes it (tailing log(g) to its end) and tells
   * whether every compaction reads it (see the file comment); false when it
   * must be written again to the newer generation this switched to.
   */
  private landed(g: number): boolean {
    // Another write of this batch already moved on: whether this one landed before log(g+1) existed is unknown.
    if (this.gen !== g) return false;
    const last = this.chain.length - 1;
    const written = this.landedWrites;
    if (!this.pullFile(last)) {
      this.reload();
      return false;
    }
    // Every write that landed before this tail is indexed now: the others of its group commit need no tail of their own.
    this.tailedAfter = written;
    if (!this.chain[last].sealed || !existsSync(this.logPath(g + 1))) return true;
    this.refresh();
    return false;
  }

  async get<T>(key: string): Promise<T | undefined> {
    const caughtUp = this.catchUpForGet();
    if (caughtUp) await caughtUp;
    return this.valueAt(key) as T | undefined;
  }

  async set(key: string, value: unknown): Promise<void> {
    if (value === undefined) return this.delete(key);
    await this.write([key, value]);
  }

  async delete(key: string): Promise<void> {
    // Caught up as a get is (one probe a burst): a job deletes a key a record (contacts.import's mirror).
    const caughtUp = this.catchUpForGet();
    if (caughtUp) await caughtUp;
    if (!this.index.has(key)) return;
    await this.write([key]);
  }

  async entries<T>(prefix = ''): Promise<Array<[string, T]>> {
    this.refreshShared();
    const keys: string[] = [];
    for (const [k] of this.index.entries()) if (k.startsWith(prefix)) keys.push(k);
    keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const out: Array<[string, T]> = [];
    for (const k of keys) {
      const v = this.valueAt(k);
      if (v !== undefined) out.push([k, v as T]);
    }
    return out;
  }

  /** Number of live keys (after catching up with other processes). */
  size(): number {
    this.refresh();
    return this.index.size;
  }

  private maybeCompact(): void {
    if (this.compacting || this.closed) return;
    let total = 0;
    for (const f of this.chain) total += f.tail.consumed;
    const min = this.options.compactMinBytes ?? 4 * 1024 * 1024;
    const ratio = this.options.compactRatio ?? 2;
    if (total >= min && total > ratio * this.liveBytes) this.compact();
  }

  /**
   * Rewrites the live entries into a snapshot of the next generation (see the
   * file comment). Synchronous, so this process's index cannot change under
   * it; returns false when another process compacts this generation.
   */
  compact(): boolean {
    this.compacting = true;
    try {
      this.refresh();
      const g = this.gen;
      if (!this.seal(g)) return false;
      try {
        closeSync(openSync(this.logPath(g + 1), 'wx'));
      } catch (e) {
        if (eexist(e)) return false;
        throw e;
      }
      this.options.onCompactStep?.('created');
      // Switches to g+1 after reading log(g) to its end: the index is now state(g) (+ log(g+1) so far, harmless to repeat).
      this.refresh();
      if (this.gen !== g + 1) return false; // another process already finished a later compaction
      const tmp = `${this.snapPath(g + 1)}.${process.pid}.tmp`;
      // A torn line that passed the shape check must not reach a snapshot (trusted when loaded): parse while copying.
      if (!this.writeSnapshot(tmp)) {
        this.validate = true;
        this.reload();
        if (this.gen !== g + 1 || !this.writeSnapshot(tmp)) {
          rmSync(tmp, { force: true });
          return false;
        }
      }
      this.options.onCompactStep?.('snapshot-written');
      renameSync(tmp, this.snapPath(g + 1));
      this.options.onCompactStep?.('renamed');
      const { logs, snaps, temps } = this.listGenerations();
      for (const old of logs) if (old <= g) rmSync(this.logPath(old), { force: true });
      for (const old of snaps) if (old <= g) rmSync(this.snapPath(old), { force: true });
      for (const t of temps) {
        const pid = Number(/\.(\d+)\.tmp$/.exec(t)?.[1]);
        if (pid !== process.pid && !isProcessAlive(pid)) rmSync(join(this.dir, t), { force: true });
      }
      this.reload();
      return true;
    } finally {
      this.compacting = false;
    }
  }

  /** Appends the seal line to log(g) (one O_APPEND write, starting a line of its own); false when log(g) is gone. */
  private seal(g: number): boolean {
    let fd: number;
    try {
      fd = openSync(this.logPath(g), constants.O_WRONLY | constants.O_APPEND);
    } catch (e) {
      if (enoent(e)) return false;
      throw e;
    }
    try {
      writeSync(fd, `\n{"seal":${g}}\n`);
    } finally {
      closeSync(fd);
    }
    return true;
  }

  /** Writes every live line to `file`; false when one of them does not parse. */
  private writeSnapshot(file: string): boolean {
    const fd = openSync(file, 'w');
    try {
      let out = Buffer.allocUnsafe(1 << 20);
      let used = 0;
      for (const s of this.index.values()) {
        const len = this.slots.len[s];
        if (used + len + 1 > out.length) {
          writeSync(fd, out, 0, used);
          used = 0;
          if (len + 1 > out.length) out = Buffer.allocUnsafe(len + 1);
        }
        readSync(this.chain[this.slots.file[s]].tail.fd, out, used, len, this.slots.off[s]);
        try {
          JSON.parse(out.toString('utf8', used, used + len));
        } catch {
          return false;
        }
        out[used + len] = 0x0a;
        used += len + 1;
      }
      if (used > 0) writeSync(fd, out, 0, used);
      return true;
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Closes the namespace and deletes its files (every generation, snapshots
   * and leftover temporaries): a finished run's namespace, which nobody
   * writes any more (lowdb-store.ts deleteRun).
   */
  async destroy(): Promise<void> {
    await this.close();
    const { logs, snaps, temps } = this.listGenerations();
    for (const f of [...logs.map((g) => this.logPath(g)), ...snaps.map((g) => this.snapPath(g)), ...temps.map((n) => join(this.dir, n))])
      rmSync(f, { force: true });
  }

  /** Waits for this process's writes, then releases the files. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const current = this.writer?.log;
    this.writer = undefined;
    await Promise.all([...this.retired.splice(0), current?.close()]);
    this.closeChain();
  }
}
