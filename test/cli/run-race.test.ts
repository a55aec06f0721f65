/**
 * #9.1b two `msgflow run` processes of one writing flow, started together
 * on one store: exactly one runs it, the other says so and exits 2; no item
 * is ever sent twice. #8.13 Ctrl-C exits 130. Spawned: the processes are the subject.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ENTRY, msgflow, project } from './helpers.js';

const CONFIG = `instances:
  default:
    apiUrl: http://127.0.0.1:9
    idInstance: "1101000001"
    apiTokenInstance: race-test-token-31aa
plugins: [./effect.js]
`;

// The project folder has no node_modules: the plugin imports msgflow's zod by URL.
const ZOD = import.meta.resolve('zod');

// A writing action whose side effect (one line per item) is what must happen once.
const PLUGIN = `import { appendFileSync } from 'node:fs';
import { z } from '${ZOD}';
export const actions = [{
  name: 'effect.send',
  description: 'appends the item to effects.txt',
  input: z.object({ n: z.number() }),
  output: { description: 'the item' },
  writes: true,
  async run(ctx, input) {
    appendFileSync(ctx.resolvePath('effects.txt'), input.n + '\\n');
    await new Promise((r) => setTimeout(r, Number(process.env.EFFECT_DELAY_MS ?? 5)));
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

describe('msgflow run (processes)', () => {
  it('#9.1b two msgflow run of one broadcast started together: one runs, the other exits 2 naming it; 0 duplicates over 20 trials', async () => {
    let duplicates = 0;
    let wrongCodes = 0;
    for (let trial = 0; trial < 20; trial++) {
      const dir = project({ 'config.yaml': CONFIG, 'effect.js': PLUGIN, 'flows/bcast.yaml': FLOW });
      // 8 items × 300 ms: the two processes overlap even when one starts a little later.
      const env = { EFFECT_DELAY_MS: '300' };
      const [a, b] = await Promise.all([msgflow(['run', 'bcast'], dir, env), msgflow(['run', 'bcast'], dir, env)]);
      const codes = [a.code, b.code].sort();
      if (codes[0] !== 0 || codes[1] !== 2) wrongCodes++;
      const refused = [a, b].find((r) => r.code === 2);
      if (refused && !/is live in pid \d+ on host/.test(refused.stderr)) wrongCodes++;
      const sent = effects(dir);
      duplicates += sent.length - new Set(sent).size;
      if (new Set(sent).size !== 8) wrongCodes++;
    }
    expect({ duplicates, wrongCodes }).toEqual({ duplicates: 0, wrongCodes: 0 });
  }, 400_000);

  it('#8.13 Ctrl-C (SIGINT) stops the run gracefully and exits 130; the run is interrupted and resumes', async () => {
    const dir = project({ 'config.yaml': CONFIG, 'effect.js': PLUGIN, 'flows/bcast.yaml': FLOW });
    const child = spawn(process.execPath, [...ENTRY, 'run', 'bcast'], {
      cwd: dir,
      env: { ...process.env, EFFECT_DELAY_MS: '400' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const t0 = Date.now();
    while (effects(dir).length === 0 && Date.now() - t0 < 30_000) await new Promise((r) => setTimeout(r, 50));
    child.kill('SIGINT');
    const code = child.exitCode ?? (await new Promise<number | null>((r) => child.once('exit', (c) => r(c))));
    expect(code).toBe(130);
    expect(out).toMatch(/interrupted/);
    const resumed = await msgflow(['run', 'bcast'], dir);
    expect(resumed.code).toBe(0);
    expect(resumed.stderr).toContain('resuming run');
    const sent = effects(dir);
    expect(new Set(sent).size).toBe(8);
    expect(sent.length).toBe(8);
  }, 120_000);
});
