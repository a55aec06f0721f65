/** Smaller pieces: seed file errors, serve's config rules, the typed client over both transports. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NetworkError } from '../../src/api/errors.js';
import { createClient } from '../../src/client/client.js';
import { parseSeed } from '../../src/local/seed.js';
import { createInProcessTransport } from '../../src/runtime/in-process-transport.js';
import { serveCommand } from '../../src/runtime/serve.js';
import { A, ALICE, conformanceConfig, startLocal } from '../support/local-service.js';
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

describe('serve', () => {
  it('refuses a config with no local: section, naming it', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'msgflow-serve-'));
    try {
      await writeFile(path.join(dir, 'config.yaml'), 'flowsDir: flows\n');
      await expect(serveCommand({ config: path.join(dir, 'config.yaml'), print: () => {} })).rejects.toThrow(/local: section/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the typed client over both transports', () => {
  for (const kind of ['http', 'in-process'] as const) {
    it(`createClient works over ${kind}`, async () => {
      const h = await startLocal({ kind, seed: conformanceSeed() });
      try {
        const client = createClient({ ...A, transport: h.transportFor(A), rateLimit: false, retries: 0 });
        const history = await client.getChatHistory({ chatId: ALICE });
        expect(history).toHaveLength(1);
        expect(await client.checkAccount({ username: '@alice' })).toMatchObject({ exist: true, phoneNumber: 79001112233 });
        await expect(client.addContact({ chatId: '79009990000@c.us', firstName: 'X' })).rejects.toMatchObject({ status: 404 });
        await client.close();
      } finally {
        await h.close();
      }
    });
  }

  it('the in-process transport honours abort signals and timeouts like a socket', async () => {
    const never = { handle: () => new Promise<never>(() => {}) };
    const t = createInProcessTransport(never, A.idInstance, A.apiTokenInstance);
    const timedOut = t.request({ method: 'getMessage', httpMethod: 'POST', body: {}, timeoutMs: 20 });
    await expect(timedOut).rejects.toBeInstanceOf(NetworkError);
    await expect(timedOut).rejects.toMatchObject({ code: 'TIMEOUT', mayHaveReachedServer: true });
    const ac = new AbortController();
    ac.abort();
    await expect(
      t.request({ method: 'getMessage', httpMethod: 'POST', body: {}, timeoutMs: 1000, signal: ac.signal }),
    ).rejects.toMatchObject({ mayHaveReachedServer: false });
    expect(t.description).not.toContain(A.idInstance);
  });
});
