/**
 * A flow test never writes into the project: every path an action resolves
 * (ctx.resolvePath) lies in the case's sandbox, a copy-on-write view of the
 * project. Reads see the project's files; writes stay in the sandbox.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';
import { LOCAL_CONFIG, project } from '../support/project.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Reads a counter file, adds one, writes it back: what a plugin keeping state in a data file does. */
const PLUGIN = `import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

const bump = (file) => {
  const n = JSON.parse(readFileSync(file, 'utf8')).n + 1;
  writeFileSync(file, JSON.stringify({ n }));
  return n;
};

export default {
  name: 'counter',
  actions: [
    {
      name: 'counter.bump',
      description: 'Adds one to counters kept in files.',
      input: z.strictObject({ outside: z.string() }),
      output: { description: '{ file, dir, outside }' },
      async run(ctx, input) {
        const file = bump(ctx.resolvePath('data/counter.json'));
        const dir = bump(path.join(ctx.resolvePath('data/nested'), 'deep.json'));
        const outside = bump(ctx.resolvePath(input.outside));
        writeFileSync(ctx.resolvePath('data/created.json'), '{}');
        return { file, dir, outside };
      },
    },
  ],
};
`;

/** Every file under `dir` (but node_modules) with its content's hash. */
function snapshot(dir: string, rel = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(path.join(dir, rel))) {
    if (name === 'node_modules') continue;
    const r = path.join(rel, name);
    if (statSync(path.join(dir, r)).isDirectory()) Object.assign(out, snapshot(dir, r));
    else
      out[r] = createHash('sha256')
        .update(readFileSync(path.join(dir, r)))
        .digest('hex');
  }
  return out;
}

describe('the sandbox of a flow test', () => {
  it('a plugin writing files through ctx.resolvePath never changes the project (or a path outside it); a second run gives the same result', async () => {
    const outside = mkdtempSync(path.join(tmpdir(), 'msgflow-outside-'));
    dirs.push(outside);
    writeFileSync(path.join(outside, 'o.json'), '{"n":10}');
    const dir = project(
      {
        'config.yaml': `${LOCAL_CONFIG}plugins: [./plugins/counter.js]\n`,
        'plugins/counter.js': PLUGIN,
        'data/counter.json': '{"n":0}',
        'data/nested/deep.json': '{"n":5}',
        'flows/bump.yaml': `name: bump\nsteps:\n  - id: bump\n    uses: counter.bump\n    with: { outside: ${JSON.stringify(path.join(outside, 'o.json'))} }\n`,
        'flows/bump.test.yaml': `cases:\n  - name: counts from the project's files\n    flow: bump\n    expect:\n      steps:\n        bump: { output: { file: 1, dir: 6, outside: 11 } }\n`,
      },
      'msgflow-sandbox-',
    );
    dirs.push(dir);
    const before = snapshot(dir);
    for (let i = 0; i < 2; i++) {
      const r = await cli(['test'], dir);
      expect(r.stdout + r.stderr).toMatch(/1 passed, 0 failed/);
      expect(snapshot(dir)).toEqual(before);
    }
    expect(readFileSync(path.join(outside, 'o.json'), 'utf8')).toBe('{"n":10}');
  }, 60_000);
});
