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

describe('files an action reads are declared in its input schema', () => {
  it("a plugin's with: field declared with inputFile() has its literal path checked by validate, with its position", async () => {
    const { z } = await import('zod');
    const { defineAction, inputFile } = await import('../../src/engine/action.js');
    const registry = builtinRegistry();
    registry.register(
      defineAction({
        name: 'leads.load',
        description: 'reads a sheet',
        input: z.strictObject({ sheet: inputFile(z.string(), { extensions: ['.csv'] }), note: z.string().optional() }),
        output: { description: 'rows' },
        run: async () => [],
      }),
      'plugin',
    );
    const flow = (w: string) => `name: l\nsteps:\n  - id: s\n    uses: leads.load\n    with: ${w}\n`;
    const dir = tempProject({
      'flows/missing.yaml': flow('{ sheet: sheets/leads.csv, note: not/a/file.csv }'),
      'flows/present.yaml': flow('{ sheet: sheets/there.csv }').replace('name: l', 'name: p'),
      'sheets/there.csv': 'phone\n1\n',
    });
    const results = validateFlowFiles([path.join(dir, 'flows')], { registry, baseDir: dir, cwd: dir });
    const by = Object.fromEntries(results.map((r) => [path.basename(r.file), r.errors.map((e) => e.message)]));
    expect(by['missing.yaml']).toEqual([
      "flows/missing.yaml:5:20 steps[0].with.sheet: sheets/leads.csv: file not found (action 'leads.load' reads it; paths are relative to the project folder)",
    ]);
    expect(by['present.yaml']).toEqual([]);
  });
});
