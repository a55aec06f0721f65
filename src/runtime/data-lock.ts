import { mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, closeSync } from 'node:fs';
import path from 'node:path';
import { isProcessAlive } from '../util/process-alive.js';

/**
 * One process owns a data directory at a time: two processes writing the same
 * lowdb files would lose each other's writes. The lock file records the owner's
 * pid and, once it listens, its URL, so a second msgflow process (e.g. `msgflow
 * run` beside a running `msgflow start`) can talk to the owner over HTTP
 * instead. A lock whose pid is gone (kill -9) is stale and taken over.
 */
export interface LockInfo {
  pid: number;
  url?: string;
  command?: string;
}

export interface DataLock {
  readonly file: string;
  /** Records the URL the owner serves on. */
  setUrl(url: string): void;
  release(): void;
}

export type LockResult = { acquired: true; lock: DataLock } | { acquired: false; holder: LockInfo };

function readInfo(file: string): LockInfo | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as LockInfo;
  } catch {
    return undefined;
  }
}

export function acquireDataLock(dir: string, command: string): LockResult {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'msgflow.lock');
  for (let tries = 0; tries < 3; tries++) {
    try {
      const fd = openSync(file, 'wx');
      const info: LockInfo = { pid: process.pid, command };
      writeFileSync(fd, JSON.stringify(info));
      closeSync(fd);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        const cur = readInfo(file);
        if (cur?.pid === process.pid) rmSync(file, { force: true });
        process.off('exit', release);
      };
      process.on('exit', release);
      return {
        acquired: true,
        lock: {
          file,
          setUrl(url: string) {
            info.url = url;
            const tmp = `${file}.${process.pid}.tmp`;
            writeFileSync(tmp, JSON.stringify(info));
            renameSync(tmp, file);
          },
          release,
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const holder = readInfo(file);
      if (holder && holder.pid !== process.pid && isProcessAlive(holder.pid)) return { acquired: false, holder };
      // Stale (owner died) or unreadable: remove and try again.
      rmSync(file, { force: true });
    }
  }
  throw new Error(`could not lock ${dir}`);
}
