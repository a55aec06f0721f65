/**
 * The one append-only JSON Lines file of msgflow: the local service's data
 * (send queue, chat logs, notifications, contacts, account checks) and the
 * engine store's logs (run index, item results, journals, key/value
 * namespaces) are all built on it, so a durability rule is written once.
 *
 * What it guarantees (the union of what both stacks promised before):
 *
 * - **Acknowledged means written.** An append resolves once its bytes were
 *   handed to write(2): they are in the kernel's page cache and survive
 *   `kill -9` of the process. There is no fsync: a power cut or a kernel
 *   crash may lose the last acknowledged lines (and a rewrite may then leave
 *   the old file). A write(2) into the page cache takes microseconds, less
 *   than a hop through libuv's thread pool, so writes are synchronous.
 * - **Group commit, in order.** Appends that arrive together go out in one
 *   write(2), at most {@link MAX_BATCH} at a time: many concurrent callers
 *   cost few system calls. "Together" is the log's {@link CommitWindow}:
 *   `per-turn` (every append of one turn of the event loop, e.g. items
 *   finishing in many callbacks) or `at-once` (the write starts as soon as
 *   the appending code yields, the shortest wait); appends that arrive while
 *   a rewrite runs join the next write either way. Lines land in the order
 *   of the calls; `onDurable` callbacks run in that order, right after their
 *   write and before the next one, so an index updated there changes only
 *   after the disk did.
 * - **Torn last line** (a write cut short by `kill -9`). Readers never hand
 *   out an incomplete last line, and never write. A log with one writer that
 *   owns the file cuts it off when that writer opens the file (it was never
 *   acknowledged), so the next append starts on a line of its own. A
 *   `shared` log (several processes append) leaves it, since it may be
 *   another process's write in flight: each batch then starts with a
 *   newline, so a line torn by a crash ends there as one complete line that
 *   is not a record.
 * - **A write that fails half-way** (a full disk, a file-size limit) is cut
 *   back to the last whole line in an owned log, so a later append never
 *   glues onto a partial one; in a shared log the next batch's newline ends
 *   it. The callers of that batch are rejected.
 * - **A complete line that is not a record** gets the log's
 *   {@link CorruptLinePolicy}, chosen per use: `refuse` where one writer owns
 *   the file and such a line can only be damage (the local service's data:
 *   the load fails naming file and line, and nothing is emptied); `skip-and-report`
 *   where a crash can leave one (a shared log) or where losing one record is
 *   repaired by redoing it (the engine's item results and journals): the
 *   line is skipped and its number reported.
 * - **Compaction** of an owned log: `rewrite` writes the new content to a
 *   temp file (`.<name>.tmp`, in slices) and renames it over the file, in
 *   sequence with the appends: a crash leaves the old file or the new one. A
 *   shared log cannot be rewritten under its other writers; kv-log.ts
 *   compacts through generations of files instead.
 * - **Tailing** by another reader or process: {@link LogTail} reads the
 *   complete lines appended since its last pull (one fstat when nothing
 *   changed), leaves an incomplete last line for a later pull, and tells when
 *   the file was unlinked. A shared log's writer opens the file without
 *   O_CREAT, so it never recreates a file a compaction retired, and writes
 *   each batch with one O_APPEND write(2), which Linux applies whole with
 *   respect to the other appenders of a regular file.
 * - **File handles**: a writer opens its descriptor at its first write and
 *   closes it after `idleCloseMs` without writes (and at `close()`), so logs
 *   nobody writes to hold none; a tail holds one until it is closed. Files
 *   are read in slices of a megabyte: a file of a million records is never
 *   held whole.
 *
 * Lines are UTF-8 JSON texts ending in `\n`; a `\r` before it and empty
 * lines are ignored.
 */
import { closeSync, constants, fstatSync, ftruncateSync, linkSync, mkdirSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { appendFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * What a reader does with a complete line that is not a record:
 * - `refuse`: throws {@link CorruptLineError} naming the file and line;
 * - `skip-and-report`: skips it and adds its line number to the reader's `skipped`.
 */
export type CorruptLinePolicy = 'refuse' | 'skip-and-report';

/**
 * When a batch of appends is written:
 * - `per-turn`: at the end of the current turn of the event loop (setImmediate),
 *   so appends made in any callback of that turn join it;
 * - `at-once`: as soon as the appending code yields (a microtask), so only
 *   the appends made before then join it, and none waits for the next turn.
 */
export type CommitWindow = 'per-turn' | 'at-once';

/** A line a `refuse` log does not take as a record. */
export class CorruptLineError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly reason: string,
  ) {
    super(`${file}:${line}: ${reason}`);
    this.name = 'CorruptLineError';
  }
}

/**
 * One complete line: bytes `start..end` of `buf` (newline excluded), at byte
 * `offset` of the file, `line` counting from 1. Returns nothing when the line
 * is a record, or why it is not one (the log's policy decides what follows).
 */
export type LineHandler = (buf: Buffer, start: number, end: number, offset: number, line: number) => string | void;

/**
 * JSON records, `line` counting from 1 (see {@link jsonRecords}). Returns
 * nothing when the record is taken, or why it is not one.
 */
export interface RecordHandler {
  json: (record: unknown, line: number) => string | void;
}

/** How a reader hands lines out: as bytes with their offsets (an index of where records are), or as parsed JSON records. */
export type LineReader = LineHandler | RecordHandler;

/** Bytes read at a time. */
const CHUNK = 1 << 20;

/** Appends committed together at most (keeps one write's size bounded). */
const MAX_BATCH = 4096;

const isMissing = (e: unknown) => (e as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * Reads lines as JSON records: each slice of the file is decoded once and
 * its lines parsed (a line that is not JSON gets the log's policy).
 */
export function jsonRecords<T>(onRecord: (record: T, line: number) => string | void): RecordHandler {
  return { json: onRecord as RecordHandler['json'] };
}

/** Records as lines. */
export function jsonLines(records: readonly unknown[]): string {
  let data = '';
  for (const r of records) data += JSON.stringify(r) + '\n';
  return data;
}

/**
 * Follows a log from a position: each pull hands out the complete lines
 * appended since the last one. Synchronous on purpose: a caller's index
 * never sees a half-applied tail.
 */
export class LogTail {
  /** Bytes of the file consumed: up to and including the last complete line handed out. */
  consumed = 0;
  /** Lines consumed (empty ones included), so a line's number is known. */
  line = 0;
  /** Numbers of the lines skipped by the `skip-and-report` policy. */
  readonly skipped: number[] = [];

  constructor(
    readonly fd: number,
    readonly corrupt: CorruptLinePolicy,
    readonly name: string,
  ) {}

  /** A tail of `file` from its start; undefined when the file does not exist. */
  static open(file: string, corrupt: CorruptLinePolicy, name = file): LogTail | undefined {
    try {
      return new LogTail(openSync(file, 'r'), corrupt, name);
    } catch (e) {
      if (isMissing(e)) return undefined;
      throw e;
    }
  }

  /**
   * Hands every complete line up to the end of the file to `onLine`; an
   * incomplete last line stays for a later pull. Returns false when the
   * file was unlinked (a compaction retired it).
   */
  pull(onLine: LineReader): boolean {
    const st = fstatSync(this.fd);
    this.read(onLine, st.size, Infinity);
    return st.nlink > 0;
  }

  /**
   * Like {@link pull}, but stops once about `budget` bytes were consumed;
   * true when it stopped for the budget (there is more to read).
   */
  pullSome(onLine: LineReader, budget: number): boolean {
    return this.read(onLine, fstatSync(this.fd).size, budget);
  }

  /** True when the file holds bytes past the last complete line (a torn or in-flight last line). */
  hasPartialLine(): boolean {
    return fstatSync(this.fd).size > this.consumed;
  }

  close(): void {
    closeSync(this.fd);
  }

  private read(onLine: LineReader, size: number, budget: number): boolean {
    // Nothing new (the common case of a tail checked before every read): no buffer either.
    if (this.consumed >= size) return false;
    const start = this.consumed;
    // Sized to what is new (a tail is usually a few lines): no megabyte kept per open log.
    let buf = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(4096, size - this.consumed)));
    while (this.consumed < size) {
      if (this.consumed - start >= budget) return true;
      const got = readSync(this.fd, buf, 0, Math.min(buf.length, size - this.consumed), this.consumed);
      if (got === 0) break;
      const taken = typeof onLine === 'function' ? this.split(buf, got, onLine) : this.splitJson(buf, got, onLine.json);
      if (taken === 0) {
        // No newline: a line longer than the buffer (grow it and read again), or at the end an incomplete one (leave it).
        if (got < buf.length) break;
        buf = Buffer.allocUnsafe(buf.length * 2);
        continue;
      }
      // Up to the size found when the pull began: what lands meanwhile is the next pull's (no second fstat per pull).
      this.consumed += taken;
    }
    return false;
  }

  /** Hands out the complete lines of the first `got` bytes of `buf`; returns the bytes they span. */
  private split(buf: Buffer, got: number, onLine: LineHandler): number {
    let start = 0;
    for (;;) {
      const nl = buf.indexOf(0x0a, start);
      if (nl === -1 || nl >= got) return start;
      this.line++;
      const end = nl > start && buf[nl - 1] === 0x0d ? nl - 1 : nl;
      if (end > start) {
        const bad = onLine(buf, start, end, this.consumed + start, this.line);
        if (bad !== undefined) this.notARecord(bad);
      }
      start = nl + 1;
    }
  }

  /** Like {@link split}, for JSON records: the complete lines are decoded to text in one go. */
  private splitJson(buf: Buffer, got: number, onRecord: RecordHandler['json']): number {
    const taken = got === 0 ? 0 : buf.lastIndexOf(0x0a, got - 1) + 1;
    if (taken === 0) return 0;
    const text = buf.toString('utf8', 0, taken);
    for (let start = 0; start < text.length;) {
      const nl = text.indexOf('\n', start);
      this.line++;
      const end = nl > start && text.charCodeAt(nl - 1) === 0x0d ? nl - 1 : nl;
      if (end > start) {
        let record: unknown;
        let bad: string | void = undefined;
        try {
          record = JSON.parse(text.slice(start, end));
        } catch (e) {
          bad = `not a JSON record (${(e as Error).message})`;
        }
        if (bad === undefined) bad = onRecord(record, this.line);
        if (bad !== undefined) this.notARecord(bad);
      }
      start = nl + 1;
    }
    return taken;
  }

  /** Applies the policy to the line just read. */
  private notARecord(reason: string): void {
    if (this.corrupt === 'refuse') throw new CorruptLineError(this.name, this.line, reason);
    this.skipped.push(this.line);
  }
}

/** What a whole read of a log found. */
export interface ScanResult {
  /** Lines read (empty ones included). */
  lines: number;
  /** Numbers of the lines skipped by the `skip-and-report` policy. */
  skipped: number[];
  /** True when the last line was incomplete (a write cut short by a crash, or in flight). */
  tornTail: boolean;
}

/**
 * Reads every complete line of `file` from its start, in slices (letting the
 * event loop run between them); null when the file does not exist.
 * @throws CorruptLineError for a line that is not a record, with `refuse`
 */
export async function scanLog(file: string, corrupt: CorruptLinePolicy, onLine: LineReader, name = file): Promise<ScanResult | null> {
  const tail = LogTail.open(file, corrupt, name);
  if (!tail) return null;
  try {
    while (tail.pullSome(onLine, CHUNK)) await new Promise((r) => setImmediate(r));
    return { lines: tail.line, skipped: tail.skipped, tornTail: tail.hasPartialLine() };
  } finally {
    tail.close();
  }
}

/** Every record of a JSON Lines file (empty when it does not exist), with what the read found. */
export async function readRecords<T>(file: string, corrupt: CorruptLinePolicy): Promise<ScanResult & { records: T[] }> {
  const records: T[] = [];
  const found = await scanLog(
    file,
    corrupt,
    jsonRecords<T>((r) => void records.push(r)),
  );
  return { records, ...(found ?? { lines: 0, skipped: [], tornTail: false }) };
}

/** The records of a JSON Lines file as a stream, a slice at a time; a missing file is an empty stream. */
export async function* streamRecords<T>(file: string, corrupt: CorruptLinePolicy): AsyncGenerator<T> {
  const tail = LogTail.open(file, corrupt);
  if (!tail) return;
  try {
    const slice: T[] = [];
    const onLine = jsonRecords<T>((r) => void slice.push(r));
    for (;;) {
      const more = tail.pullSome(onLine, CHUNK);
      yield* slice.splice(0);
      if (!more) return;
    }
  } finally {
    tail.close();
  }
}

/**
 * Creates `file` holding `data`, unless it exists: written whole to a temp
 * file, then hard-linked to its name, so no reader sees it half-written and
 * a second creator never replaces the first one's. False when it existed.
 */
export function createFileOnce(file: string, data: string): boolean {
  const tmp = `${file}.${process.pid}.tmp`;
  writeWhole(tmp, Buffer.from(data, 'utf8'));
  try {
    linkSync(tmp, file);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  } finally {
    unlinkSync(tmp);
  }
}

function writeWhole(file: string, buf: Buffer): void {
  const fd = openSync(file, 'w');
  try {
    writeAll(fd, buf);
  } finally {
    closeSync(fd);
  }
}

function writeAll(fd: number, buf: Buffer): void {
  let off = 0;
  while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
}

/** Cuts an incomplete last line off the file open as `fd`; returns the size kept. */
function cutTornTail(fd: number): number {
  const { size } = fstatSync(fd);
  const chunk = Buffer.allocUnsafe(Math.min(size, 64 * 1024));
  for (let end = size; end > 0;) {
    const start = Math.max(0, end - chunk.length);
    const got = readSync(fd, chunk, 0, end - start, start);
    const nl = chunk.subarray(0, got).lastIndexOf(0x0a);
    if (nl !== -1) {
      const keep = start + nl + 1;
      if (keep !== size) ftruncateSync(fd, keep);
      return keep;
    }
    end = start;
  }
  if (size > 0) ftruncateSync(fd, 0);
  return 0;
}

export interface AppendLogOptions {
  /** What a reader of this log does with a complete line that is not a record (see the file comment). */
  corrupt: CorruptLinePolicy;
  /**
   * Other processes append to the file too. Then the file must exist (it is
   * opened without O_CREAT); a torn last line is never cut (it may be a
   * write in flight); every batch starts with a newline; `rewrite` is refused.
   * @default false
   */
  shared?: boolean;
  /** The file as named in errors (e.g. with an instance id replaced). @default the file's path */
  name?: string;
  /** Close the descriptor after this long without writes; the next write reopens it. @default 1000 */
  idleCloseMs?: number;
  /** Which appends are written together. @default 'per-turn' */
  commit?: CommitWindow;
}

type Op =
  | { kind: 'append'; data: string; onDurable?: () => void; resolve: () => void; reject: (e: unknown) => void }
  | { kind: 'rewrite'; produce: () => Iterable<string>; onDurable?: () => void; resolve: () => void; reject: (e: unknown) => void };
type AppendOp = Extract<Op, { kind: 'append' }>;

/**
 * The writer of one log (see the file comment), and a reader of it with the
 * log's policy.
 *
 * @example
 * const log = new AppendLog('/state/runs/r1/items.jsonl', { corrupt: 'skip-and-report' });
 * await log.appendRecords([{ step: 'check', index: 0, status: 'succeeded' }]); // written now
 * await log.close();
 */
export class AppendLog {
  readonly name: string;
  private readonly ops: Op[] = [];
  /** A drain is scheduled or running. */
  private busy = false;
  private closed = false;
  private idle: Array<() => void> = [];
  /** Descriptor open for appending, -1 when closed. */
  private fd = -1;
  /** An owned log's bytes known to be whole lines (a failed write is cut back to it); -1 until the file was opened. */
  private size = -1;
  private dirReady = false;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly file: string,
    private readonly options: AppendLogOptions,
  ) {
    this.name = options.name ?? file;
  }

  /**
   * Appends ready-made lines (each ending in `\n`); resolves once they are
   * written. `onDurable` runs then, before any later write of this log.
   * Rejects, without calling `onDurable`, when the write fails.
   */
  append(lines: string, onDurable?: () => void): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`append-only log ${this.name} is closed`));
    return new Promise((resolve, reject) => {
      this.ops.push({ kind: 'append', data: lines, onDurable, resolve, reject });
      this.kick();
    });
  }

  /** Appends records, one JSON line each. */
  appendRecords(records: readonly unknown[]): Promise<void> {
    return this.append(jsonLines(records));
  }

  /**
   * Replaces the whole file atomically with the lines `produce` gives (each
   * ending in `\n`). `produce` runs when the rewrite's turn comes, after
   * every earlier append is written and its `onDurable` ran.
   */
  rewrite(produce: () => Iterable<string>, onDurable?: () => void): Promise<void> {
    if (this.options.shared) return Promise.reject(new Error(`append-only log ${this.name} is shared: it cannot be rewritten`));
    if (this.closed) return Promise.reject(new Error(`append-only log ${this.name} is closed`));
    return new Promise((resolve, reject) => {
      this.ops.push({ kind: 'rewrite', produce, onDurable, resolve, reject });
      this.kick();
    });
  }

  /** Reads the file from its start with this log's policy; null when it does not exist. */
  scan(onLine: LineReader): Promise<ScanResult | null> {
    return scanLog(this.file, this.options.corrupt, onLine, this.name);
  }

  /** Waits for the pending writes, then releases the file; later appends are refused. */
  async close(): Promise<void> {
    if (this.closed) return;
    while (this.busy) await new Promise<void>((r) => this.idle.push(r));
    this.closed = true;
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    this.closeFd();
  }

  private kick(): void {
    if (this.busy) return;
    this.busy = true;
    if (this.options.commit === 'at-once') queueMicrotask(() => void this.drain());
    else setImmediate(() => void this.drain());
  }

  private async drain(): Promise<void> {
    while (this.ops.length > 0) {
      if (this.ops[0]!.kind === 'rewrite') {
        await this.replace(this.ops.shift() as Extract<Op, { kind: 'rewrite' }>);
        continue;
      }
      // One splice, not a shift per op: a batch of thousands would cost a copy of the queue per append.
      let n = 1;
      while (n < MAX_BATCH && n < this.ops.length && this.ops[n]!.kind === 'append') n++;
      this.writeBatch(this.ops.splice(0, n) as AppendOp[]);
    }
    this.busy = false;
    for (const r of this.idle.splice(0)) r();
    this.armIdleClose();
  }

  private writeBatch(batch: AppendOp[]): void {
    let data = this.options.shared ? '\n' : '';
    for (const b of batch) data += b.data;
    const buf = Buffer.from(data, 'utf8');
    try {
      writeAll(this.openFd(), buf);
      if (this.size >= 0) this.size += buf.length;
    } catch (e) {
      this.rollBack();
      // write(2) errors carry no path: name the file, as open(2) errors do.
      (e as NodeJS.ErrnoException).path ??= this.file;
      for (const b of batch) b.reject(e);
      return;
    }
    for (const b of batch) settle(b);
  }

  private openFd(): number {
    if (this.fd >= 0) return this.fd;
    if (this.options.shared) {
      this.fd = openSync(this.file, constants.O_WRONLY | constants.O_APPEND);
      return this.fd;
    }
    this.ensureDir();
    const fd = openSync(this.file, 'a+');
    try {
      if (this.size < 0) this.size = cutTornTail(fd);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    this.fd = fd;
    return fd;
  }

  /** After a failed write: an owned log is cut back to its last whole line, so the next append does not glue onto a partial one. */
  private rollBack(): void {
    if (this.fd >= 0 && this.size >= 0 && !this.options.shared) {
      try {
        ftruncateSync(this.fd, this.size);
      } catch {
        // Unknown again: the next open cuts a torn tail.
        this.size = -1;
      }
    }
    this.closeFd();
  }

  private async replace(op: Extract<Op, { kind: 'rewrite' }>): Promise<void> {
    try {
      // The rename replaces the file: a descriptor of the old one must not take later appends.
      this.closeFd();
      this.ensureDir();
      this.size = await replaceFile(this.file, op.produce());
    } catch (e) {
      op.reject(e);
      return;
    }
    settle(op);
  }

  private ensureDir(): void {
    if (this.dirReady) return;
    mkdirSync(dirname(this.file), { recursive: true });
    this.dirReady = true;
  }

  private armIdleClose(): void {
    const ms = this.options.idleCloseMs ?? 1000;
    if (this.fd < 0 || this.idleTimer || !Number.isFinite(ms)) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (!this.busy) this.closeFd();
    }, ms).unref();
  }

  private closeFd(): void {
    if (this.fd < 0) return;
    const fd = this.fd;
    this.fd = -1;
    try {
      closeSync(fd);
    } catch {
      // Nothing was pending on it: every write already returned.
    }
  }
}

/** Runs an op's `onDurable`, then resolves it (or rejects it with what `onDurable` threw). */
function settle(op: Op): void {
  try {
    op.onDurable?.();
    op.resolve();
  } catch (e) {
    op.reject(e);
  }
}

/** Writes `lines` to a temp file beside `file` in slices, then renames it over `file`; returns the bytes written. */
async function replaceFile(file: string, lines: Iterable<string>): Promise<number> {
  const tmp = join(dirname(file), `.${basename(file)}.tmp`);
  // In slices, so a store of a million records never becomes one huge string.
  let chunk: string[] = [];
  let chunkLen = 0;
  let size = 0;
  const flush = async () => {
    const s = chunk.join('');
    await appendFile(tmp, s, 'utf8');
    size += Buffer.byteLength(s, 'utf8');
    chunk = [];
    chunkLen = 0;
  };
  await writeFile(tmp, '');
  try {
    for (const l of lines) {
      chunk.push(l);
      chunkLen += l.length;
      if (chunkLen >= CHUNK) await flush();
    }
    await flush();
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw e;
  }
  return size;
}
