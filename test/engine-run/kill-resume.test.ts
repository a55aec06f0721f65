import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLowdbStore } from '../../src/store/lowdb-store.js';
import { readRecords } from '../../src/util/append-log.js';
import type { ItemResult } from '../../src/store/types.js';
import { waitFor } from '../support/wait.js';
import { engineModulesForChild } from './helpers.js';

const child = fileURLToPath(new URL('./fixtures/child.mjs', import.meta.url));
const kit = engineModulesForChild();
// Enough that the kill lands with items recorded, in flight and not started.
const N = 1000;

function startChild(args: string[]) {
  const proc = spawn(process.execPath, [...kit.execArgv, child, kit.modules, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    proc.on('exit', (code, signal) => r({ code, signal })),
  );
  return { proc, exited, out: () => out, err: () => err };
}

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number) : []);

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'msgflow-kill-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe('kill -9 mid-run, then resume in a new process', () => {
  it('resumes from the checkpoint without redoing any recorded item', async () => {
    const state = join(dir, 'state');
    const effects = join(dir, 'effects.txt');

    const first = startChild([state, effects, 'start', String(N)]);
    await waitFor('items under way', () => lines(effects).length >= 150 || first.proc.exitCode !== null, 90_000);
    first.proc.kill('SIGKILL');
    const { signal } = await first.exited;
    expect(signal, first.err()).toBe('SIGKILL');
    const runId = /run (\S+)/.exec(first.out())?.[1];
    expect(runId).toBeDefined();

    // What the crash left: the run still "running", a prefix of items recorded.
    const before = await createLowdbStore({ dir: state }).getRun(runId!);
    expect(before?.status).toBe('running');
    const log = await readRecords<ItemResult>(join(state, 'runs', runId!, 'items.jsonl'), 'skip-and-report');
    const recorded = new Set(log.records.map((r) => r.index));
    const effectsAtKill = lines(effects);
    expect(recorded.size).toBeGreaterThan(0);
    expect(recorded.size).toBeLessThan(N);
    // Every recorded item had its effect before being recorded.
    for (const i of recorded) expect(effectsAtKill).toContain(i);

    const second = startChild([state, effects, 'resume', String(N)]);
    const end = await second.exited;
    expect(end.code, second.err()).toBe(0);
    const { run, sum } = JSON.parse(second.out().trim().split('\n').pop()!);
    expect(run).toMatchObject({ id: runId, status: 'succeeded', itemsDone: N + 1, itemsFailed: 0, resumes: 1 });
    expect(sum).toEqual({ done: N, last: N - 1 });

    const counts = new Map<number, number>();
    for (const i of lines(effects)) counts.set(i, (counts.get(i) ?? 0) + 1);
    for (let i = 0; i < N; i++) expect(counts.get(i) ?? 0, `item ${i}`).toBeGreaterThanOrEqual(1);
    // No recorded item was redone...
    for (const i of recorded) expect(counts.get(i), `recorded item ${i} redone`).toBe(1);
    // ...and only items in flight at the kill (at most `concurrency`) ran twice.
    const twice = [...counts].filter(([, c]) => c > 1).map(([i]) => i);
    expect(twice.length).toBeLessThanOrEqual(4);
    for (const i of twice) expect(recorded.has(i)).toBe(false);
  }, 180_000);
});
