/**
 * The embedded driver's leases (src/store/lease-files.ts) across processes:
 * several processes claiming, checking and releasing the same few leases on
 * one directory never hold one at the same time, and a holder's check never
 * reports its own claim lost while nobody could take it over (no lease lapses
 * here: each is claimed for a minute and released within milliseconds).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { srcModuleForChild } from '../support/spawn.js';
import { createLowdbStore } from '../../src/store/lowdb-store.js';

const racerScript = fileURLToPath(new URL('./fixtures/lease-racer.mjs', import.meta.url));
const lowdb = srcModuleForChild('store/lowdb-store');

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'msgflow-lease-race-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

type Tally = { wins: number; overlaps: number; lostWhileHeld: number };

function race(names: number, rounds: number): Promise<Tally> {
  const proc = spawn(process.execPath, [...lowdb.execArgv, racerScript, lowdb.url, dir, String(names), String(rounds)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (err += d));
  return new Promise((resolve, reject) =>
    proc.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Tally) : reject(new Error(`racer exited ${code}: ${err}`)))),
  );
}

describe('file leases across processes', () => {
  it('four processes racing for three leases: never two holders at once, no holder told it lost a claim nobody took', async () => {
    const tallies = await Promise.all([race(3, 400), race(3, 400), race(3, 400), race(3, 400)]);
    const total = tallies.reduce((a, t) => ({
      wins: a.wins + t.wins,
      overlaps: a.overlaps + t.overlaps,
      lostWhileHeld: a.lostWhileHeld + t.lostWhileHeld,
    }));
    expect({ overlaps: total.overlaps, lostWhileHeld: total.lostWhileHeld }).toEqual({ overlaps: 0, lostWhileHeld: 0 });
    // Claims were contended and each was won many times over.
    expect(total.wins).toBeGreaterThan(300);
    // A released lease keeps its first generation and its last, released: none between, nor a temp file.
    for (const n of ['race-0', 'race-1', 'race-2'])
      expect((await readdir(join(dir, 'leases', n))).filter((f) => f !== '000000000001.json')).toHaveLength(1);
  }, 120_000);

  it('four processes racing for 300 new leases, each claimed in a directory one of them just created: one holder at a time', async () => {
    const tallies = await Promise.all([race(300, 300), race(300, 300), race(300, 300), race(300, 300)]);
    expect(tallies.map((t) => t.overlaps + t.lostWhileHeld)).toEqual([0, 0, 0, 0]);
    // Every lease was won at least once: 300 names, four processes each trying each one once.
    expect(tallies.reduce((a, t) => a + t.wins, 0)).toBeGreaterThanOrEqual(300);
  }, 120_000);

  it("a release is seen by another store's next look, even once that store keeps its answer for a quiet lease", async () => {
    const holder = createLowdbStore({ dir });
    const other = createLowdbStore({ dir });
    const now = Date.now();
    const lease = { token: 'held', pid: process.pid, host: 'h', acquiredAt: now, expiresAt: now + 60_000 };
    expect(await holder.acquireLease('quiet', lease)).toBeUndefined();
    // Past the quiet interval (100 ms), so the other store keeps what it read.
    await new Promise((r) => setTimeout(r, 150));
    expect((await other.getLease('quiet'))?.token).toBe('held');
    expect((await other.getLease('quiet'))?.token).toBe('held');
    await holder.releaseLease('quiet', 'held');
    expect(await other.getLease('quiet')).toBeUndefined();
    expect(await holder.getLease('quiet')).toBeUndefined();
    expect(await other.acquireLease('quiet', { ...lease, token: 'next' })).toBeUndefined();
    expect((await holder.getLease('quiet'))?.token).toBe('next');
    await Promise.all([holder.close(), other.close()]);
  });
});

/** A claim by `token`, lapsing `ttlMs` from now. */
const claim = (token: string, ttlMs: number) => ({
  token,
  pid: process.pid,
  host: 'test',
  expiresAt: Date.now() + ttlMs,
  acquiredAt: Date.now(),
});

describe('a lease taken over after it lapsed', () => {
  // Two stores on one directory are two processes: each remembers only what it wrote itself.
  for (const first of [true, false]) {
    it(`is no longer its first holder's, at that holder's next check (${first ? 'its first claim' : 'a later claim'})`, async () => {
      const a = createLowdbStore({ dir });
      const b = createLowdbStore({ dir });
      const name = 'run:taken-over';
      if (!first) {
        // A generation above the first: the lease was claimed and released before.
        expect(await b.acquireLease(name, claim('before', 60_000))).toBeUndefined();
        await b.releaseLease(name, 'before');
      }
      expect(await a.acquireLease(name, claim('a', 50))).toBeUndefined();
      expect((await a.getLease(name))?.token).toBe('a');
      await new Promise((r) => setTimeout(r, 80));
      expect(await b.acquireLease(name, claim('b', 60_000))).toBeUndefined();
      expect((await a.getLease(name))?.token).toBe('b');
      expect(await a.renewLease(name, 'a', Date.now() + 60_000)).toBe(false);
      await a.releaseLease(name, 'a');
      expect((await b.getLease(name))?.token).toBe('b');
      await a.close();
      await b.close();
    });
  }
});
