import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { subflowRunId } from '../../src/engine/run/subflow.js';
import { createLowdbStore } from '../../src/store/lowdb-store.js';
import type { RunRecord } from '../../src/store/types.js';
import { waitFor } from '../support/wait.js';
import { engineModulesForChild } from './helpers.js';

const script = fileURLToPath(new URL('./fixtures/subflow-child.mjs', import.meta.url));
const kit = engineModulesForChild();
const N = 600;

function startProcess(args: string[]) {
  const proc = spawn(process.execPath, [...kit.execArgv, script, kit.modules, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    proc.on('exit', (code, signal) => r({ code, signal })),
  );
  return { proc, exited, out: () => out, err: () => err };
}

const effectLines = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' '))
    : [];

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'msgflow-subflow-kill-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe('a sub-flow killed mid-way', () => {
  it('is resumed once by the resumed parent, which re-attaches to it instead of starting a second child', async () => {
    const state = join(dir, 'state');
    const effects = join(dir, 'effects.txt');

    const first = startProcess([state, effects, 'start', String(N)]);
    await waitFor('child items under way', () => effectLines(effects).length >= 100 || first.proc.exitCode !== null, 90_000);
    first.proc.kill('SIGKILL');
    expect((await first.exited).signal, first.err()).toBe('SIGKILL');
    const parentId = /run (\S+)/.exec(first.out())?.[1];
    expect(parentId).toBeDefined();
    const childId = subflowRunId(parentId!, 'call', 'child');

    const store = createLowdbStore({ dir: state });
    const before = await store.getRun(childId);
    await store.close();
    expect(before).toMatchObject({ status: 'running', trigger: 'subflow', parent: { runId: parentId, flow: 'parent', step: 'call' } });
    const atKill = effectLines(effects);
    expect(atKill.length).toBeLessThan(N);

    const second = startProcess([state, effects, 'resume', String(N)]);
    const end = await second.exited;
    expect(end.code, second.err()).toBe(0);
    const { run, sum, children } = JSON.parse(second.out().trim().split('\n').pop()!) as {
      run: RunRecord;
      sum: unknown;
      children: RunRecord[];
    };
    expect(run).toMatchObject({ id: parentId, status: 'succeeded', resumes: 1 });
    // One child, the same run resumed once, its outputs the parent step's output.
    expect(children.map((c) => c.id)).toEqual([childId]);
    expect(children[0]).toMatchObject({ status: 'succeeded', resumes: 1, outputs: { done: N, last: N - 1 } });
    expect(sum).toEqual({ done: N, last: N - 1 });

    const all = effectLines(effects);
    expect(new Set(all.map(([id]) => id))).toEqual(new Set([childId]));
    const counts = new Map<string, number>();
    for (const [, i] of all) counts.set(i!, (counts.get(i!) ?? 0) + 1);
    expect(counts.size).toBe(N);
    // Only items in flight at the kill (at most the child's concurrency) ran twice.
    expect([...counts.values()].filter((c) => c > 1).length).toBeLessThanOrEqual(4);
  }, 180_000);
});
