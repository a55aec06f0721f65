import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/store/index.js';
import type { RunRecord } from '../../src/store/types.js';
import { action, flow, registryWith, step, testEngine } from './helpers.js';

function orphan(id: string, pid: number): RunRecord {
  return {
    id,
    flow: 'test-flow',
    status: 'running',
    trigger: 'manual',
    dryRun: false,
    startedAt: 1,
    updatedAt: 1,
    itemsDone: 0,
    itemsFailed: 0,
    resumes: 0,
    owner: { pid, host: hostname() },
  };
}

describe('run ownership across processes', () => {
  it('resumes a run whose owner died, never one a live process still executes', async () => {
    const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    const dead = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    await new Promise((r) => dead.once('exit', r));
    try {
      const store = createMemoryStore();
      await store.createRun(orphan('run-live-owner', live.pid!));
      await store.createRun(orphan('run-dead-owner', dead.pid!));
      await store.saveInputs('run-live-owner', {});
      await store.saveInputs('run-dead-owner', {});
      const ran: string[] = [];
      const registry = registryWith(action('noop', async (ctx) => void ran.push(ctx.run.id)));
      const { engine } = testEngine(registry, { store });
      const handles = await engine.resumeUnfinished([flow([step({ id: 'a', uses: 'noop' })])]);
      expect(handles.map((h) => h.runId)).toEqual(['run-dead-owner']);
      await Promise.all(handles.map((h) => h.done));
      expect(ran).toEqual(['run-dead-owner']);
      expect((await store.getRun('run-dead-owner'))!.owner!.pid).toBe(process.pid);
      expect((await store.getRun('run-live-owner'))!.status).toBe('running');
    } finally {
      live.kill('SIGKILL');
    }
  });
});
