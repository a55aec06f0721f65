/**
 * What an action sees (engine/run/unit-context.ts), as a flow's step meets it:
 * ctx.render evaluates a template the action took as written (rawInputs)
 * against the run's own expression scope, once per record of its own.
 */
import { describe, expect, it } from 'vitest';
import { defineAction } from '../../src/engine/action.js';
import { z } from 'zod';
import { action, flow, registryWith, step, testEngine } from './helpers.js';

/** Renders `line` (as written) once per record, each record as `item`. */
const perRecord = defineAction({
  name: 'perRecord',
  description: 'renders a line per record',
  input: z.strictObject({ records: z.array(z.record(z.string(), z.unknown())), line: z.string() }),
  output: { description: 'the lines' },
  rawInputs: ['line'],
  run: async (ctx, input) => input.records.map((item, index) => ctx.render(input.line, { item, index })),
});

const echo = action('echo', async (_ctx, input) => input);

describe('ctx.render', () => {
  it("evaluates a template the action took as written against the run's inputs, env, steps and run, each record as item", async () => {
    const t = testEngine(registryWith(perRecord, echo));
    const f = flow(
      [
        step({ id: 'sign', uses: 'echo', with: { name: 'Team ${{ inputs.team }}' } }),
        step({
          id: 'lines',
          uses: 'perRecord',
          with: {
            records: '${{ inputs.people }}',
            line: '${{ index + 1 }}. Hi ${{ item.name }}, ${{ env.GREETING }} from ${{ steps.sign.output.name }} (${{ run.flow }}, ${{ run.startedAt > 0 }})',
          },
        }),
      ],
      {
        env: { GREETING: 'good news' },
        inputs: { team: { value: 'Blue' }, people: { value: [{ name: 'Alice' }, { name: 'Bob' }] } },
      },
    );
    const { runId, done } = await t.engine.start(f);
    expect(await done).toMatchObject({ status: 'succeeded' });
    const lines = (await t.engine.getSteps(runId)).find((s) => s.step === 'lines')?.output;
    expect(lines).toEqual([
      '1. Hi Alice, good news from Team Blue (test-flow, true)',
      '2. Hi Bob, good news from Team Blue (test-flow, true)',
    ]);
  });
});
