/**
 * The one append-only JSON Lines file of the local service (send queue, chat
 * logs, contacts, account checks).
 *
 * A new record is one write(2) of its line to a descriptor kept open while the
 * log is in use: the cost of a write does not
 * grow with the file, and a write never touches unrelated records. Appends
 * that arrive while a write is in flight are committed together in the next
 * write (group commit), so many concurrent callers cost few system calls.
 * `rewrite` (compaction) replaces the file atomically (temp file + rename), in
 * the same sequence as the appends, so a crash leaves either the old or the
 * new file, never a half-compacted one.
 *
 * `onDurable` callbacks run inside that sequence, right after the write
 * succeeded and before the next write starts: a caller that updates its
 * in-memory index there changes memory only after the disk, and a compaction
 * that snapshots the index sees exactly what is in the file.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { appendFile, mkdir, open, rename, rm, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { MsgflowError } from '../../api/errors.js';

type Op =
  | { kind: 'append'; data: string; onDurable?: () => void; resolve: () => void; reject: (e: unknown) => void }
  | { kind: 'rewrite'; produce: () => Iterable<string>; onDurable?: () => void; resolve: () => void; reject: (e: unknown) => void };

/** Bytes read at a time when loading. */
const READ_SLICE = 1 << 20;

/** Appends committed together at most (keeps one write's size bounded). */
const MAX_BATCH = 4096;

/**
 * How long the file stays open after a write. Keeping it open spares an
 * open(2) and a close(2) per batch (most of an append's cost); closing it
 * when idle bounds the open files to the logs being written (a service has
 * one chat log per chat).
 */
const IDLE_CLOSE_MS = 1000;

export class AppendLog<T> {
  readonly file: string;
  /** The file as named in errors (the instance id replaced by a placeholder). */
  readonly shown: string;
  private dirReady = false;
  private readonly ops: Op[] = [];
  private busy = false;
  /** Bytes known to be whole lines; a failed append is cut back to it. */
  private size = -1;
  /** Descriptor opened for appending, -1 when closed (see IDLE_CLOSE_MS). */
  private fd = -1;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(file: string, shown = file) {
    this.file = file;
    this.shown = shown;
  }

  /**
   * Every record of the file, or null when it does not exist. A torn last line
   * (the process was killed mid-append) is skipped: its write was never
   * acknowledged, so dropping it loses nothing that was promised.
   *
   * @throws MsgflowError LOCAL_DATA_INVALID naming the file and line of a corrupt record
   */
  async read(): Promise<T[] | null> {
    const out: T[] = [];
    const exists = await this.readLines((buf, start, end, line) => {
      try {
        out.push(JSON.parse(buf.toString('utf8', start, end)) as T);
      } catch (e) {
        throw corrupt(this.shown, line, `not a JSON record (${(e as Error).message})`);
      }
    });
    return exists ? out : null;
  }

  /**
   * Calls `onLine` for every complete, non-empty line (bytes `start..end` of
   * `buf`, without the newline; `line` counts from 1). Returns false when the
   * file does not exist. Cuts a torn tail off, or the next append would glue
   * onto it.
   */
  async readLines(onLine: (buf: Buffer, start: number, end: number, line: number) => void): Promise<boolean> {
    let fh;
    try {
      fh = await open(this.file, 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
        this.size = 0;
        return false;
      }
      throw unreadable(this.shown, e);
    }
    // Read in slices: a file of a million records is never held whole.
    let buf = Buffer.allocUnsafe(READ_SLICE);
    let filled = 0;
    let offset = 0; // file offset of buf[0]
    let line = 0;
    try {
      for (;;) {
        if (filled === buf.length) {
          // One line longer than the buffer: grow it.
          const bigger = Buffer.allocUnsafe(buf.length * 2);
          buf.copy(bigger, 0, 0, filled);
          buf = bigger;
        }
        let n: number;
        try {
          ({ bytesRead: n } = await fh.read(buf, filled, buf.length - filled, offset + filled));
        } catch (e) {
          throw unreadable(this.shown, e);
        }
        if (n === 0) break;
        filled += n;
        let start = 0;
        for (;;) {
          const nl = buf.indexOf(10, start);
          if (nl < 0 || nl >= filled) break;
          line++;
          let end = nl;
          if (end > start && buf[end - 1] === 13) end--;
          if (end > start) onLine(buf, start, end, line);
          start = nl + 1;
        }
        buf.copy(buf, 0, start, filled);
        filled -= start;
        offset += start;
      }
    } finally {
      await fh.close();
    }
    // What is left has no newline: a torn last line. Cut it off, or the next append would glue onto it.
    if (filled > 0) await truncate(this.file, offset);
    this.size = offset;
    return true;
  }

  /** Appends records; resolves once they are in the file. */
  append(...records: T[]): Promise<void> {
    return this.appendLines(records.map((r) => JSON.stringify(r) + '\n').join(''));
  }

  /**
   * Appends ready-made lines (each ending in `\n`); `onDurable` runs once they
   * are in the file, before any later write of this log. Rejects, without
   * calling `onDurable`, when the write fails.
   */
  appendLines(data: string, onDurable?: () => void): Promise<void> {
    return new Promise((resolve, reject) => {
      this.ops.push({ kind: 'append', data, onDurable, resolve, reject });
      this.kick();
    });
  }

  /** Replaces the whole file atomically with these records (compaction). */
  write(records: T[]): Promise<void> {
    return this.rewrite(() => records.map((r) => JSON.stringify(r) + '\n'));
  }

  /**
   * Replaces the whole file atomically with the lines `produce` gives (each
   * ending in `\n`). `produce` runs when the rewrite's turn comes, after every
   * earlier append is in the file and its `onDurable` has run.
   */
  rewrite(produce: () => Iterable<string>, onDurable?: () => void): Promise<void> {
    return new Promise((resolve, reject) => {
      this.ops.push({ kind: 'rewrite', produce, onDurable, resolve, reject });
      this.kick();
    });
  }

  private kick(): void {
    if (this.busy) return;
    this.busy = true;
    void this.drain();
  }

  private async drain(): Promise<void> {
    while (this.ops.length > 0) {
      const head = this.ops[0]!;
      if (head.kind === 'rewrite') {
        this.ops.shift();
        try {
          // The rename replaces the file: a descriptor of the old one must not take later appends.
          this.closeFd();
          await this.replaceFile(head.produce());
          head.onDurable?.();
          head.resolve();
        } catch (e) {
          head.reject(e);
        }
        continue;
      }
      const batch: Extract<Op, { kind: 'append' }>[] = [];
      while (batch.length < MAX_BATCH && this.ops[0]?.kind === 'append') batch.push(this.ops.shift() as Extract<Op, { kind: 'append' }>);
      const data = batch.map((b) => b.data).join('');
      try {
        await this.ensureDir();
        // Synchronous: a few KB into the page cache take microseconds, less than a
        // hop through libuv's thread pool; durability is the same (kill -9 keeps them).
        if (this.fd < 0) this.fd = openSync(this.file, 'a');
        const buf = Buffer.from(data, 'utf8');
        let off = 0;
        while (off < buf.length) off += writeSync(this.fd, buf, off, buf.length - off);
        if (this.size >= 0) this.size += buf.length;
      } catch (e) {
        this.closeFd();
        // A write that failed half-way must not leave a partial line for the next one to glue onto.
        if (this.size >= 0) await truncate(this.file, this.size).catch(() => undefined);
        for (const b of batch) b.reject(e);
        continue;
      }
      for (const b of batch) {
        b.onDurable?.();
        b.resolve();
      }
    }
    this.busy = false;
    this.idleTimer ??= setTimeout(() => {
      this.idleTimer = undefined;
      if (!this.busy) this.closeFd();
    }, IDLE_CLOSE_MS).unref();
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

  private async replaceFile(lines: Iterable<string>): Promise<void> {
    await this.ensureDir();
    const tmp = path.join(path.dirname(this.file), `.${path.basename(this.file)}.tmp`);
    // Written in slices, so a store of a million records never becomes one huge string.
    let chunk: string[] = [];
    let chunkLen = 0;
    let size = 0;
    await writeFile(tmp, '');
    try {
      for (const l of lines) {
        chunk.push(l);
        chunkLen += l.length;
        if (chunkLen >= 1 << 20) {
          const s = chunk.join('');
          await appendFile(tmp, s, 'utf8');
          size += Buffer.byteLength(s, 'utf8');
          chunk = [];
          chunkLen = 0;
        }
      }
      const s = chunk.join('');
      await appendFile(tmp, s, 'utf8');
      size += Buffer.byteLength(s, 'utf8');
      await rename(tmp, this.file);
    } catch (e) {
      await rm(tmp, { force: true }).catch(() => undefined);
      throw e;
    }
    this.size = size;
  }

  private async ensureDir(): Promise<void> {
    if (this.dirReady) return;
    await mkdir(path.dirname(this.file), { recursive: true });
    this.dirReady = true;
  }
}

function unreadable(shown: string, e: unknown): MsgflowError {
  return new MsgflowError(
    'LOCAL_DATA_INVALID',
    { file: shown, location: '', reason: `cannot be read (${(e as Error).message})` },
    { cause: e },
  );
}

/** A corrupt line of a local data file, named by file and line. */
export function corrupt(file: string, line: number, reason: string): MsgflowError {
  return new MsgflowError('LOCAL_DATA_INVALID', { file, location: `:${line}`, reason });
}

/** A record of a local data file that does not say what the service wrote; `where` is `file:line` or `file key '...'`. */
export function corruptAt(where: string, reason: string): MsgflowError {
  return new MsgflowError('LOCAL_DATA_INVALID', { file: where, location: '', reason });
}
