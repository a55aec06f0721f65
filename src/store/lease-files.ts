/**
 * Leases on a local filesystem, safe across processes without a lock server.
 *
 * A lease is a directory of generation files `<gen>.json`; the highest
 * generation is the current claim. A claim creates generation top+1 with
 * `link()` of a fully written temp file, which fails atomically (EEXIST) when
 * someone else created it first: exactly one of several racing claimers wins.
 * After creating its generation the winner checks that no higher one exists
 * (a claimer with a stale listing may have created a number that an older
 * cleanup had freed) and then deletes the generations below its own.
 * Renewing rewrites the holder's own file through temp + rename (a rename
 * over an existing file costs ext4 a write-out of it first, 1.3-1.8 ms
 * measured). Releasing marks the holder's own generation released, in place:
 * its text ends in `"released":false}`, and the release writes `true }` over
 * those six bytes, so a dialog message's two releases create, link and
 * delete nothing. A reader never takes a mix of the two for a lease: no mix
 * but the two endings is JSON, and it reads again. Generation numbers only
 * grow. A lapsed or released lease is taken over the same way as a free one:
 * by creating top+1.
 *
 * The highest generation present never decreases: a winner deletes only
 * generations below its own, except generation 1, which stays (see
 * claimFirst), and a claimer that lost only its own (below a newer one).
 * What follows from it lets the holder skip most listings; it remembers the
 * generation it wrote last in each directory ({@link Mine}):
 * - A listing whose highest entry is that generation shows that very file (a
 *   number freed by a cleanup and created again is always below a newer
 *   one): its content is what this process wrote and need not be read back.
 * - A takeover ends by deleting the holder's generation (the taker's cleanup;
 *   only then does the taker act as the holder), or, for generation 1, which
 *   stays, by moving its change time. So while the holder's own file is
 *   still there unchanged (inode and change time: one stat), no takeover
 *   completed:
 *   its check before each write costs a stat, not a listing and a read. A
 *   taker that died between its link and its cleanup never acts; the
 *   holder's next renewal lists the directory and finds its claim.
 * - Its release needs no look around either: its own file, still the one it
 *   created (inode and change time), is marked in place (see releaseOwn);
 *   when taken over, the file is gone or another, and nothing is written.
 * - After releasing, the next claim of this process creates the number above
 *   the generation it released at once: claimGeneration's check finds any
 *   newer one.
 * A claim in a directory this process just created (empty) needs no listing,
 * before its link or after (see claimFirst), and one in a directory it wrote
 * in no mkdir.
 *
 * The file calls are synchronous: each touches a directory of one or two
 * files of a hundred bytes, which the kernel answers from its caches in
 * microseconds, less than a round trip through libuv's thread pool (four
 * threads, shared with every other file call of the process). A dialog
 * message takes and releases two leases (its run's and its chat's): async,
 * those were some twenty thread-pool hops queued behind each other.
 */
import { randomUUID } from 'node:crypto';
import {
  closeSync,
  fstatSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { BoundedMap } from '../util/bounded-map.js';
import type { Lease } from './types.js';

interface LeaseFile extends Lease {
  released?: boolean;
}

const GEN = /^(\d{12})\.json$/;
const genName = (g: number) => `${String(g).padStart(12, '0')}.json`;

/**
 * A lease directory whose mtime is at least this much older than the clock is
 * "quiet": any later change (every change creates, links, renames or unlinks
 * an entry) gives it a newer mtime, even with the kernel's coarse timestamps.
 */
const QUIET_MS = 100;

export interface FileLeases {
  acquire(name: string, lease: Lease): Promise<Lease | undefined>;
  renew(name: string, token: string, expiresAt: number): Promise<boolean>;
  release(name: string, token: string): Promise<void>;
  get(name: string): Promise<Lease | undefined>;
}

type Top = { gen: number; lease?: LeaseFile } | undefined;

/** A generation file as created: its inode and change time (a file of the same name created later differs in either). */
type FileId = { ino: bigint; ctime: bigint };

/** What this process wrote last in a lease directory (see the file comment); `file` is known for a claim it holds. */
type Own = { gen: number; lease: LeaseFile; file?: FileId };

/**
 * The generation this process last wrote in each lease directory, for the
 * directories used most recently: bounded (a daemon claims a new run lease
 * per message); a directory not in it is listed and read, as before. A
 * claim is used within its message (claimed, checked, released within
 * milliseconds, a few messages at a time), so a few hundred entries serve
 * them; more would hold about 600 bytes each for chats that wrote long ago.
 */
type Mine = BoundedMap<string, Own>;

/** Lease directories whose last generation this process remembers (see {@link Mine}). */
const MINE_MAX = 256;

export function fileLeases(dir: string): FileLeases {
  // Names are free text (`run:abc`, `flow:broadcast#0`): encoded into one safe directory name,
  // made once per name in use (a run's is asked for before each of its writing calls).
  const dirs = new BoundedMap<string, string>(1024);
  const leaseDir = (name: string) => {
    let d = dirs.get(name);
    if (d === undefined) dirs.set(name, (d = join(dir, encodeURIComponent(name).replace(/\./g, '%2E'))));
    return d;
  };
  const seen: SeenCache = new Map();
  const mine: Mine = new BoundedMap(MINE_MAX);
  return {
    // async: a failed file call is a rejection, as callers of a store expect.
    acquire: async (name, lease) => acquire(mine, leaseDir(name), lease),
    async renew(name, token, expiresAt) {
      const d = leaseDir(name);
      const cur = top(mine, d);
      if (!cur?.lease || cur.lease.token !== token || cur.lease.released) return false;
      rewrite(mine, d, cur.gen, { ...cur.lease, expiresAt });
      return true;
    },
    async release(name, token) {
      const d = leaseDir(name);
      // A released lease (a finished run's) is seldom asked about again: its answer is not kept.
      seen.delete(d);
      const own = mine.get(d);
      if (own?.file && own.lease.token === token) return releaseOwn(mine, d, own);
      const cur = top(mine, d);
      if (!cur?.lease || cur.lease.token !== token || cur.lease.released) return;
      // Fails only when the lease lapsed and someone claimed it: then it is not ours to release.
      claimGeneration(mine, d, cur.gen + 1, { ...cur.lease, released: true, expiresAt: 0 });
    },
    async get(name) {
      const d = leaseDir(name);
      const own = mine.get(d);
      const cur = own && stillOurs(mine, d, own) ? own : current(seen, mine, d);
      if (!cur?.lease || cur.lease.released) return undefined;
      const { released: _r, ...holder } = cur.lease;
      return holder;
    },
  };
}

/** Generation numbers present in lease directory `d`, highest first. */
function generations(d: string): number[] {
  let names: string[];
  try {
    names = readdirSync(d);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  return names
    .flatMap((n) => {
      const m = GEN.exec(n);
      return m ? [Number(m[1])] : [];
    })
    .sort((a, b) => b - a);
}

function readGen(d: string, g: number): LeaseFile | undefined {
  for (let tries = 0; ; tries++) {
    let text: string;
    try {
      text = readFileSync(join(d, genName(g)), 'utf8');
    } catch (e) {
      // Deleted by a newer holder's cleanup between listing and reading.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    try {
      return JSON.parse(text) as LeaseFile;
    } catch (e) {
      // Read while its holder marked it released (six bytes written in place): read again.
      if (tries < 20) continue;
      throw e;
    }
  }
}

/** The current generation and its content: read, unless it is the one this process wrote last (see {@link Mine}). */
function top(mine: Mine, d: string): Top {
  for (let tries = 0; tries < 20; tries++) {
    const gens = generations(d);
    const own = mine.get(d);
    if (gens.length === 0) {
      mine.delete(d);
      return undefined;
    }
    if (own?.gen === gens[0]) return own;
    // Someone else wrote since: what this process wrote is history.
    if (own) mine.delete(d);
    const lease = readGen(d, gens[0]!);
    if (lease) return { gen: gens[0]!, lease };
  }
  return undefined;
}

/** The inode and change time of `file`; undefined when it does not exist. */
function fileId(file: string): FileId | undefined {
  const st = statSync(file, { bigint: true, throwIfNoEntry: false });
  return st && { ino: st.ino, ctime: st.ctimeNs };
}

/** Whether the claim this process holds in `d` is still there (see the file comment); forgets it when not. */
function stillOurs(mine: Mine, d: string, own: Own): boolean {
  if (!own.file) return false;
  const now = fileId(join(d, genName(own.gen)));
  if (now?.ino === own.file.ino && now.ctime === own.file.ctime) return true;
  mine.delete(d);
  return false;
}

/**
 * `get` is called before every writing call of a run (LeaseOwner.check), so
 * its answer is kept per directory with the directory's mtime and ctime: a
 * later `get` costs one stat(2) instead of a listing and a read, as long as
 * the directory did not change. Only a listing read while the directory was
 * quiet (see QUIET_MS) is kept, so a change in the same clock tick as the
 * one before it cannot go unseen.
 */
type SeenCache = Map<string, { mtime: bigint; ctime: bigint; file: bigint | undefined; cur: Top }>;

function current(seen: SeenCache, mine: Mine, d: string): Top {
  let st;
  try {
    st = statSync(d, { bigint: true });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      seen.delete(d);
      return undefined;
    }
    throw e;
  }
  const hit = seen.get(d);
  // A release writes the top generation in place (see releaseOwn): the file's change time is compared too.
  if (hit && hit.mtime === st.mtimeNs && hit.ctime === st.ctimeNs && changedAt(d, hit.cur) === hit.file) return hit.cur;
  const cur = top(mine, d);
  const file = changedAt(d, cur);
  const quietSince = BigInt(Date.now() - QUIET_MS) * 1_000_000n;
  if (quietSince > st.mtimeNs && (file === undefined || quietSince > file))
    seen.set(d, { mtime: st.mtimeNs, ctime: st.ctimeNs, file, cur });
  else seen.delete(d);
  return cur;
}

/** The change time of the generation file of `cur`; undefined when there is none. */
function changedAt(d: string, cur: Top): bigint | undefined {
  return cur && statSync(join(d, genName(cur.gen)), { bigint: true, throwIfNoEntry: false })?.ctimeNs;
}

/** The text of a generation file: `released` last, so a release rewrites its end in place (see releaseOwn). */
function serialize(content: LeaseFile): string {
  const { released, ...lease } = content;
  return JSON.stringify({ ...lease, released: released === true });
}

/** The end of a generation file as its holder released it: as long as the `false}` it replaces. */
const RELEASED_END = Buffer.from('true }');

/** Writes a temp file holding `content` beside the generations of `d`; returns its path. */
function writeTemp(d: string, content: LeaseFile): string {
  const tmp = join(d, `.tmp-${randomUUID()}`);
  const fd = openSync(tmp, 'wx');
  try {
    writeSync(fd, serialize(content));
  } finally {
    closeSync(fd);
  }
  return tmp;
}

/** Rewrites generation `g`, which this process holds (only its holder ever rewrites a generation). */
function rewrite(mine: Mine, d: string, g: number, content: LeaseFile): void {
  const file = join(d, genName(g));
  renameSync(writeTemp(d, content), file);
  remember(mine, d, { gen: g, lease: content, file: fileId(file) });
}

/** Takes lease directory `d` (see the file comment); undefined when taken, else the live holder. */
function acquire(mine: Mine, d: string, lease: Lease): Lease | undefined {
  const own = mine.get(d);
  // Released here last: the next number at once (a newer claim makes it fail, then the directory is looked at).
  if (own?.lease.released && claimGeneration(mine, d, own.gen + 1, lease)) return undefined;
  // A directory this process wrote in exists (none is ever removed); one it just created is empty: claim generation 1 at once.
  if (!own && mkdirSync(d, { recursive: true }) !== undefined && claimFirst(mine, d, lease)) return undefined;
  for (;;) {
    const cur = top(mine, d);
    if (cur?.lease && cur.lease.token === lease.token) {
      rewrite(mine, d, cur.gen, { ...lease });
      return undefined;
    }
    if (cur?.lease && !cur.lease.released && cur.lease.expiresAt > Date.now()) {
      const { released: _r, ...holder } = cur.lease;
      return holder;
    }
    // No generation at all: the directory may be gone (removed by hand since this process wrote in it).
    if (!cur) mkdirSync(d, { recursive: true });
    if (claimGeneration(mine, d, (cur?.gen ?? 0) + 1, lease)) return undefined;
  }
}

/** Creates generation `gen` atomically and keeps it if it is the newest; false: look again. */
function claimGeneration(mine: Mine, d: string, gen: number, lease: LeaseFile): boolean {
  const file = join(d, genName(gen));
  if (!linkTemp(d, file, lease)) return false; // someone else claimed this generation first
  const gens = generations(d);
  if (gens[0]! > gen) {
    // Our listing was stale: a newer claim exists. Ours never counted.
    unlinkQuiet(file);
    if (mine.get(d)?.gen !== gens[0]) mine.delete(d);
    return false;
  }
  remember(mine, d, { gen, lease, ...(lease.released ? {} : { file: fileId(file) }) });
  // Generation 1 stays (see claimFirst), its change time moved instead: its holder's check compares
  // inode and change time (stillOurs), and must see the takeover as it sees a deleted generation.
  for (const g of gens) if (g < gen) (g > 1 ? unlinkQuiet : touchQuiet)(join(d, genName(g)));
  return true;
}

/**
 * The first claim of a lease directory this process has just created:
 * generation 1, kept for good by every cleanup, so linking it proves that
 * nobody claimed in the directory before (any later generation was created
 * after it, and it is never deleted): no listing needed after the link. A
 * run's lease is claimed this way, once.
 */
function claimFirst(mine: Mine, d: string, lease: LeaseFile): boolean {
  const file = join(d, genName(1));
  if (!linkTemp(d, file, lease)) return false;
  remember(mine, d, { gen: 1, lease, file: fileId(file) });
  return true;
}

/** Links a temp file holding `content` to `file`; false when `file` exists. */
function linkTemp(d: string, file: string, content: LeaseFile): boolean {
  const tmp = writeTemp(d, content);
  try {
    linkSync(tmp, file);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    return false;
  } finally {
    unlinkQuiet(tmp);
  }
}

/**
 * Releases the claim this process holds in `d` by rewriting the end of its
 * generation file in place, `"released":false}` to `"released":true }`: no
 * file created, linked or deleted, and the top generation stays the top. A
 * reader that reads it during the write finds no JSON and reads again;
 * whatever mix of the two endings it may see, only the two endings parse.
 * Not when the file is no longer the one this process created (taken over).
 */
function releaseOwn(mine: Mine, d: string, own: Own): void {
  mine.delete(d);
  let fd: number;
  try {
    fd = openSync(join(d, genName(own.gen)), 'r+');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return; // taken over, and cleaned up
    throw e;
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    if (st.ino !== own.file?.ino || st.ctimeNs !== own.file.ctime) return;
    writeSync(fd, RELEASED_END, 0, RELEASED_END.length, Number(st.size) - RELEASED_END.length);
  } finally {
    closeSync(fd);
  }
  remember(mine, d, { gen: own.gen, lease: { ...own.lease, released: true, expiresAt: 0 } });
}

/** Notes what this process wrote last in `d`, as the most recently used entry. */
function remember(mine: Mine, d: string, own: Own): void {
  mine.delete(d);
  mine.set(d, own);
}

/** Moves the change time of a file that may be gone (a racing cleanup); its content stays. */
function touchQuiet(file: string): void {
  try {
    const now = new Date();
    utimesSync(file, now, now);
  } catch {
    // gone: nothing left to tell apart
  }
}

/** Unlinks a file someone else may have unlinked first (a racing cleanup). */
function unlinkQuiet(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // gone already, or left for the next holder's cleanup
  }
}
