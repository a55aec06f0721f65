import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FlowFileError } from '../../src/engine/flow/errors.js';
import { loadFlowFile, type LoadFlowOptions } from '../../src/engine/flow/load.js';
import { builtinRegistry, tempProject } from './helpers.js';

const opts = (dir: string): LoadFlowOptions => ({ registry: builtinRegistry(), baseDir: dir, instances: ['default', 'support'] });

function errorLines(file: string, o: LoadFlowOptions): string[] {
  try {
    loadFlowFile(file, o);
  } catch (e) {
    expect(e).toBeInstanceOf(FlowFileError);
    return (e as FlowFileError).errors.map((x) => x.message.split(file).join('F'));
  }
  throw new Error('expected the flow to be invalid');
}

describe('on.notification', () => {
  it('loads a notification trigger next to a schedule, with the defaults filled in', () => {
    const dir = tempProject({
      'stop.yaml': `name: stop
on:
  notification: { text: "^(stop|unsubscribe)$", chatId: 79001234567@c.us }
  schedule: { cron: "0 9 * * *" }
steps:
  - id: say
    uses: log
    with: { message: "\${{ event.senderData.chatId }} wrote \${{ event.messageData.textMessageData.textMessage }}" }
`,
    });
    const flow = loadFlowFile(path.join(dir, 'stop.yaml'), opts(dir));
    expect(flow.on.notification).toEqual({
      type: 'incomingMessageReceived',
      text: '^(stop|unsubscribe)$',
      chatId: '79001234567@c.us',
      instance: 'default',
    });
    expect(flow.on.schedule).toEqual({ cron: '0 9 * * *' });
  });

  it('reports a bad pattern, an unknown type, an unknown instance and `event` outside a triggered flow, each with its position', () => {
    const dir = tempProject({
      'bad.yaml': `name: bad
on:
  notification:
    type: incomingMessage
    text: "^(stop|unsubscribe$"
    instance: suport
    chatID: x
steps:
  - id: say
    uses: log
    with: { message: "\${{ event.senderData.chatId }}" }
`,
      'plain.yaml': `name: plain
steps:
  - id: say
    uses: log
    with: { message: "hi \${{ event.senderData.chatId }}" }
`,
    });
    const lines = errorLines(path.join(dir, 'bad.yaml'), opts(dir));
    expect(lines[0]).toMatch(/^F:4:11 on\.notification\.type: /);
    expect(lines[0]).toContain('incomingMessageReceived');
    expect(lines.slice(1)).toEqual([
      'F:5:11 on.notification.text: invalid regular expression /^(stop|unsubscribe$/: Unterminated group',
      "F:6:15 on.notification.instance: unknown instance 'suport' (did you mean 'support'?): config.yaml declares default, support",
      "F:7:5 on.notification.chatID: unknown key 'chatID' (did you mean 'chatId'?)",
    ]);
    expect(errorLines(path.join(dir, 'plain.yaml'), opts(dir))).toEqual([
      "F:5:30 steps[0].with.message: expression error in ${{ event.senderData.chatId }}: 'event' is only set in a flow triggered by a notification, a failure or an alert (on: { notification | failure | alert: ... })",
    ]);
  });
});
