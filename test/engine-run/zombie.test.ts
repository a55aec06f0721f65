/**
 * A killed runner that is still a zombie counts as dead. Its pid still
 * answers kill(pid, 0), so the old check kept its run "live" until a later
 * process silently resumed it beside a fresh run. Now the run is resumed at
 * once, and exactly the items it had not recorded are done.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { procStat } from '../../src/engine/run/ownership.js';
import { isProcessAlive } from '../../src/util/process-alive.js';
import { createLowdbStore } from '../../src/store/lowdb-store.js';
import { action, engineModulesForChild, flow, registryWith, step, testEngine } from './helpers.js';
import { waitFor } from '../support/wait.js';

const fixture = fileURLToPath(new URL('./fixtures/zombie-owner.mjs', import.meta.url));
const kit = engineModulesForChild();
const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number) : []);

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'msgflow-zombie-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe.skipIf(process.platform !== 'linux')('zombie owner', () => {
  it('a killed owner that is still a zombie is dead: its run is resumed at once, 0 duplicates', async () => {
    const state = join(dir, 'state');
    const effects = join(dir, 'effects.txt');
    // sh runs the owner in the background ("$0" "$@": node and its arguments as given, no paths quoted into the script), then becomes sleep.
    const sh = spawn('sh', ['-c', '"$0" "$@" & exec sleep 30', process.execPath, ...kit.execArgv, fixture, kit.modules, state, effects], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    sh.stdout.on('data', (d) => (out += d));
    try {
      await waitFor('owner started', () => /owner \d+ run \S+/.test(out), 90_000);
      const [, pid, runId] = /owner (\d+) run (\S+)/.exec(out)!;
      await waitFor('owner is a zombie', () => procStat(Number(pid))?.state === 'Z', 10_000);
      // What the old check saw: the pid still "exists".
      expect(isProcessAlive(Number(pid))).toBe(true);

      const store = createLowdbStore({ dir: state });
      const seen: number[] = [];
      const effect = {
        ...action('effect', async (ctx) => {
          seen.push(ctx.run.item!.index);
          return ctx.run.item!.index;
        }),
        writes: true,
      };
      const f = flow([step({ id: 'each', uses: 'effect', forEach: [0, 1, 2, 3, 4, 5] })]);
      const { engine } = testEngine(registryWith(effect), { store });
      expect((await engine.listRuns()).find((r) => r.id === runId)?.status).toBe('interrupted');
      const handles = await engine.resumeUnfinished([f]);
      expect(handles.map((h) => h.runId)).toEqual([runId]);
      expect(await handles[0]!.done).toMatchObject({ status: 'succeeded', itemsDone: 6, crashes: 1 });
      expect(lines(effects)).toEqual([0, 1, 2]);
      expect(seen).toEqual([3, 4, 5]);
      await store.close();
    } finally {
      sh.kill('SIGKILL');
    }
  });
});
