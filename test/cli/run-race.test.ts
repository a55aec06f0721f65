/**
 * Two `msgflow run` processes of one writing flow on one store: exactly
 * one runs it, the other says so and exits 2; no item is ever sent twice.
 * Ctrl-C exits 130. Spawned: the processes are the subject. The
 * claim race itself (two store clients claiming at the same instant, 20
 * trials per store driver) is test/engine-run/ownership.test.ts; here the
 * winner holds its run until the loser has answered, so every trial is an
 * overlap without a timing guess.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { cli } from '../support/cli.js';
import { project, remoteConfig } from '../support/project.js';
import { spawnCli } from '../support/spawn.js';
import { waitFor } from '../support/wait.js';

const CONFIG = remoteConfig('race-test-token-31aa', 'plugins: [./effect.js]\n');

// The project folder has no node_modules: the plugin imports msgflow's zod by URL.
const ZOD = import.meta.resolve('zod');

// A writing action whose side effect (one line per item) is what must happen
// once. EFFECT_HOLD: the first item waits for the file `release` (the test
// writes it once the other process has answered); EFFECT_DELAY_MS: each item
// takes that long, so a signal lands mid-item.
const PLUGIN = `import { appendFileSync, existsSync } from 'node:fs';
import { z } from '${ZOD}';
export const actions = [{
  name: 'effect.send',
  description: 'appends the item to effects.txt',
  input: z.object({ n: z.number() }),
  output: { description: 'the item' },
  writes: true,
  async run(ctx, input) {
    appendFileSync(ctx.resolvePath('effects.txt'), input.n + '\\n');
    if (process.env.EFFECT_HOLD) while (!existsSync(ctx.resolvePath('release'))) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, Number(process.env.EFFECT_DELAY_MS ?? 0)));
    return input.n;
  },
}];
`;

const FLOW = `name: bcast
steps:
  - id: send
    uses: effect.send
    forEach: \${{ [1, 2, 3, 4, 5, 6, 7, 8] }}
    with: { n: "\${{ item }}" }
`;

function effects(dir: string): number[] {
  const f = join(dir, 'effects.txt');
  return existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter(Boolean).map(Number) : [];
}

const TRIALS = 3;

// The tests share nothing (a project folder and processes each): they run side by side.
describe.concurrent('msgflow run (processes)', () => {
  it(`two msgflow run of one broadcast started together: one runs, the other exits 2 naming it; 0 duplicates over ${TRIALS} trials`, async ({
    expect,
  }) => {
    // The trials share nothing (a project folder each): they run side by side.
    const trial = async (): Promise<string> => {
      const dir = project({ 'config.yaml': CONFIG, 'effect.js': PLUGIN, 'flows/bcast.yaml': FLOW });
      const procs = [spawnCli(['run', 'bcast'], dir, { EFFECT_HOLD: '1' }), spawnCli(['run', 'bcast'], dir, { EFFECT_HOLD: '1' })];
      // The winner holds item 1 until released: the loser meets a live run, whenever it starts.
      const first = await Promise.race(procs.map((p) => p.exited.then(() => p)));
      writeFileSync(join(dir, 'release'), '');
      const other = procs.find((p) => p !== first)!;
      const [codeFirst, codeOther] = [await first.exited, await other.exited];
      const sent = effects(dir);
      return JSON.stringify({
        loser: codeFirst,
        winner: codeOther,
        named: /is live in pid \d+ on host/.test(first.stderr()),
        unique: new Set(sent).size,
        duplicates: sent.length - new Set(sent).size,
      });
    };
    const outcomes = await Promise.all(Array.from({ length: TRIALS }, trial));
    expect(outcomes).toEqual(Array(TRIALS).fill(JSON.stringify({ loser: 2, winner: 0, named: true, unique: 8, duplicates: 0 })));
  });

  it('Ctrl-C (SIGINT) stops the run gracefully and exits 130; the run is interrupted and resumes', async ({ expect }) => {
    const dir = project({ 'config.yaml': CONFIG, 'effect.js': PLUGIN, 'flows/bcast.yaml': FLOW });
    const p = spawnCli(['run', 'bcast'], dir, { EFFECT_DELAY_MS: '300' });
    await waitFor('the first item', () => effects(dir).length > 0, { context: p.output });
    p.child.kill('SIGINT');
    expect(await p.exited).toBe(130);
    expect(p.output()).toMatch(/interrupted/);
    const resumed = await cli(['run', 'bcast'], dir);
    expect(resumed.code).toBe(0);
    expect(resumed.stderr).toContain('resuming run');
    const sent = effects(dir);
    expect(new Set(sent).size).toBe(8);
    expect(sent.length).toBe(8);
  });
});
