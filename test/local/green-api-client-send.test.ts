/**
 * The sending methods of @green-api/whatsapp-api-client-js-v2, driven through
 * that package against `msgflow serve` as its users would (only its axios
 * base URL changed): each answers with its documented shape, queues its
 * message, and the message reaches the journal with its documented kind.
 */
import { GreenApiClient } from '@green-api/whatsapp-api-client-js-v2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveForOfficialClient, type OfficialClient } from '../support/green-api.js';
import { ALICE, BOB } from '../support/local-service.js';
import { makePng } from '../support/media.js';
import { networkYaml } from '../support/network.js';
import { waitFor } from '../support/wait.js';

let client: GreenApiClient;
let h: OfficialClient;
const png = new Uint8Array(makePng(24, 16));

beforeAll(async () => {
  h = await serveForOfficialClient({
    name: 'send',
    local: [networkYaml('  ', { deliveredAfterMs: 100 })],
    instance: [
      '      sendIntervalMs: 500',
      // The test polls faster than the published 1-10 requests/second.
      '      rateLimits: { getMessage: 0, getChatHistory: 0, showMessagesQueue: 0, sendFileByUpload: 0, uploadFile: 0 }',
      '      seed: seed.yaml',
    ],
    files: {
      'seed.yaml': [
        'chats:',
        `  - chatId: "${ALICE}"`,
        '    messages:',
        '      - { type: incoming, idMessage: "SEEDQUESTION000001", typeMessage: textMessage, textMessage: "Menu?", timestamp: 1767225600 }',
        '',
      ].join('\n'),
    },
  });
  client = h.client;
});

afterAll(async () => {
  await h?.close();
});

/** The journal record of a sent message, once the queue has sent it (real time: the queue releases every 500 ms). */
async function sentMessage(chatId: string, idMessage: string): Promise<Record<string, unknown>> {
  return waitFor(`${idMessage} to leave the queue`, async () => {
    const m = (await client.getMessage({ chatId, idMessage }).catch(() => undefined)) as Record<string, unknown> | undefined;
    return m && m.statusMessage !== 'pending' ? m : undefined;
  });
}

describe('@green-api/whatsapp-api-client-js-v2 sending methods against msgflow serve', () => {
  it('sendMessage quoting a message, without a link preview', async () => {
    const sent = await client.sendMessage({
      chatId: ALICE,
      message: 'Pizza https://menu.example',
      quotedMessageId: 'SEEDQUESTION000001',
      linkPreview: false,
    });
    expect(sent).toEqual({ idMessage: expect.stringMatching(/^[0-9A-F]{32}$/) });
    expect(await sentMessage(ALICE, sent.idMessage)).toMatchObject({
      typeMessage: 'quotedMessage',
      textMessage: 'Pizza https://menu.example',
      quotedMessage: { stanzaId: 'SEEDQUESTION000001', participant: ALICE, typeMessage: 'textMessage', textMessage: 'Menu?' },
    });
  });

  it('uploadFile: a Blob with a name, and a typed File; the links serve the bytes', async () => {
    const named = await client.uploadFile(new Blob([png]), 'logo.png');
    expect(named).toEqual({ urlFile: expect.stringMatching(/\/files\/[0-9a-f]{32}\/logo\.png$/) });
    const typed = await client.uploadFile(new File([png], 'photo.png', { type: 'image/png' }));
    expect(typed.urlFile).toMatch(/\/files\/[0-9a-f]{32}\/photo\.png$/);
    for (const u of [named.urlFile, typed.urlFile]) {
      const got = await fetch(u);
      expect(got.status).toBe(200);
      expect(Buffer.from(await got.arrayBuffer()).equals(Buffer.from(png))).toBe(true);
    }
  });

  it('sendFileByUpload: {idMessage, urlFile}, then an image message with its caption', async () => {
    const sent = await client.sendFileByUpload({ chatId: ALICE, file: { data: new Blob([png]), fileName: 'cat.png' }, caption: 'a cat' });
    expect(sent).toEqual({ idMessage: expect.stringMatching(/^[0-9A-F]{32}$/), urlFile: expect.stringMatching(/\/cat\.png$/) });
    expect(await sentMessage(ALICE, sent.idMessage)).toMatchObject({
      typeMessage: 'imageMessage',
      fileName: 'cat.png',
      caption: 'a cat',
      mimeType: 'image/png',
      downloadUrl: sent.urlFile,
    });
  });

  it('sendPoll, sendLocation, sendContact: each a message of its kind', async () => {
    const poll = await client.sendPoll({
      chatId: BOB,
      message: 'Lunch?',
      options: [{ optionName: 'pizza' }, { optionName: 'sushi' }],
      multipleAnswers: true,
    });
    const where = await client.sendLocation({
      chatId: BOB,
      nameLocation: 'Office',
      address: '1 Main St',
      latitude: 55.75,
      longitude: 37.61,
    });
    const who = await client.sendContact({ chatId: BOB, contact: { phoneContact: 79001112233, firstName: 'Alice', company: 'Acme' } });
    for (const s of [poll, where, who]) expect(s).toEqual({ idMessage: expect.stringMatching(/^[0-9A-F]{32}$/) });
    expect(await sentMessage(BOB, poll.idMessage)).toMatchObject({
      typeMessage: 'pollMessage',
      pollMessageData: { name: 'Lunch?', options: [{ optionName: 'pizza' }, { optionName: 'sushi' }], multipleAnswers: true },
    });
    expect(await sentMessage(BOB, where.idMessage)).toMatchObject({
      typeMessage: 'locationMessage',
      location: { nameLocation: 'Office', address: '1 Main St', latitude: 55.75, longitude: 37.61 },
    });
    expect(await sentMessage(BOB, who.idMessage)).toMatchObject({
      typeMessage: 'contactMessage',
      contact: { displayName: 'Alice', phoneNumber: 79001112233 },
    });
    await expect(client.sendPoll({ chatId: BOB, message: 'Q', options: [{ optionName: 'only' }] })).rejects.toThrow(
      `Failed to send poll: Request failed with status code 400. {"message":"Validation failed. Details: 'options' must contain at least 2 items"}`,
    );
  });

  it('forwardMessages: the new ids, and the copies in the other chat', async () => {
    const res = await client.forwardMessages({ chatId: BOB, chatIdFrom: ALICE, messages: ['SEEDQUESTION000001'] });
    expect(res).toEqual({ messages: [expect.stringMatching(/^[0-9A-F]{32}$/)] });
    expect(await sentMessage(BOB, res.messages[0]!)).toMatchObject({
      typeMessage: 'textMessage',
      textMessage: 'Menu?',
      isForwarded: true,
      forwardingScore: 1,
    });
  });

  it('showMessagesQueue lists a queued send with its documented type', async () => {
    const a = await client.sendLocation({ chatId: ALICE, latitude: 1, longitude: 2 });
    const b = await client.sendContact({ chatId: ALICE, contact: { phoneContact: 79002223344, lastName: 'Stone' } });
    const queue = await client.showMessagesQueue();
    // The first may already be on its way; the second waits its 500 ms.
    expect(queue).toContainEqual(
      expect.objectContaining({ messageID: b.idMessage, type: 'sendContact', body: expect.objectContaining({ chatId: ALICE }) }),
    );
    await sentMessage(ALICE, a.idMessage);
    await sentMessage(ALICE, b.idMessage);
  });
});
