/**
 * Key/value namespaces of the embedded driver: one small JSON file per key,
 * under kv/<namespace>/.
 *
 * Why not one lowdb file per namespace: several msgflow processes share these
 * namespaces (a `msgflow start` daemon and a `msgflow run` both use the
 * checkAccount cache and its rate-limit pause). A namespace file cached in one
 * process's memory would hide the other's writes, and its next write would
 * erase them, a lost rate-limit pause included. With a file per key, every
 * read sees the latest write of any process, writes to different keys never
 * collide, and a write costs one small file whatever the namespace's size.
 *
 * Each write goes to a temp file unique to this process and write, then is
 * renamed over the key's file (atomic on POSIX), so a reader or a kill -9
 * sees the old value or the new one, never half of one.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DurableState } from './types.js';

interface Entry {
  k: string;
  v: unknown;
}

const MAX_NAME = 200;

/** A file name for a key: readable when short, a hash when the encoding is too long for a file name. */
function fileNameOf(key: string): string {
  const enc = encodeURIComponent(key).replace(/\./g, '%2E').replace(/\*/g, '%2A');
  return enc.length <= MAX_NAME ? `${enc}.json` : `~${createHash('sha256').update(key).digest('hex')}.json`;
}

function enoent(e: unknown): boolean {
  return (e as NodeJS.ErrnoException).code === 'ENOENT';
}

export function fileKv(root: string, namespace: string): DurableState {
  const dir = join(root, fileNameOf(namespace).slice(0, -'.json'.length));
  let made: Promise<unknown> | undefined;
  const ensureDir = () => (made ??= mkdir(dir, { recursive: true }));

  async function readEntry(file: string): Promise<Entry | undefined> {
    try {
      return JSON.parse(await readFile(join(dir, file), 'utf8')) as Entry;
    } catch (e) {
      if (enoent(e)) return undefined;
      throw e;
    }
  }

  return {
    async get<T>(key: string) {
      const entry = await readEntry(fileNameOf(key));
      return entry?.k === key ? (entry.v as T) : undefined;
    },
    async set(key, value) {
      if (value === undefined) return this.delete(key);
      await ensureDir();
      const file = join(dir, fileNameOf(key));
      const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
      await writeFile(tmp, JSON.stringify({ k: key, v: value } satisfies Entry));
      try {
        await rename(tmp, file);
      } catch (e) {
        await rm(tmp, { force: true });
        throw e;
      }
    },
    async delete(key) {
      await rm(join(dir, fileNameOf(key)), { force: true });
    },
    async entries<T>(prefix = '') {
      let names: string[];
      try {
        names = await readdir(dir);
      } catch (e) {
        if (enoent(e)) return [];
        throw e;
      }
      const out: Array<[string, T]> = [];
      for (const name of names) {
        if (!name.endsWith('.json')) continue; // temp files of writes in flight
        // Readable names can be filtered before reading; hashed ones must be read.
        if (!name.startsWith('~') && !decodeURIComponent(name.slice(0, -5)).startsWith(prefix)) continue;
        const entry = await readEntry(name);
        if (entry && entry.k.startsWith(prefix)) out.push([entry.k, entry.v as T]);
      }
      return out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    },
  };
}
