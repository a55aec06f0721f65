/**
 * An append-only JSON-lines log with group commit.
 *
 * Why not lowdb for item results: lowdb rewrites the whole JSON file on every
 * write, so 100,000 items would mean 100,000 rewrites of an ever-growing
 * file. Here each result is one line appended to the end of the file; every
 * record that arrives while a write is in flight (or in the same event-loop
 * turn) goes out in the next single `write(2)`. A record counts as recorded
 * once that write returned: the bytes are in the kernel's page cache and
 * survive `kill -9` of the process (not a power cut: there is no fsync).
 *
 * `kill -9` can land in the middle of a write, leaving a torn last line.
 * Reading ignores an unparseable last line, and opening for append cuts it
 * off first so the next record starts on a fresh line.
 *
 * Corrupt lines: the local service's log (src/local/persist/append-log.ts)
 * has the same torn-tail rule but refuses a corrupt line in the middle of a
 * file (LOCAL_DATA_INVALID with file:line), while this log skips one. The
 * difference is deliberate, not a second idea: the local log has one writer,
 * which cuts a torn tail before appending, so a bad line mid-file can only be
 * damage; a `shared` log here (the run index, written by several processes)
 * keeps a tail another process tore and ends it with the newline each batch
 * starts with, so a crash leaves a complete but unparseable line mid-file
 * whose write was never acknowledged. Skipping it loses nothing promised.
 */
import { close, constants, createReadStream, open, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { mkdir, open as openAsync, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';

interface Pending {
  data: string;
  resolve: () => void;
  reject: (e: unknown) => void;
}

/** Cuts an incomplete last line (no trailing newline) off `file`; a missing file is fine. */
export async function truncateTornTail(file: string): Promise<number> {
  let fh;
  try {
    fh = await openAsync(file, 'r+');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw e;
  }
  try {
    const { size } = await fh.stat();
    if (size === 0) return 0;
    // Scan backwards in chunks for the last newline.
    const chunk = Buffer.alloc(Math.min(size, 64 * 1024));
    let end = size;
    while (end > 0) {
      const start = Math.max(0, end - chunk.length);
      const len = end - start;
      await fh.read(chunk, 0, len, start);
      const nl = chunk.subarray(0, len).lastIndexOf(0x0a);
      if (nl !== -1) {
        const keep = start + nl + 1;
        if (keep !== size) await fh.truncate(keep);
        return size - keep;
      }
      end = start;
    }
    await fh.truncate(0);
    return size;
  } finally {
    await fh.close();
  }
}

export interface ReadLogResult<T> {
  records: T[];
  /** Unparseable lines other than a torn last one (should not happen; reported, not fatal). */
  corruptLines: number[];
  /** True when the last line was incomplete (a write cut short by a crash). */
  tornTail: boolean;
}

/** Reads every complete record of a JSON-lines file; a missing file reads as empty. */
export async function readLog<T>(file: string): Promise<ReadLogResult<T>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { records: [], corruptLines: [], tornTail: false };
    throw e;
  }
  const lines = text.split('\n');
  // A well-formed file ends with "\n", so the last element is "" unless the tail is torn.
  const last = lines.pop() ?? '';
  const records: T[] = [];
  const corruptLines: number[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line === '') continue;
    try {
      records.push(JSON.parse(line) as T);
    } catch {
      corruptLines.push(i + 1);
    }
  }
  return { records, corruptLines, tornTail: last !== '' };
}

/**
 * Appends JSON records to a file, batching those that arrive together.
 *
 * @example
 * const log = await ItemLog.open('/state/runs/r1/items.jsonl');
 * await log.append({ step: 'check', index: 0, status: 'succeeded' }); // durable now
 * await log.close();
 */
/**
 * Streams a log's records line by line (never the whole file in memory). A
 * torn or corrupt last line is skipped, as {@link readLog} does; a missing
 * file is an empty log.
 */
export async function* streamLog<T>(file: string): AsyncIterable<T> {
  let input;
  try {
    input = createReadStream(file, { encoding: 'utf8' });
    await new Promise<void>((resolve, reject) => {
      input!.once('open', () => resolve());
      input!.once('error', reject);
    });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  const lines = createInterface({ input, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.length === 0) continue;
    let rec: T;
    try {
      rec = JSON.parse(line) as T;
    } catch {
      continue; // a torn tail from kill -9 mid-write
    }
    yield rec;
  }
}

export interface ItemLogOptions {
  /**
   * A log that other processes append to as well (the key/value logs). Then:
   * the file must exist (it is opened without O_CREAT, so a writer never
   * recreates a log that a compaction retired); a torn tail is never cut off
   * on open (it may be another process's write in flight); and every batch
   * starts with a newline, so a line torn by a crash ends there and the batch
   * starts on a line of its own. Each batch is one O_APPEND write(2), which
   * Linux applies whole with respect to other appenders of a regular file.
   * @default false
   */
  shared?: boolean;
}

export class ItemLog {
  private pending: Pending[] = [];
  private writing = false;
  private scheduled = false;
  private closed = false;
  private idle: Array<() => void> = [];

  private constructor(
    readonly file: string,
    private readonly fd: number,
    private readonly shared: boolean,
  ) {}

  /**
   * Opens (creating directories and file) for appending, after cutting off a
   * torn tail; a `shared` log must exist and keeps its tail (see {@link ItemLogOptions}).
   */
  static async open(file: string, options: ItemLogOptions = {}): Promise<ItemLog> {
    const shared = options.shared === true;
    if (!shared) {
      await mkdir(dirname(file), { recursive: true });
      await truncateTornTail(file);
    }
    const flags = shared ? constants.O_WRONLY | constants.O_APPEND : 'a';
    const fd = await new Promise<number>((resolve, reject) => open(file, flags, (err, fd) => (err ? reject(err) : resolve(fd))));
    return new ItemLog(file, fd, shared);
  }

  /** Resolves when the records are written (one line each). */
  append(records: readonly unknown[]): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`item log ${this.file} is closed`));
    let data = '';
    for (const r of records) data += JSON.stringify(r) + '\n';
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ data, resolve, reject });
      this.schedule();
    });
  }

  /** Waits for pending writes, then closes the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.writing || this.pending.length > 0) await new Promise<void>((r) => this.idle.push(r));
    this.closed = true;
    await new Promise<void>((resolve, reject) => close(this.fd, (err) => (err ? reject(err) : resolve())));
  }

  private schedule(): void {
    if (this.writing || this.scheduled) return;
    this.scheduled = true;
    // setImmediate, not a microtask: lets every item finishing in this turn of
    // the event loop join the batch.
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.writing || this.pending.length === 0) return;
    this.writing = true;
    const batch = this.pending;
    this.pending = [];
    try {
      let data = this.shared ? '\n' : '';
      for (const p of batch) data += p.data;
      await this.writeAll(Buffer.from(data, 'utf8'));
      for (const p of batch) p.resolve();
    } catch (e) {
      for (const p of batch) p.reject(e);
    } finally {
      this.writing = false;
      if (this.pending.length > 0) void this.flush();
      else for (const r of this.idle.splice(0)) r();
    }
  }

  /**
   * Synchronous: a batch goes into the page cache in microseconds, less than
   * a round trip through libuv's thread pool, and the batching already
   * happened (setImmediate). The same durability: it survives kill -9 once
   * written.
   */
  private async writeAll(buf: Buffer): Promise<void> {
    let off = 0;
    while (off < buf.length) off += writeSync(this.fd, buf, off, buf.length - off);
  }
}
