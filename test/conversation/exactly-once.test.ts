/**
 * Each incoming message advances its session once: a notification delivered
 * again starts nothing (the dispatcher's run id), and a second run for a
 * message the session already applied sends nothing and changes nothing
 * (the session's last message id). Through the runtime of `msgflow start`
 * (engine, memory store, in-process local service) and its dispatcher.
 */
import { mkdirSync, mkdtempSync, copyFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { identityOf } from '../../src/runtime/clients.js';
import { NotificationDispatcher } from '../../src/engine/notify/dispatcher.js';
import { parseNotification } from '../../src/engine/notify/body.js';
import { DIALOG_SESSIONS_NS, sharedRecords } from '../../src/engine/shared.js';
import { sessionKey } from '../../src/engine/conversation/session.js';
import { REPO } from './helpers.js';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const CHAT = '79001112233@c.us';
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const message = (idMessage: string, text: string) =>
  parseNotification({
    typeWebhook: 'incomingMessageReceived',
    idMessage,
    timestamp: 1767604000,
    senderData: { chatId: CHAT, sender: CHAT },
    messageData: { typeMessage: 'textMessage', textMessageData: { textMessage: text } },
  })!;

describe('a dialog applies each message once', () => {
  it('a redelivered notification starts nothing, and a second run for an applied message sends nothing', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'msgflow-once-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(path.join(dir, 'flows'));
    copyFileSync(path.join(REPO, 'flows/welcome.yaml'), path.join(dir, 'flows/welcome.yaml'));
    writeFileSync(
      path.join(dir, 'config.yaml'),
      `instances: { default: { apiUrl: local, rateLimit: false } }
local:
  dataDir: .msgflow/local
  network: { accounts: [{ phone: 79001112233 }] }
  instances: [{ idInstance: "1101000001", apiTokenInstance: once-token, sendIntervalMs: 500 }]
store: { driver: memory }
`,
    );
    const config = loadConfig(path.join(dir, 'config.yaml'));
    const runtime = await createRuntime({ config, command: 'start', logger: quiet });
    cleanups.push(() => runtime.close());
    const { flows } = runtime.flows();
    const identity = identityOf(config, 'default');
    const dispatcher = new NotificationDispatcher({ ...runtime, flows, identityFor: () => identity, logger: quiet });
    const settle = async () => {
      for (let i = 0; i < 100; i++) {
        const live = (await runtime.engine.listRuns({ flow: 'welcome' })).filter((r) => r.status === 'running' || r.status === 'waiting');
        if (live.length === 0) return;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const session = () => sharedRecords(runtime.store, DIALOG_SESSIONS_NS).get(sessionKey(identity, 'welcome', CHAT));
    // Distinct messages, queued or sent: one the queue releases between the two reads is in both lists.
    const sent = async () => {
      const queued = await runtime.clientFor('default').showMessagesQueue({});
      const out = await runtime.clientFor('default').lastOutgoingMessages({});
      return new Set([...queued.map((q) => q.messageID), ...out.map((m) => m.idMessage)]).size;
    };

    expect(await dispatcher.dispatch('default', message('ONCE-1', 'hi'))).toBe(1);
    await settle();
    expect(await dispatcher.dispatch('default', message('ONCE-1', 'hi'))).toBe(0);
    await settle();
    expect(await session()).toMatchObject({ state: 'menu', seq: 1, lastMessage: 'ONCE-1' });
    expect(await sent()).toBe(1);

    await dispatcher.dispatch('default', message('ONCE-2', '1'));
    await settle();
    expect(await session()).toMatchObject({ state: 'email', seq: 2, lastMessage: 'ONCE-2' });
    // The same message in another run (as a copy of the notification under another key would start):
    const [flow] = flows;
    const again = await runtime.engine.start(flow!, {
      trigger: 'notification',
      event: { ...message('ONCE-2', '1').raw, instance: 'default' },
    });
    const record = await again.done;
    expect(record.status).toBe('succeeded');
    const [step] = await runtime.engine.getSteps(record.id);
    expect(step!.output).toMatchObject({ outcome: 'duplicate', sent: 0 });
    expect(await session()).toMatchObject({ state: 'email', seq: 2 });
    expect(await sent()).toBe(2);
    expect((await runtime.engine.listRuns({ flow: 'welcome' })).map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
  });
});
