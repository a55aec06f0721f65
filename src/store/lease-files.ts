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
 * Renewing rewrites the holder's own file through temp + rename; releasing
 * creates the next generation, marked released, the way a claim does (a
 * rename over an existing file costs ext4 a write-out of it first, 1.3-1.8
 * ms measured, and a dialog message releases two leases; a link to a new
 * name does not). Generation numbers only grow. A lapsed lease is taken over
 * the same way: by creating top+1.
 *
 * The file calls are synchronous: each touches a directory of one or two
 * files of a hundred bytes, which the kernel answers from its caches in
 * microseconds, less than a round trip through libuv's thread pool (four
 * threads, shared with every other file call of the process). A dialog
 * message takes and releases two leases (its run's and its chat's): async,
 * those were some twenty thread-pool hops queued behind each other.
 */
import { randomUUID } from 'node:crypto';
import { linkSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
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
  return {
    // async: a failed file call is a rejection, as callers of a store expect.
    acquire: async (name, lease) => acquire(leaseDir(name), lease),
    async renew(name, token, expiresAt) {
      const d = leaseDir(name);
      const cur = top(d);
      if (!cur?.lease || cur.lease.token !== token || cur.lease.released) return false;
      rewrite(d, cur.gen, { ...cur.lease, expiresAt });
      return true;
    },
    async release(name, token) {
      const d = leaseDir(name);
      // A released lease (a finished run's) is seldom asked about again: its answer is not kept.
      seen.delete(d);
      const cur = top(d);
      if (!cur?.lease || cur.lease.token !== token || cur.lease.released) return;
      // Fails only when the lease lapsed and someone claimed it: then it is not ours to release.
      claimGeneration(d, cur.gen + 1, { ...cur.lease, released: true, expiresAt: 0 });
    },
    async get(name) {
      const cur = current(seen, leaseDir(name));
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
  try {
    return JSON.parse(readFileSync(join(d, genName(g)), 'utf8')) as LeaseFile;
  } catch (e) {
    // Deleted by a newer holder's cleanup between listing and reading.
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** The current generation and its content. */
function top(d: string): Top {
  for (let tries = 0; tries < 20; tries++) {
    const gens = generations(d);
    if (gens.length === 0) return undefined;
    const lease = readGen(d, gens[0]!);
    if (lease) return { gen: gens[0]!, lease };
  }
  return undefined;
}

/**
 * `get` is called before every writing call of a run (LeaseOwner.check), so
 * its answer is kept per directory with the directory's mtime and ctime: a
 * later `get` costs one stat(2) instead of a listing and a read, as long as
 * the directory did not change. Only a listing read while the directory was
 * quiet (see QUIET_MS) is kept, so a change in the same clock tick as the
 * one before it cannot go unseen.
 */
type SeenCache = Map<string, { mtime: bigint; ctime: bigint; cur: Top }>;

function current(seen: SeenCache, d: string): Top {
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
  if (hit && hit.mtime === st.mtimeNs && hit.ctime === st.ctimeNs) return hit.cur;
  const quiet = BigInt(Date.now() - QUIET_MS) * 1_000_000n > st.mtimeNs;
  const cur = top(d);
  if (quiet) seen.set(d, { mtime: st.mtimeNs, ctime: st.ctimeNs, cur });
  else seen.delete(d);
  return cur;
}

function rewrite(d: string, g: number, content: LeaseFile): void {
  const tmp = join(d, `.tmp-${randomUUID()}`);
  writeFileSync(tmp, JSON.stringify(content));
  renameSync(tmp, join(d, genName(g)));
}

/** Takes lease directory `d` (see the file comment); undefined when taken, else the live holder. */
function acquire(d: string, lease: Lease): Lease | undefined {
  mkdirSync(d, { recursive: true });
  for (;;) {
    const cur = top(d);
    if (cur?.lease && cur.lease.token === lease.token) {
      rewrite(d, cur.gen, { ...lease });
      return undefined;
    }
    if (cur?.lease && !cur.lease.released && cur.lease.expiresAt > Date.now()) {
      const { released: _r, ...holder } = cur.lease;
      return holder;
    }
    if (claimGeneration(d, (cur?.gen ?? 0) + 1, lease)) return undefined;
  }
}

/** Creates generation `gen` atomically and keeps it if it is the newest; false: look again. */
function claimGeneration(d: string, gen: number, lease: LeaseFile): boolean {
  const tmp = join(d, `.tmp-${randomUUID()}`);
  writeFileSync(tmp, JSON.stringify(lease));
  try {
    linkSync(tmp, join(d, genName(gen)));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    return false; // someone else claimed this generation first
  } finally {
    unlinkQuiet(tmp);
  }
  const gens = generations(d);
  if (gens[0]! > gen) {
    // Our listing was stale: a newer claim exists. Ours never counted.
    unlinkQuiet(join(d, genName(gen)));
    return false;
  }
  for (const g of gens) if (g < gen) unlinkQuiet(join(d, genName(g)));
  return true;
}

/** Unlinks a file someone else may have unlinked first (a racing cleanup). */
function unlinkQuiet(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // gone already, or left for the next holder's cleanup
  }
}
