/**
 * The messages-and-chats methods of @green-api/whatsapp-api-client-js-v2,
 * driven through that package against `msgflow serve` as its users would
 * (only its axios base URL changed): each answers with its documented shape,
 * and what it changes shows where the service shows it (journals, chat list,
 * notifications).
 */
import { GreenApiClient } from '@green-api/whatsapp-api-client-js-v2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveForOfficialClient, type OfficialClient } from '../support/green-api.js';
import { ALICE, BOB, NOBODY } from '../support/local-service.js';
import { networkYaml } from '../support/network.js';
import { waitFor } from '../support/wait.js';

let client: GreenApiClient;
let h: OfficialClient;
const GROUP = '120363043968066561@g.us';

beforeAll(async () => {
  h = await serveForOfficialClient({
    name: 'chats',
    local: [networkYaml('  ')],
    instance: [
      '      sendIntervalMs: 500',
      '      rateLimits: { getMessage: 0, getChatHistory: 0, getContacts: 0, getChats: 0 }',
      '      settings: { outgoingAPIMessageWebhook: "yes", editedMessageWebhook: "yes", deletedMessageWebhook: "yes" }',
      '      seed: seed.yaml',
    ],
    files: {
      'seed.yaml': [
        'chats:',
        `  - chatId: "${ALICE}"`,
        '    messages:',
        '      - { type: incoming, idMessage: "SEEDQUESTION000001", typeMessage: textMessage, textMessage: "Menu?", timestamp: 1767225600 }',
        '      - { type: outgoing, idMessage: "SEEDANSWER00000001", typeMessage: textMessage, textMessage: "Soon", timestamp: 1767225660 }',
        '      - { type: incoming, idMessage: "SEEDPICTURE0000001", typeMessage: imageMessage, fileName: "cat.png", downloadUrl: "https://files.example/cat.png", timestamp: 1767225700 }',
        `  - chatId: "${GROUP}"`,
        '    messages:',
        '      - { type: incoming, idMessage: "SEEDGROUP000000001", typeMessage: textMessage, textMessage: "Hi all", senderId: "79002223344@c.us", timestamp: 1767225500 }',
        '',
      ].join('\n'),
    },
  });
  client = h.client;
});

afterAll(async () => {
  await h?.close();
});

/** A text sent now, once the queue has sent it (real time: the queue releases every 500 ms). */
async function sentText(chatId: string, message: string): Promise<string> {
  const { idMessage } = await client.sendMessage({ chatId, message });
  await waitFor(`${idMessage} to leave the queue`, async () => {
    const m = (await client.getMessage({ chatId, idMessage }).catch(() => undefined)) as { statusMessage?: string } | undefined;
    return m && m.statusMessage !== 'pending' ? m : undefined;
  });
  return idMessage;
}

/** The messageData of the next outgoingAPIMessageReceived of `typeMessage` (others are deleted on the way). */
async function nextApiMessage(typeMessage: string): Promise<Record<string, unknown>> {
  return waitFor(`an outgoingAPIMessageReceived ${typeMessage}`, async () => {
    const n = await client.receiveNotification(5);
    if (!n) return undefined;
    await client.deleteNotification(n.receiptId);
    const body = n.body as unknown as { typeWebhook: string; messageData?: { typeMessage: string } } & Record<string, unknown>;
    return body.typeWebhook === 'outgoingAPIMessageReceived' && body.messageData?.typeMessage === typeMessage ? body : undefined;
  });
}

describe('@green-api/whatsapp-api-client-js-v2 messages and chats against msgflow serve', () => {
  it('getContacts: people and group chats, each {id, name, contactName, type}', async () => {
    await client.addContact({ chatId: BOB, firstName: 'Bobby' });
    const contacts = await client.getContacts();
    expect(contacts).toEqual(
      expect.arrayContaining([
        { id: ALICE, name: 'Alice', contactName: '', type: 'user' },
        { id: BOB, name: 'Bob', contactName: 'Bobby', type: 'user' },
        { id: GROUP, name: '', contactName: '', type: 'group' },
      ]),
    );
  });

  it('getContactInfo: the documented fields; a number without an account is refused', async () => {
    const info = await client.getContactInfo({ chatId: ALICE });
    expect(info).toEqual({
      avatar: '',
      name: 'Alice',
      contactName: '',
      email: '',
      category: '',
      description: '',
      products: [],
      chatId: ALICE,
      lastSeen: null,
      isArchive: false,
      isDisappearing: false,
      isMute: false,
      messageExpiration: 0,
      muteExpiration: null,
      isBusiness: false,
    });
    await expect(client.getContactInfo({ chatId: NOBODY })).rejects.toThrow();
  });

  it('getAvatar: {urlAvatar, available} for a person and a group chat', async () => {
    expect(await client.getAvatar({ chatId: ALICE })).toMatchObject({ urlAvatar: '', available: true });
    expect(await client.getAvatar({ chatId: GROUP })).toEqual({ urlAvatar: '', available: true });
  });

  it("downloadFile: a file message's link", async () => {
    expect(await client.downloadFile({ chatId: ALICE, idMessage: 'SEEDPICTURE0000001' })).toEqual({
      downloadUrl: 'https://files.example/cat.png',
    });
  });

  it('editMessage: {idMessage} of the edit; the journal shows the new text, isEdited; an editedMessage notification', async () => {
    const idMessage = await sentText(ALICE, 'Pizza at 7');
    const edit = await client.editMessage({ chatId: ALICE, idMessage, message: 'Pizza at 8' });
    expect(edit).toEqual({ idMessage: expect.stringMatching(/^[0-9A-F]{32}$/) });
    expect(edit.idMessage).not.toBe(idMessage);
    expect(await client.getMessage({ chatId: ALICE, idMessage })).toMatchObject({ textMessage: 'Pizza at 8', isEdited: true });
    const note = await nextApiMessage('editedMessage');
    expect(note).toMatchObject({
      idMessage: edit.idMessage,
      senderData: { chatId: ALICE },
      messageData: { typeMessage: 'editedMessage', editedMessageData: { textMessage: 'Pizza at 8', stanzaId: idMessage } },
    });
  });

  it('editMessage later than 15 minutes after sending: answered, but the text stays', async () => {
    const edit = await client.editMessage({ chatId: ALICE, idMessage: 'SEEDANSWER00000001', message: 'Now' });
    expect(edit.idMessage).toMatch(/^[0-9A-F]{32}$/);
    const m = await client.getMessage({ chatId: ALICE, idMessage: 'SEEDANSWER00000001' });
    expect(m).toMatchObject({ textMessage: 'Soon' });
    expect((m as unknown as Record<string, unknown>).isEdited).not.toBe(true);
  });

  it('deleteMessage: empty answer; the journal shows isDeleted; a deletedMessage notification', async () => {
    const idMessage = await sentText(BOB, 'Wrong chat');
    await expect(client.deleteMessage({ chatId: BOB, idMessage, onlySenderDelete: false })).resolves.toBeUndefined();
    const history = await client.getChatHistory({ chatId: BOB, count: 10 });
    expect(history.find((m) => m.idMessage === idMessage)).toMatchObject({ isDeleted: true });
    expect(await nextApiMessage('deletedMessage')).toMatchObject({
      messageData: { typeMessage: 'deletedMessage', deletedMessageData: { stanzaId: idMessage } },
    });
  });

  it('archiveChat, unarchiveChat, setDisappearingChat: getContactInfo shows each', async () => {
    // An empty body, which the package's axios hands back as ''.
    await expect(client.archiveChat({ chatId: ALICE })).resolves.toBe('');
    expect(await client.setDisappearingChat({ chatId: ALICE, ephemeralExpiration: 604800 })).toEqual({
      chatId: ALICE,
      disappearingMessagesInChat: true,
      ephemeralExpiration: 604800,
    });
    expect(await client.getContactInfo({ chatId: ALICE })).toMatchObject({
      isArchive: true,
      isDisappearing: true,
      messageExpiration: 604800,
    });
    await expect(client.unarchiveChat({ chatId: ALICE })).resolves.toBe('');
    expect(await client.getContactInfo({ chatId: ALICE })).toMatchObject({ isArchive: false });
  });

  it('readChat: {setRead: true}', async () => {
    expect(await client.readChat({ chatId: ALICE })).toEqual({ setRead: true });
    expect(await client.readChat({ chatId: ALICE, idMessage: 'SEEDQUESTION000001' })).toEqual({ setRead: true });
  });
});
