/**
 * The methods that @green-api/whatsapp-api-client-js-v2 implements and
 * msgflow's local service serves, driven through that package against
 * `msgflow serve`, as its users would: the only change is pointing its axios
 * instance at the local base URL. The last block is the package's
 * getting-started example: state check, send a message, receive loop.
 */
import { GreenApiClient } from '@green-api/whatsapp-api-client-js-v2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServeHandle } from '../../src/runtime/serve.js';
import { serveForOfficialClient, type OfficialClient } from '../support/green-api.js';
import { startFileServer, type FileServer } from '../support/file-server.js';
import { A, ALICE, BOB } from '../support/local-service.js';
import { makePng } from '../support/media.js';
import { networkYaml } from '../support/network.js';

let served: ServeHandle;
let files: FileServer;
let client: GreenApiClient;
let h: OfficialClient;
const printed: string[] = [];

beforeAll(async () => {
  files = await startFileServer({ '/cat.png': { body: makePng(32, 32), contentType: 'image/png' } });
  h = await serveForOfficialClient({
    name: 'core',
    local: [
      '  fetch: { allowPrivate: true }',
      // Delivered after 100 ms (default 1000): the receive loop below waits for it in real time.
      networkYaml('  ', { deliveredAfterMs: 100 }),
    ],
    instance: [
      '      sendIntervalMs: 500',
      // The test polls faster than the published 1-10 requests/second.
      '      rateLimits: { getMessage: 0, getChatHistory: 0, lastOutgoingMessages: 0, lastIncomingMessages: 0, getStateInstance: 0, getSettings: 0, setSettings: 0, showMessagesQueue: 0, clearMessagesQueue: 0 }',
      '      seed: seed.yaml',
    ],
    files: {
      'seed.yaml': [
        'chats:',
        `  - chatId: "${ALICE}"`,
        '    messages:',
        '      - { type: incoming, idMessage: "SEEDGREETING0000001", typeMessage: textMessage, textMessage: "Hi there", timestamp: 1767225600 }',
        '',
      ].join('\n'),
    },
    print: (l) => printed.push(l),
  });
  ({ client, served } = h);
});

afterAll(async () => {
  await files?.close();
  await h?.close();
});

describe('@green-api/whatsapp-api-client-js-v2 against msgflow serve', () => {
  it('serve printed its URL, and no secret', () => {
    expect(printed[0]).toBe(`msgflow local service listening on ${served.url}`);
    expect(printed.join('\n')).not.toContain(A.apiTokenInstance);
    expect(printed.join('\n')).not.toContain(A.idInstance);
  });

  it('addContact, editContact, deleteContact', async () => {
    expect(await client.addContact({ chatId: BOB, firstName: 'Bob', lastName: 'B' })).toEqual({ addContact: true });
    await expect(client.addContact({ chatId: BOB, firstName: 'Bob' })).rejects.toThrow(`Contact ${BOB} already exists`);
    expect(await client.editContact({ chatId: BOB, firstName: 'Robert', saveInAddressbook: false })).toEqual({ editContact: true });
    expect(await client.deleteContact({ chatId: BOB })).toEqual({ deleteContact: true });
    await expect(client.deleteContact({ chatId: '79009990000@c.us' })).rejects.toThrow('79009990000@c.us is not on WhatsApp');
  });

  it('getChatHistory and getMessage', async () => {
    const history = await client.getChatHistory({ chatId: ALICE, count: 10 });
    expect(history).toEqual([
      expect.objectContaining({ idMessage: 'SEEDGREETING0000001', type: 'incoming', textMessage: 'Hi there', senderName: 'Alice' }),
    ]);
    const m = await client.getMessage({ chatId: ALICE, idMessage: 'SEEDGREETING0000001' });
    expect(m).toMatchObject({ typeMessage: 'textMessage', chatId: ALICE });
    await expect(client.getMessage({ chatId: ALICE, idMessage: 'NOSUCHMESSAGE000000' })).rejects.toThrow(
      "Message not found by id 'NOSUCHMESSAGE000000'",
    );
  });

  it('sendFileByUrl, then the message in getMessage and lastOutgoingMessages', async () => {
    const sent = await client.sendFileByUrl({
      chatId: ALICE,
      file: { url: files.url('/cat.png'), fileName: 'cat.png' },
      caption: 'a cat',
    });
    expect(sent.idMessage).toMatch(/^[0-9A-F]{32}$/);
    let message;
    for (let i = 0; i < 200 && !message; i++) {
      // `pending` while it waits in the send queue.
      message = await client.getMessage({ chatId: ALICE, idMessage: sent.idMessage }).catch(() => undefined);
      if ((message as { statusMessage?: string } | undefined)?.statusMessage === 'pending') message = undefined;
      if (!message) await new Promise((r) => setTimeout(r, 25));
    }
    expect(message).toMatchObject({
      type: 'outgoing',
      typeMessage: 'imageMessage',
      caption: 'a cat',
      fileName: 'cat.png',
      sendByApi: true,
    });
    const dl = await fetch((message as { downloadUrl: string }).downloadUrl);
    expect(dl.status).toBe(200);
    const last = await client.lastOutgoingMessages();
    expect(last.map((x) => x.idMessage)).toEqual([sent.idMessage]);
    expect((await client.lastOutgoingMessages(5)).map((x) => x.idMessage)).toEqual([sent.idMessage]);
    const history = await client.getChatHistory({ chatId: ALICE });
    expect(history.map((x) => x.idMessage)).toEqual([sent.idMessage, 'SEEDGREETING0000001']);
  });
});

describe('the getting-started example of @green-api/whatsapp-api-client-js-v2', () => {
  it('settings, state check, checkWhatsapp, send a message, receive and delete its notifications', async () => {
    expect(await client.getSettings()).toMatchObject({ webhookUrl: '', outgoingWebhook: 'no', incomingWebhook: 'no' });
    expect(await client.setSettings({ outgoingWebhook: 'yes', outgoingAPIMessageWebhook: 'yes', incomingWebhook: 'yes' })).toEqual({
      saveSettings: true,
    });
    expect(await client.getSettings()).toMatchObject({ outgoingWebhook: 'yes', incomingWebhook: 'yes' });

    const state = await client.getStateInstance();
    expect(state.stateInstance).toBe('authorized');
    expect(await client.checkWhatsapp({ phoneNumber: 79001112233 })).toEqual({ existsWhatsapp: true, chatId: ALICE });

    const sent = await client.sendMessage({ chatId: ALICE, message: 'Hello from GREEN-API SDK!' });
    expect(sent.idMessage).toMatch(/^[0-9A-F]{32}$/);

    // The package's receive loop: receive, process, delete.
    const seen: string[] = [];
    for (let i = 0; i < 20 && !seen.includes('outgoingMessageStatus:delivered'); i++) {
      const notification = await client.receiveNotification(5);
      if (!notification) continue;
      const body = notification.body as unknown as { typeWebhook: string; status?: string; idMessage?: string };
      // (The file sent above may still report its own statuses.)
      if (body.idMessage === sent.idMessage) seen.push(body.status ? `${body.typeWebhook}:${body.status}` : body.typeWebhook);
      expect(await client.deleteNotification(notification.receiptId)).toEqual({ result: true });
    }
    expect(seen).toEqual(['outgoingAPIMessageReceived', 'outgoingMessageStatus:sent', 'outgoingMessageStatus:delivered']);
  }, 30_000);
});

describe('every setting of the official client’s Settings type', () => {
  it('setSettings takes each documented key (keepOnlineStatus, incomingCallWebhook, ...) and getSettings returns it', async () => {
    const all = {
      keepOnlineStatus: 'yes',
      pollMessageWebhook: 'yes',
      incomingCallWebhook: 'yes',
      incomingBlockWebhook: 'yes',
      editedMessageWebhook: 'yes',
      deletedMessageWebhook: 'yes',
      markIncomingMessagesReaded: 'yes',
      markIncomingMessagesReadedOnReply: 'yes',
      stateWebhook: 'yes',
    } as const;
    expect(await client.setSettings({ keepOnlineStatus: 'yes' })).toEqual({ saveSettings: true });
    expect(await client.setSettings(all)).toEqual({ saveSettings: true });
    expect(await client.getSettings()).toMatchObject(all);
  });
});

describe('the journal of incoming messages and the send queue', () => {
  it('lastIncomingMessages lists a message that arrived (the seeded greeting), in the documented shape', async () => {
    // The greeting was seeded at 2026-01-01; a window reaching back that far finds it.
    const minutes = Math.ceil((Date.now() - Date.UTC(2026, 0, 1)) / 60_000) + 60;
    const incoming = await client.lastIncomingMessages(minutes);
    expect(incoming).toContainEqual(
      expect.objectContaining({
        type: 'incoming',
        idMessage: 'SEEDGREETING0000001',
        chatId: ALICE,
        typeMessage: 'textMessage',
        textMessage: 'Hi there',
      }),
    );
    // The default window (24 h) is older news for a message of January: none of the seeded ones.
    expect((await client.lastIncomingMessages()).map((m) => m.idMessage)).not.toContain('SEEDGREETING0000001');
  });

  it('clearMessagesQueue empties the queue: a queued message never leaves', async () => {
    // Queued behind a 10 s send interval: two messages, the second waits.
    await client.setSettings({ delaySendMessagesMilliseconds: 10_000 });
    await client.sendMessage({ chatId: BOB, message: 'first' });
    const second = await client.sendMessage({ chatId: BOB, message: 'second, cleared' });
    expect((await client.showMessagesQueue()).map((q) => q.messageID)).toContain(second.idMessage);
    expect(await client.clearMessagesQueue()).toEqual({ isCleared: true });
    expect(await client.showMessagesQueue()).toEqual([]);
    await client.setSettings({ delaySendMessagesMilliseconds: 500 });
    await new Promise((r) => setTimeout(r, 700));
    const history = await client.getChatHistory({ chatId: BOB, count: 10 });
    expect(history.map((m) => m.idMessage)).not.toContain(second.idMessage);
  });
});
