import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isProcessAlive } from '../util/process-alive.js';

/**
 * One process owns a data directory at a time: two processes writing the same
 * files would lose each other's writes. The lock file records the owner's
 * pid and, once it listens, its URL, so a second msgflow process (e.g. `msgflow
 * run` beside a running `msgflow start`) can talk to the owner over HTTP
 * instead. A lock whose pid is gone (kill -9) is stale and taken over.
 *
 * Every step is atomic, so two processes racing for the directory never both
 * own it:
 * - taking a free lock is `link(temp, lock)` of a fully written temp file:
 *   it fails if the lock exists (like O_EXCL), and a reader never sees a
 *   half-written lock;
 * - a stale lock is moved away with `rename(lock, unique name)`, which only
 *   one taker can do to that file; the taker then checks that what it moved
 *   is the stale lock it saw (each lock carries a random nonce). If a faster
 *   taker's fresh lock was moved instead, it is linked back. Then the taker
 *   competes for the free lock like anyone else (link again).
 * It never reads, removes and re-creates: two takers that both saw the stale
 * lock could then each remove the other's fresh one and both become owners.
 */
export interface LockInfo {
  pid: number;
  url?: string;
  command?: string;
  /** Random per lock: tells this lock from an earlier one of the same pid. */
  nonce?: string;
}

export interface DataLock {
  readonly file: string;
  /** Records the URL the owner serves on. */
  setUrl(url: string): void;
  release(): void;
}

export type LockResult = { acquired: true; lock: DataLock } | { acquired: false; holder: LockInfo };

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function parseInfo(text: string | undefined): LockInfo | undefined {
  if (text === undefined) return undefined;
  try {
    const v = JSON.parse(text) as LockInfo;
    return typeof v?.pid === 'number' ? v : undefined;
  } catch {
    return undefined;
  }
}

function errno(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException).code;
}

function unlinkQuiet(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}

/** Attempts before giving up when the lock keeps changing under us. */
const MAX_TRIES = 50;

export function acquireDataLock(dir: string, command: string): LockResult {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'msgflow.lock');
  const info: LockInfo = { pid: process.pid, command, nonce: randomBytes(8).toString('hex') };
  const unique = () => `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
  const tmp = `${unique()}.tmp`;
  writeFileSync(tmp, JSON.stringify(info));
  try {
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      try {
        linkSync(tmp, file);
        return { acquired: true, lock: ownedLock(file, info) };
      } catch (e) {
        if (errno(e) !== 'EEXIST') throw e;
      }
      const seen = readText(file);
      if (seen === undefined) continue; // removed meanwhile: try again
      const holder = parseInfo(seen);
      if (holder && holder.pid !== process.pid && isProcessAlive(holder.pid)) return { acquired: false, holder };
      // Stale (owner died) or unreadable (a crash of an older release mid-write): move it away atomically.
      const moved = unique() + '.stale';
      try {
        renameSync(file, moved);
      } catch (e) {
        if (errno(e) === 'ENOENT') continue; // another taker moved it first
        throw e;
      }
      if (readText(moved) === seen) {
        unlinkQuiet(moved);
        continue;
      }
      // We moved a lock that appeared after we looked (a faster taker's): give it back.
      try {
        linkSync(moved, file);
      } catch {
        // Someone linked a lock meanwhile; the moved one's owner will find its lock gone at release.
      }
      unlinkQuiet(moved);
    }
  } finally {
    unlinkQuiet(tmp);
  }
  throw new Error(`could not lock ${dir}: its lock file kept changing`);
}

function ownedLock(file: string, info: LockInfo): DataLock {
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    process.off('exit', release);
    // Only our own lock (same nonce) is removed.
    if (parseInfo(readText(file))?.nonce === info.nonce) unlinkQuiet(file);
  };
  process.on('exit', release);
  return {
    file,
    setUrl(url: string) {
      info.url = url;
      const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
      writeFileSync(tmp, JSON.stringify(info));
      renameSync(tmp, file);
    },
    release,
  };
}
