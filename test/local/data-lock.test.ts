/**
 * The data-dir lock is atomic (issue #9, item 6): two processes that find the
 * same stale lock (its owner was killed) never both become owners. Before the
 * fix (read holder → rm → create) this failed in about 1 of 100 trials.
 */
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireDataLock } from '../../src/runtime/data-lock.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const TAKER = path.join(here, 'fixtures', 'lock-taker.ts');
const TRIALS = 200;

function startTaker(): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = fork(TAKER, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.once('message', () => resolve(child));
    child.once('error', reject);
  });
}

function ask<T>(child: ChildProcess, msg: unknown): Promise<T> {
  return new Promise((resolve) => {
    child.once('message', (m) => resolve(m as T));
    child.send(msg as object);
  });
}

describe('data-dir lock', () => {
  let root: string;
  let takers: ChildProcess[] = [];
  let deadPid: number;
  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'msgflow-lock-'));
    takers = await Promise.all([startTaker(), startTaker()]);
    // A pid that surely belongs to no running process: a child that has exited.
    deadPid = spawnSync(process.execPath, ['-e', '0']).pid!;
  }, 30_000);
  afterAll(async () => {
    for (const t of takers) t.kill();
    await rm(root, { recursive: true, force: true });
  });

  it(`two processes taking over one stale lock: exactly one owner, ${TRIALS} times`, async () => {
    const owners: number[] = [];
    for (let i = 0; i < TRIALS; i++) {
      const dir = path.join(root, `d${i}`);
      mkdirSync(dir);
      await writeFile(path.join(dir, 'msgflow.lock'), JSON.stringify({ pid: deadPid, command: 'serve', nonce: 'dead' }));
      const at = Date.now() + 15;
      const answers = await Promise.all(takers.map((t) => ask<{ acquired: boolean }>(t, { go: dir, at })));
      owners.push(answers.filter((a) => a.acquired).length);
      if (i % 20 === 19) await Promise.all(takers.map((t) => ask(t, { release: true })));
    }
    expect(owners.filter((n) => n !== 1)).toEqual([]);
    // No temp or moved-away files are left behind.
    const left = (await readdir(path.join(root, 'd0'))).filter((n) => n !== 'msgflow.lock');
    expect(left).toEqual([]);
  }, 60_000);

  it('a live owner is reported, not taken over; release frees the directory', async () => {
    const dir = path.join(root, 'live');
    const first = acquireDataLock(dir, 'serve');
    expect(first.acquired).toBe(true);
    const second = await ask<{ acquired: boolean }>(takers[0]!, { go: dir, at: 0 });
    expect(second.acquired).toBe(false);
    if (first.acquired) first.lock.release();
    expect((await ask<{ acquired: boolean }>(takers[0]!, { go: dir, at: 0 })).acquired).toBe(true);
    await ask(takers[0]!, { release: true });
  });
});
