/** Actions of the workers benchmark: one that waits like an API call, one that does nothing. */
import { z } from 'zod';
import { defineAction } from '../src/engine/action.js';

export default {
  name: 'bench',
  actions: [
    defineAction({
      name: 'bench.wait',
      description: 'Waits `ms` milliseconds (an I/O-bound call).',
      input: z.strictObject({ ms: z.number().int().min(0) }),
      output: { description: '{ ok: true }' },
      run: async (_ctx, input) => {
        await new Promise((r) => setTimeout(r, input.ms));
        return { ok: true };
      },
    }),
    defineAction({
      name: 'bench.noop',
      description: 'Does nothing.',
      input: z.strictObject({}),
      output: { description: '{ ok: true }' },
      run: async () => ({ ok: true }),
    }),
  ],
};
