import path from 'node:path';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineAction } from '../../src/engine/action.js';
import { evaluateTemplate } from '../../src/engine/expr/template.js';
import { loadFlowFile } from '../../src/engine/flow/load.js';
import { flow, registryWith, step, testEngine } from './helpers.js';
import { tempProject } from '../engine-load/helpers.js';

// An action that evaluates `caption` itself, once per recipient, as files.broadcast does.
const perRecipient = defineAction({
  name: 'test.perRecipient',
  description: 'renders caption per recipient',
  input: z.strictObject({ recipients: z.array(z.record(z.string(), z.unknown())), caption: z.string() }),
  output: { description: 'captions' },
  rawInputs: ['caption'],
  async run(ctx, input) {
    return input.recipients.map((r) =>
      evaluateTemplate(input.caption, {
        inputs: {},
        env: {},
        steps: {},
        item: r,
        run: { id: ctx.run.id, flow: ctx.run.flow, startedAt: 0 },
      }),
    );
  },
});

describe('rawInputs: with: keys an action evaluates itself', () => {
  it('the loader accepts `item` there without forEach, and still checks syntax and other keys', () => {
    const registry = registryWith(perRecipient);
    const ok = `name: f\nsteps:\n  - id: s\n    uses: test.perRecipient\n    with:\n      recipients: []\n      caption: "Hello \${{ item.firstName }}"\n`;
    const dir = tempProject({
      'flows/ok.yaml': ok,
      'flows/bad.yaml': ok.replace('item.firstName }}', 'item.firstName '),
      'flows/bad2.yaml': ok.replace('recipients: []', 'recipients: "${{ item }}"'),
    });
    const opts = { registry, baseDir: dir };
    expect(loadFlowFile(path.join(dir, 'flows/ok.yaml'), opts).steps[0]!.with.caption).toBe('Hello ${{ item.firstName }}');
    expect(() => loadFlowFile(path.join(dir, 'flows/bad.yaml'), opts)).toThrow(/steps\[0\]\.with\.caption/);
    expect(() => loadFlowFile(path.join(dir, 'flows/bad2.yaml'), opts)).toThrow(
      /steps\[0\]\.with\.recipients.*'item' is only set in a step with forEach/,
    );
  });

  it('`row` (the record a job evaluates a key for) is accepted only in those keys, with the place of a misuse', () => {
    const registry = registryWith(perRecipient);
    const ok = `name: f\nsteps:\n  - id: s\n    uses: test.perRecipient\n    with:\n      recipients: []\n      caption: "Hello \${{ row.firstName }}"\n`;
    const dir = tempProject({ 'flows/ok.yaml': ok, 'flows/bad.yaml': ok.replace('recipients: []', 'recipients: "${{ row }}"') });
    const opts = { registry, baseDir: dir };
    expect(loadFlowFile(path.join(dir, 'flows/ok.yaml'), opts).steps[0]!.with.caption).toBe('Hello ${{ row.firstName }}');
    expect(() => loadFlowFile(path.join(dir, 'flows/bad.yaml'), opts)).toThrow(
      /bad\.yaml:6:\d+ steps\[0\]\.with\.recipients.*'row' is only set in a job's per-recipient field/,
    );
  });

  it('the runner passes them unevaluated and evaluates the others', async () => {
    const { engine } = testEngine(registryWith(perRecipient));
    const f = flow(
      [
        step({
          id: 's',
          uses: 'test.perRecipient',
          with: { recipients: '${{ inputs.people }}', caption: 'Hello ${{ item.firstName }}' },
        }),
      ],
      { inputs: { people: { value: [{ firstName: 'Ann' }, { firstName: 'Bo' }] } } },
    );
    const run = await (await engine.start(f)).done;
    expect(run.status).toBe('succeeded');
    const [s] = await engine.getSteps(run.id);
    expect(s!.output).toEqual(['Hello Ann', 'Hello Bo']);
  });
});
