/** Seed files (`local.instances[].seed`): what they accept, how their errors read, when they are loaded. */
import { describe, expect, it } from 'vitest';
import { parseSeed } from '../../src/local/seed.js';
import { ALICE, conformanceConfig, startLocal } from '../support/local-service.js';
import { conformanceSeed } from './helpers/seed.js';

describe('seed files', () => {
  it('accepts every kind and sorts oldest first', () => {
    const msgs = parseSeed(conformanceSeed(), 'seed.json');
    expect(new Set(msgs.map((m) => m.typeMessage)).size).toBe(10);
    for (let i = 1; i < msgs.length; i++) {
      const t = (x: (typeof msgs)[number]) => (typeof x.timestamp === 'number' ? x.timestamp * 1000 : Date.parse(x.timestamp!));
      expect(t(msgs[i]!)).toBeGreaterThanOrEqual(t(msgs[i - 1]!));
    }
  });

  it('errors name file:line:col and the key path', () => {
    const text = [
      'chats:',
      '  - chatId: "79001112233@c.us"',
      '    messages:',
      '      - typeMessage: textMessage',
      '        textMessage: 42',
      '',
    ].join('\n');
    expect(() => parseSeed(text, 'seed.yaml')).toThrow(/^seed\.yaml:5:22 chats\[0\]\.messages\[0\]\.textMessage: /);
    const badChat = ['chats:', '  - chatId: "alice"', '    messages:', '      - { typeMessage: textMessage, textMessage: hi }', ''].join(
      '\n',
    );
    expect(() => parseSeed(badChat, 'seed.yaml')).toThrow(/^seed\.yaml:2:13 chats\[0\]\.chatId: expected a chat id/);
    expect(() => parseSeed('chats: [', 'seed.yaml')).toThrow(/^seed\.yaml:\d+:\d+/);
  });

  it('a seed is loaded once, into an empty instance only', async () => {
    const h = await startLocal({ kind: 'in-process', config: conformanceConfig(), seed: conformanceSeed() });
    try {
      const before = (await h.call('getChatHistory', { chatId: ALICE })).body as unknown[];
      await h.restart();
      expect((await h.call('getChatHistory', { chatId: ALICE })).body).toHaveLength(before.length);
    } finally {
      await h.close();
    }
  });
});
