/**
 * A run that kills its process (a poison pill: out of memory, an abort)
 * is resumed at most until it crashed 3 times, then marked failed with the
 * reason; `msgflow start` then stays up instead of crash-looping on it.
 * Spawned: the crashing process is the subject.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLowdbStore } from '../../src/store/lowdb-store.js';
import { project, remoteConfig } from '../support/project.js';
import { runProcess, spawnCli } from '../support/spawn.js';

const ZOD = import.meta.resolve('zod');

const CONFIG = remoteConfig('crash-test-token-58ce', 'plugins: [./poison.js]\n');

// Dies like an out-of-memory abort: no handler runs, the run stays `running`.
const PLUGIN = `import { z } from '${ZOD}';
export const actions = [{
  name: 'poison.pill',
  description: 'kills its own process',
  input: z.object({}),
  output: { description: 'never returns' },
  async run() {
    process.kill(process.pid, 'SIGKILL');
    await new Promise(() => {});
  },
}];
`;

const FLOW = `name: poison
steps:
  - id: eat
    uses: poison.pill
`;

describe('crash loop', () => {
  it('a run that crashed its process 3 times is marked failed (crashed the process 3 times (last: …)) and msgflow start stays up', async () => {
    const dir = project({ 'config.yaml': CONFIG, 'poison.js': PLUGIN, 'flows/poison.yaml': FLOW });
    const first = await runProcess(['run', 'poison'], dir);
    expect(first.code).toBeNull(); // killed by SIGKILL: crash 1
    for (let crash = 2; crash <= 3; crash++) {
      const r = await runProcess(['start', '--no-ui'], dir);
      expect(r.code).toBeNull(); // resumed it and died again
    }
    const d = spawnCli(['start', '--no-ui'], dir);
    try {
      await d.waitForOutput(/is not resumed: crashed the process 3 times \(last: pid \d+ on host \S+ died during step eat at /);
      await d.waitForOutput(/started; /);
      d.child.kill('SIGTERM');
      expect(await d.exited).toBe(0); // it was up until stopped, not crash-looping
    } finally {
      await d.kill();
    }
    const store = createLowdbStore({ dir: join(dir, '.msgflow/state') });
    const [run] = await store.listRuns();
    expect(run).toMatchObject({ status: 'failed', crashes: 3, resumes: 2 });
    expect(run!.error?.message).toMatch(/^crashed the process 3 times \(last: /);
    await store.close();
  });
});
