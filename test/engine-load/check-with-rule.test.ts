import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { validateFlowFiles } from '../../src/engine/flow/load.js';
import { builtinRegistry, tempProject } from './helpers.js';

describe('cross-field rules of an action are checked when the flow is loaded', () => {
  it('checkAccount needs exactly one of phoneNumber/username (templates count as present)', () => {
    const flow = (w: string) => `name: c\nsteps:\n  - id: s\n    uses: checkAccount\n    with: ${w}\n`;
    const dir = tempProject({
      'flows/both.yaml': flow('{ phoneNumber: 79001112233, username: "@alice" }'),
      'flows/neither.yaml': flow('{ force: true }'),
      'flows/templated.yaml': flow('{ phoneNumber: "${{ 79001112233 }}" }'),
    });
    const results = validateFlowFiles([path.join(dir, 'flows')], { registry: builtinRegistry(), baseDir: dir });
    const by = Object.fromEntries(results.map((r) => [path.basename(r.file), r.errors.map((e) => e.message)]));
    expect(by['both.yaml']).toEqual([
      expect.stringMatching(
        /both\.yaml:5:11 steps\[0\]\.with: request should contain phoneNumber or username: exactly one of them \(action 'checkAccount'\)$/,
      ),
    ]);
    expect(by['neither.yaml']).toHaveLength(1);
    expect(by['templated.yaml']).toEqual([]);
  });
});
