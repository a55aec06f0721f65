import { describe, expect, it } from 'vitest';
import type { NotificationBody, ReceivedNotification } from '../../../src/api/notifications.js';
import type { ChatEntry, ContactEntry, Message } from '../../../src/api/types.js';
import { ALICE, BOB, conformanceConfig, NOBODY, useLocal, type TransportKind } from '../../support/local-service.js';
import { conformanceSeed, GROUP, LONG_CHAT, OLD_OUTGOING_ID } from '../helpers/seed.js';

/** The messages-and-chats methods: lists, a file's link, and what the account does to its chats and messages. */
export function chatsSuite(kind: TransportKind) {
  describe('messages and chats', () => {
    const h = useLocal(kind, () => ({
      config: conformanceConfig((raw) => {
        const instances = raw.instances as Record<string, unknown>[];
        instances[0]!.settings = { outgoingAPIMessageWebhook: 'yes', editedMessageWebhook: 'yes', deletedMessageWebhook: 'yes' };
      }),
      seed: conformanceSeed(),
    }));

    async function ok<T>(method: Parameters<typeof h.call>[0], body?: unknown, opts?: Parameters<typeof h.call>[2]): Promise<T> {
      const r = await h.call(method, body, opts);
      expect(r.statusCode, JSON.stringify(r.body)).toBe(200);
      return r.body as T;
    }
    async function refused(method: Parameters<typeof h.call>[0], body: unknown): Promise<string> {
      const r = await h.call(method, body);
      expect(r.statusCode, JSON.stringify(r.body)).toBe(400);
      return (r.body as { message: string }).message;
    }
    /** A text sent now, once the queue has sent it. */
    async function sent(chatId: string, message: string): Promise<string> {
      const { idMessage } = await ok<{ idMessage: string }>('sendMessage', { chatId, message });
      const settled = h.settled(idMessage);
      // A message after another waits the send interval (1 s) on the service's clock.
      await h.clock.advance(1_000);
      expect(await settled).toBe('sent');
      return idMessage;
    }
    /**
     * The outgoingAPIMessageReceived notifications of these kinds queued
     * before a marker message sent now (read and deleted): a long poll waits on
     * the service's clock, so the marker, not an empty queue, ends the reading.
     */
    async function apiNotificationsOf(...kinds: string[]): Promise<NotificationBody[]> {
      const marker = await sent(LONG_CHAT, 'marker');
      const out: NotificationBody[] = [];
      for (;;) {
        const n = await ok<ReceivedNotification>('receiveNotification', undefined, { query: { receiveTimeout: '5' } });
        await h.call('deleteNotification', undefined, { pathParams: [String(n.receiptId)] });
        const b = n.body as NotificationBody & { idMessage?: string; messageData?: { typeMessage: string } };
        if (b.idMessage === marker) return out;
        if (b.typeWebhook === 'outgoingAPIMessageReceived' && kinds.includes(b.messageData?.typeMessage ?? '')) out.push(b);
      }
    }

    it('getChats: every chat, most recently active first, with its archive and disappearing state; count keeps the newest', async () => {
      const chats = await ok<ChatEntry[]>('getChats', undefined, { httpMethod: 'GET' });
      expect(chats.map((c) => c.id).sort()).toEqual([ALICE, BOB, GROUP, LONG_CHAT].sort());
      expect(chats.find((c) => c.id === GROUP)).toEqual({
        archive: false,
        id: GROUP,
        ephemeralExpiration: 0,
        ephemeralSettingTimestamp: 0,
        name: '',
        type: 'group',
      });
      expect(chats.find((c) => c.id === BOB)).toMatchObject({ name: 'Bob', type: 'user' });
      const one = await ok<ChatEntry[]>('getChats', undefined, { query: { count: '1' } });
      expect(one).toEqual([chats[0]]);
      // msgflow's own client: the answer kept whole.
      expect(await h.client.getChats({})).toEqual(chats);
      expect(await h.client.getChats({ count: 1 })).toEqual(one);
    });

    it('getContacts: contact list and chats, {id, name, contactName, type}; group picks one kind', async () => {
      await ok('addContact', { chatId: ALICE, firstName: 'Ally' });
      const all = await ok<ContactEntry[]>('getContacts');
      expect(all).toEqual(
        expect.arrayContaining([
          { id: ALICE, name: 'Alice', contactName: 'Ally', type: 'user' },
          { id: GROUP, name: '', contactName: '', type: 'group' },
        ]),
      );
      const groups = await ok<ContactEntry[]>('getContacts', undefined, { query: { group: 'true' } });
      expect(groups.map((c) => c.id)).toEqual([GROUP]);
      const people = await ok<ContactEntry[]>('getContacts', undefined, { query: { group: 'false', count: '2' } });
      expect(people).toHaveLength(2);
      expect(people.every((c) => c.type === 'user')).toBe(true);
    });

    it('getContactInfo: a person only; a number without an account is 404, a group chat id is refused by name', async () => {
      expect(await ok('getContactInfo', { chatId: BOB })).toMatchObject({ chatId: BOB, name: 'Bob', isArchive: false, products: [] });
      expect((await h.call('getContactInfo', { chatId: NOBODY })).statusCode).toBe(404);
      expect(await refused('getContactInfo', { chatId: GROUP })).toMatch(/'chatId' must be a personal chat ID/);
    });

    it('getAvatar: available for an account, not for a hidden one; none for a number without an account', async () => {
      expect(await ok('getAvatar', { chatId: BOB })).toEqual({ urlAvatar: '', available: true, existsWhatsapp: true });
      expect(await ok('getAvatar', { chatId: '79005550000@c.us' })).toEqual({ urlAvatar: '', available: false, existsWhatsapp: true });
      expect(await ok('getAvatar', { chatId: NOBODY })).toEqual({ urlAvatar: '', available: false, existsWhatsapp: false });
    });

    it("downloadFile: a file message's link; a text has none; an unknown message is the journal's error", async () => {
      const history = await ok<Message[]>('getChatHistory', { chatId: BOB });
      const image = history.find((m) => m.typeMessage === 'imageMessage')!;
      expect(await ok('downloadFile', { chatId: BOB, idMessage: image.idMessage })).toEqual({ downloadUrl: image.downloadUrl });
      const text = history.find((m) => m.typeMessage === 'textMessage')!;
      expect(await refused('downloadFile', { chatId: BOB, idMessage: text.idMessage })).toMatch(/has no file/);
      expect(await refused('downloadFile', { chatId: BOB, idMessage: 'NOSUCHMESSAGE0000' })).toBe(
        "Message not found by id 'NOSUCHMESSAGE0000'",
      );
    });

    it('editMessage: the journal shows the new text and isEdited (also after a restart); one editedMessage notification', async () => {
      const id = await sent(ALICE, 'at 7');
      const { idMessage: editId } = await ok<{ idMessage: string }>('editMessage', { chatId: ALICE, idMessage: id, message: 'at 8' });
      expect(editId).toMatch(/^[0-9A-F]{32}$/);
      await h.restart();
      expect(await ok<Message>('getMessage', { chatId: ALICE, idMessage: id })).toMatchObject({
        textMessage: 'at 8',
        isEdited: true,
        editedMessageId: editId,
      });
      const edits = await apiNotificationsOf('editedMessage');
      expect(edits).toEqual([
        expect.objectContaining({
          idMessage: editId,
          messageData: { typeMessage: 'editedMessage', editedMessageData: { textMessage: 'at 8', stanzaId: id } },
        }),
      ]);
    });

    it('edits and deletions notify only while their own switch is on too (editedMessageWebhook, deletedMessageWebhook)', async () => {
      await ok('setSettings', { editedMessageWebhook: 'no', deletedMessageWebhook: 'no' });
      const id = await sent(ALICE, 'at 7');
      await ok('editMessage', { chatId: ALICE, idMessage: id, message: 'at 8' });
      await ok('deleteMessage', { chatId: ALICE, idMessage: id });
      expect(await apiNotificationsOf('editedMessage', 'deletedMessage')).toEqual([]);
      expect(await ok<Message>('getMessage', { chatId: ALICE, idMessage: id })).toMatchObject({
        textMessage: 'at 8',
        isEdited: true,
        isDeleted: true,
      });
    });

    it('editMessage: an incoming message or a file is refused; an edit after 15 minutes is answered and not made', async () => {
      const bob = await ok<Message[]>('getChatHistory', { chatId: BOB });
      const incoming = bob.find((m) => m.type === 'incoming' && m.typeMessage === 'textMessage')!;
      expect(await refused('editMessage', { chatId: BOB, idMessage: incoming.idMessage, message: 'x' })).toMatch(
        /only messages of this account/,
      );
      const file = bob.find((m) => m.type === 'outgoing' && m.typeMessage === 'imageMessage')!;
      expect(await refused('editMessage', { chatId: BOB, idMessage: file.idMessage, message: 'x' })).toMatch(/only text can be edited/);
      expect(await refused('editMessage', { chatId: ALICE, idMessage: OLD_OUTGOING_ID, message: '' })).toMatch(
        /'message' is not allowed to be empty/,
      );
      await ok('editMessage', { chatId: ALICE, idMessage: OLD_OUTGOING_ID, message: 'now' });
      expect(await ok<Message>('getMessage', { chatId: ALICE, idMessage: OLD_OUTGOING_ID })).toMatchObject({
        textMessage: 'two days ago',
        isEdited: false,
      });
    });

    it('deleteMessage: empty answer, isDeleted in the journal, one deletedMessage notification even when repeated', async () => {
      const id = await sent(BOB, 'oops');
      for (const onlySenderDelete of [false, true]) {
        const r = await h.call('deleteMessage', { chatId: BOB, idMessage: id, onlySenderDelete });
        expect(r.statusCode).toBe(200);
        expect(r.body).toBeUndefined();
      }
      const history = await ok<Message[]>('getChatHistory', { chatId: BOB, count: 5 });
      expect(history.find((m) => m.idMessage === id)).toMatchObject({ isDeleted: true });
      const deletions = await apiNotificationsOf('deletedMessage');
      expect(deletions).toEqual([
        expect.objectContaining({ messageData: { typeMessage: 'deletedMessage', deletedMessageData: { stanzaId: id } } }),
      ]);
      expect(await refused('deleteMessage', { chatId: BOB, idMessage: 'NOSUCHMESSAGE0000' })).toBe(
        "Message not found by id 'NOSUCHMESSAGE0000'",
      );
    });

    it("archiveChat/unarchiveChat: empty answers, the service's errors, the state kept across a restart", async () => {
      const archive = await h.call('archiveChat', { chatId: GROUP });
      expect(archive.statusCode).toBe(200);
      expect(archive.body).toBeUndefined();
      expect(await refused('archiveChat', { chatId: GROUP })).toBe(`ArchiveChatError: chat with id ${GROUP} already archive=true`);
      expect(await refused('archiveChat', { chatId: NOBODY })).toBe(
        'ArchiveChatError: cannot archive chat cause last message not found in chat',
      );
      await h.restart();
      const chats = await ok<ChatEntry[]>('getChats');
      expect(chats.find((c) => c.id === GROUP)).toMatchObject({ archive: true });
      expect((await h.call('unarchiveChat', { chatId: GROUP })).statusCode).toBe(200);
      expect(await refused('unarchiveChat', { chatId: GROUP })).toBe(`UnarchiveChatError: chat with id ${GROUP} already archive=false`);
    });

    it('setDisappearingChat: the documented answer, getChats and getContactInfo show it; other lifetimes are refused', async () => {
      await h.clock.advance(60_000);
      expect(await ok('setDisappearingChat', { chatId: BOB, ephemeralExpiration: 86400 })).toEqual({
        chatId: BOB,
        disappearingMessagesInChat: true,
        ephemeralExpiration: 86400,
      });
      await h.restart();
      expect((await ok<ChatEntry[]>('getChats')).find((c) => c.id === BOB)).toMatchObject({
        ephemeralExpiration: 86400,
        ephemeralSettingTimestamp: Math.floor(h.clock.now() / 1000),
      });
      expect(await ok('getContactInfo', { chatId: BOB })).toMatchObject({ isDisappearing: true, messageExpiration: 86400 });
      expect(await refused('setDisappearingChat', { chatId: BOB, ephemeralExpiration: 3600 })).toBe(
        "Validation failed. Details: 'ephemeralExpiration' must be one of [0, 86400, 604800, 7776000]",
      );
    });

    it('readChat: {setRead: true}; an idMessage not in the chat is not found', async () => {
      expect(await ok('readChat', { chatId: BOB })).toEqual({ setRead: true });
      expect(await refused('readChat', { chatId: BOB, idMessage: 'NOSUCHMESSAGE0000' })).toBe(
        "Message not found by id 'NOSUCHMESSAGE0000'",
      );
      expect(await refused('readChat', { chatId: NOBODY })).toBe('chatId not found');
    });
  });
}
