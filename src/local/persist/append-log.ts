/**
 * An append-only JSON Lines file that is also a lowdb Adapter.
 *
 * lowdb's own adapters rewrite the whole file on every write, which would make
 * sending a message cost time proportional to the history already stored. Here
 * a new record is one `appendFile` of one line: the cost of a write does not
 * grow with the file, and a write never touches unrelated records. `read` and
 * `write` (the lowdb Adapter) exist for loading and for compaction, which
 * rewrites the file atomically (temp file + rename) so a crash never leaves a
 * half-compacted log.
 */
import { appendFile, mkdir, readFile, rename, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Adapter } from 'lowdb';

export class AppendLog<T> implements Adapter<T[]> {
  readonly file: string;
  private dirReady = false;
  /** Appends are chained so lines land in call order and never interleave. */
  private tail: Promise<void> = Promise.resolve();

  constructor(file: string) {
    this.file = file;
  }

  /**
   * Every record of the file, or null when it does not exist. A torn last line
   * (the process was killed mid-append) is skipped: its write was never
   * acknowledged, so dropping it loses nothing that was promised.
   */
  async read(): Promise<T[] | null> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
    if (text.length > 0 && !text.endsWith('\n')) {
      // Cut the torn tail off now, or the next append would glue onto it.
      text = text.slice(0, text.lastIndexOf('\n') + 1);
      await truncate(this.file, Buffer.byteLength(text, 'utf8'));
    }
    const out: T[] = [];
    const lines = text.split('\n');
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      if (line.trim() === '') continue;
      try {
        out.push(JSON.parse(line) as T);
      } catch (e) {
        throw new Error(`${this.file}:${i + 1}: corrupt record (${(e as Error).message})`, { cause: e });
      }
    }
    return out;
  }

  /** Replaces the whole file atomically (compaction). */
  async write(records: T[]): Promise<void> {
    const run = async () => {
      await this.ensureDir();
      const tmp = path.join(path.dirname(this.file), `.${path.basename(this.file)}.tmp`);
      await writeFile(tmp, records.map((r) => JSON.stringify(r) + '\n').join(''), 'utf8');
      await rename(tmp, this.file);
    };
    const p = this.tail.then(run, run);
    this.tail = p.catch(() => undefined);
    return p;
  }

  /** Appends records; resolves once they are in the file. */
  append(...records: T[]): Promise<void> {
    const data = records.map((r) => JSON.stringify(r) + '\n').join('');
    const run = async () => {
      await this.ensureDir();
      await appendFile(this.file, data, 'utf8');
    };
    const p = this.tail.then(run, run);
    this.tail = p.catch(() => undefined);
    return p;
  }

  private async ensureDir(): Promise<void> {
    if (this.dirReady) return;
    await mkdir(path.dirname(this.file), { recursive: true });
    this.dirReady = true;
  }
}
