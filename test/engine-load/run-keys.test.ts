/**
 * concurrency.key and debounce: what a run's key may read (what its trigger
 * gives), and where a mistake is, as `msgflow validate` reports it.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FlowFileError } from '../../src/engine/flow/errors.js';
import { loadFlowFile, type LoadFlowOptions } from '../../src/engine/flow/load.js';
import { builtinRegistry, tempProject } from './helpers.js';

const opts = (dir: string): LoadFlowOptions => ({ registry: builtinRegistry(), baseDir: dir, instances: ['default'] });

function errorLines(file: string, o: LoadFlowOptions): string[] {
  try {
    loadFlowFile(file, o);
  } catch (e) {
    expect(e).toBeInstanceOf(FlowFileError);
    return (e as FlowFileError).errors.map((x) => x.message.split(file).join('F'));
  }
  throw new Error('expected the flow to be invalid');
}

describe('run keys', () => {
  it('loads a per-key concurrency and a debounce, durations in ms', () => {
    const dir = tempProject({
      'ok.yaml': `name: ok
on:
  notification: { type: incomingMessageReceived }
concurrency: { key: "\${{ event.senderData.sender }}", max: 2 }
debounce: { window: 3s }
steps:
  - id: say
    uses: log
    with: { message: hi }
`,
    });
    const flow = loadFlowFile(path.join(dir, 'ok.yaml'), opts(dir));
    expect(flow.concurrency).toEqual({ key: '${{ event.senderData.sender }}', max: 2 });
    expect(flow.debounce).toEqual({ windowMs: 3000, mode: 'last' });
  });

  it('refuses a key reading steps or a secret, event without a notification trigger, and debounce without one, each at its position', () => {
    const dir = tempProject({
      'bad.yaml': `name: bad
concurrency: { key: "\${{ steps.say.output }}" }
debounce: { window: 3s, key: "\${{ event.senderData.chatId }}" }
steps:
  - id: say
    uses: log
    with: { message: hi }
`,
      'secret.yaml': `name: secret
on:
  notification: { type: incomingMessageReceived }
concurrency: { key: "\${{ secrets.TOKEN }}" }
steps:
  - id: say
    uses: log
    with: { message: hi }
`,
    });
    const bad = errorLines(path.join(dir, 'bad.yaml'), opts(dir));
    expect(bad).toEqual([
      expect.stringMatching(/^F:2:2[0-9] concurrency\.key: .*'steps' is not set when a run's key is computed \(before its steps\)/),
      expect.stringMatching(/^F:3:.* debounce: debounce gathers notifications: only a flow triggered by a notification/),
      expect.stringMatching(/^F:3:.* debounce\.key: .*'event' is only set in a flow triggered by a notification/),
    ]);
    const secret = errorLines(path.join(dir, 'secret.yaml'), opts(dir));
    expect(secret).toEqual([expect.stringMatching(/^F:4:.* concurrency\.key: .*a secret cannot be a run's key/)]);
  });
});
