/**
 * What a retention pass costs: N finished runs as a dialog bot leaves them
 * (record, inputs, a step, an item, a journal line, run state: what one
 * message's run writes), half of them older than the retention, and as many
 * runs that must stay; then one pass of pruneRuns (engine/run/retention.ts),
 * then a second pass with nothing left to delete (what the daemon pays every
 * hour once it has caught up).
 *
 *   npm run bench:retention -- [--runs 20000] [--drivers lowdb,redis] [--rounds 3]
 *
 * The peer, in the same round over the same data shape: the backend deleting
 * the same runs with no engine at all (lowdb: `rm -rf` of their directories,
 * one call each; Redis: DEL of their keys in one MULTI per run), so the
 * ratio is what pruneRuns adds (listing, the refusal check, the index line,
 * the workers' namespace). Medians of the rounds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { pruneRuns } from '../src/engine/run/retention.js';
import { createLowdbStore } from '../src/store/lowdb-store.js';
import { createRedisStore } from '../src/store/redis-store.js';
import type { EngineStore } from '../src/store/types.js';
import { deleteKeys } from '../test/support/redis.js';
import { storeRun } from '../test/support/runs.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '20000' },
    drivers: { type: 'string', default: 'lowdb,redis' },
    rounds: { type: 'string', default: '3' },
  },
});
const N = Number(values.runs);
const ROUNDS = Number(values.rounds);
const DAY = 86_400_000;
const NOW = Date.parse('2026-11-28T12:00:00Z');
const RETENTION = 30 * DAY;
const REDIS_URL = process.env.MSGFLOW_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** N runs, every other one ended 40 days ago (the rest 2 days ago), as one message's run leaves them. */
async function seed(store: EngineStore): Promise<string[]> {
  const old: string[] = [];
  const one = async (i: number) => {
    const id = `r${i}`;
    if (i % 2 === 0) old.push(id);
    await storeRun(store, id, { flow: 'reply', finishedAt: NOW - (i % 2 === 0 ? 40 : 2) * DAY });
  };
  for (let i = 0; i < N; i += 100) await Promise.all(Array.from({ length: Math.min(100, N - i) }, (_, k) => one(i + k)));
  return old;
}

interface Round {
  pruneMs: number;
  idleMs: number;
  peerMs: number;
  deleted: number;
}

async function lowdbRound(): Promise<Round> {
  const measure = async (peer: boolean) => {
    const dir = mkdtempSync(join(tmpdir(), 'msgflow-bench-retention-'));
    try {
      const store = createLowdbStore({ dir });
      const old = await seed(store);
      await store.close();
      const fresh = createLowdbStore({ dir });
      await fresh.listRuns({ limit: 1 }); // the index read at open, as the daemon has it
      const t0 = performance.now();
      let deleted = 0;
      if (peer) {
        for (const id of old) await rm(join(dir, 'runs', id), { recursive: true, force: true });
        deleted = old.length;
      } else deleted = (await pruneRuns(fresh, { olderThanMs: RETENTION, now: NOW })).deleted;
      const ms = performance.now() - t0;
      const t1 = performance.now();
      if (!peer) await pruneRuns(fresh, { olderThanMs: RETENTION, now: NOW });
      const idleMs = performance.now() - t1;
      await fresh.close();
      return { ms, idleMs, deleted };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const ours = await measure(false);
  const peer = await measure(true);
  return { pruneMs: ours.ms, idleMs: ours.idleMs, peerMs: peer.ms, deleted: ours.deleted };
}

async function redisRound(): Promise<Round> {
  const direct = new Redis(REDIS_URL);
  const measure = async (peer: boolean) => {
    const prefix = `msgflow-bench-retention-${process.pid}-${peer ? 'peer' : 'ours'}:`;
    const store = createRedisStore({ url: REDIS_URL, prefix });
    try {
      const old = await seed(store);
      const t0 = performance.now();
      let deleted = 0;
      if (peer) {
        for (const id of old) {
          const k = (s: string) => `${prefix}run:${id}${s}`;
          await direct
            .multi()
            .zrem(`${prefix}runs`, id)
            .del(
              k(''),
              k(':inputs'),
              k(':steps'),
              k(':step-order'),
              k(':items'),
              k(':waits'),
              k(':journals'),
              k(':journal:run-log'),
              `${prefix}kv:run:${id}`,
            )
            .exec();
        }
        deleted = old.length;
      } else deleted = (await pruneRuns(store, { olderThanMs: RETENTION, now: NOW })).deleted;
      const ms = performance.now() - t0;
      const t1 = performance.now();
      if (!peer) await pruneRuns(store, { olderThanMs: RETENTION, now: NOW });
      return { ms, idleMs: performance.now() - t1, deleted };
    } finally {
      await store.close();
      await deleteKeys(prefix, REDIS_URL);
    }
  };
  try {
    const ours = await measure(false);
    const peer = await measure(true);
    return { pruneMs: ours.ms, idleMs: ours.idleMs, peerMs: peer.ms, deleted: ours.deleted };
  } finally {
    direct.disconnect();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

console.log(`${N} finished runs (half ended 40 days ago, half 2 days ago), retention 30d; ${ROUNDS} round(s); medians`);
console.log(
  '| driver | runs deleted | pruneRuns | per run | the backend alone (peer) | per run | ratio | second pass (nothing to delete) |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const driver of values.drivers.split(',')) {
  const rounds: Round[] = [];
  for (let r = 0; r < ROUNDS; r++) rounds.push(driver === 'redis' ? await redisRound() : await lowdbRound());
  const prune = median(rounds.map((x) => x.pruneMs));
  const peer = median(rounds.map((x) => x.peerMs));
  const idle = median(rounds.map((x) => x.idleMs));
  const d = rounds[0]!.deleted;
  const us = (ms: number) => `${Math.round((ms * 1000) / d)} µs`;
  console.log(
    `| ${driver} | ${d} | ${Math.round(prune)} ms | ${us(prune)} | ${Math.round(peer)} ms | ${us(peer)} | ${(prune / peer).toFixed(2)}x | ${idle.toFixed(1)} ms |`,
  );
  console.log(
    `  rounds: prune ${rounds.map((x) => Math.round(x.pruneMs)).join(', ')} ms; peer ${rounds.map((x) => Math.round(x.peerMs)).join(', ')} ms`,
  );
}
