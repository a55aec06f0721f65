// A plugin imports everything from the package root: `import { defineAction, z } from 'msgflow'`.
import { defineAction, definePlugin, z } from 'msgflow';

export const shout = defineAction({
  name: 'shout',
  description: 'Upper-cases a text.',
  input: z.strictObject({ text: z.string() }),
  output: { description: '{ text }' },
  async run(_ctx, input) {
    return { text: input.text.toUpperCase() };
  },
});

export default definePlugin({ name: 'shout', actions: [shout] });
