import { describe, expect, it } from 'vitest';
import type { Message } from '../../../src/api/types.js';
import { ALICE, BOB, conformanceConfig, T0, useLocal, type TransportKind } from '../../support/local-service.js';
import { conformanceSeed, GROUP, LONG_CHAT, OLD_OUTGOING_ID } from '../helpers/seed.js';

const COMMON = [
  'type',
  'idMessage',
  'timestamp',
  'typeMessage',
  'chatId',
  'chatType',
  'isForwarded',
  'forwardingScore',
  'deletedMessageId',
  'editedMessageId',
  'isEdited',
  'isDeleted',
];
const INCOMING = ['senderId', 'senderName', 'senderType', 'senderContactName'];
const OUTGOING = ['statusMessage', 'sendByApi'];
const FILE = ['downloadUrl', 'caption', 'fileName', 'jpegThumbnail', 'mimeType', 'isAnimated'];
const BY_KIND: Record<string, string[]> = {
  textMessage: ['textMessage'],
  imageMessage: FILE,
  videoMessage: [...FILE, 'videoNote'],
  documentMessage: FILE,
  audioMessage: FILE,
  stickerMessage: FILE,
  pollMessage: ['pollMessageData'],
  locationMessage: ['location'],
  reactionMessage: ['extendedTextMessageData', 'quotedMessage'],
  contactMessage: ['contact'],
};

export function historySuite(kind: TransportKind) {
  describe('history', () => {
    const h = useLocal(kind, () => ({ config: conformanceConfig(), seed: conformanceSeed() }));

    it('getChatHistory: newest first, count defaults to 100', async () => {
      const all = await h.call('getChatHistory', { chatId: LONG_CHAT });
      expect(all.statusCode).toBe(200);
      const list = all.body as Message[];
      expect(list).toHaveLength(100);
      expect(list[0]!.textMessage).toBe('message 119');
      expect(list[99]!.textMessage).toBe('message 20');
      for (let i = 1; i < list.length; i++) expect(list[i - 1]!.timestamp).toBeGreaterThanOrEqual(list[i]!.timestamp);
      const five = await h.call('getChatHistory', { chatId: LONG_CHAT, count: 5 });
      expect((five.body as Message[]).map((m) => m.textMessage)).toEqual([
        'message 119',
        'message 118',
        'message 117',
        'message 116',
        'message 115',
      ]);
      const none = await h.call('getChatHistory', { chatId: '79009990000@c.us' });
      expect(none.body).toEqual([]);
    });

    it('every kind, incoming and outgoing, carries the fields the spec lists for it', async () => {
      const list = (await h.call('getChatHistory', { chatId: BOB })).body as Message[];
      expect(list).toHaveLength(20);
      const kinds = new Set<string>();
      for (const m of list) {
        kinds.add(`${m.type}:${m.typeMessage}`);
        const expected = [...COMMON, ...(m.type === 'incoming' ? INCOMING : OUTGOING), ...BY_KIND[m.typeMessage]!];
        for (const f of expected) expect(m, `${m.type} ${m.typeMessage} lacks ${f}`).toHaveProperty(f);
        if (m.type === 'incoming') for (const f of OUTGOING) expect(m).not.toHaveProperty(f);
        if (m.type === 'outgoing') for (const f of INCOMING) expect(m).not.toHaveProperty(f);
      }
      expect(kinds.size).toBe(20);
      const incomingText = list.find((m) => m.type === 'incoming' && m.typeMessage === 'textMessage')!;
      expect(incomingText).toMatchObject({
        senderId: BOB,
        senderName: 'Bob',
        senderType: 'user',
        chatType: 'user',
        textMessage: 'hello',
        senderContactName: '',
      });
      const loc = list.find((m) => m.typeMessage === 'locationMessage')!;
      expect(loc.location).toEqual({ latitude: 55.75, longitude: 37.61, forwardingScore: 0, isForwarded: false });
      const contact = list.find((m) => m.type === 'outgoing' && m.typeMessage === 'contactMessage')!;
      expect(contact.contact).toMatchObject({ displayName: 'Dave', phoneNumber: 79004445566, urlAvatar: '' });
      const reaction = list.find((m) => m.typeMessage === 'reactionMessage')!;
      expect(reaction.extendedTextMessageData).toEqual({ text: '👍' });
      const video = list.find((m) => m.typeMessage === 'videoMessage')!;
      expect(video.videoNote).toBe(true);
      expect(list.find((m) => m.type === 'outgoing')!.statusMessage).toBe('read');
    });

    it('senderContactName follows the phonebook', async () => {
      await h.call('addContact', { chatId: BOB, firstName: 'Bobby', lastName: 'B' });
      const m = (await h.call('getMessage', { chatId: BOB, idMessage: 'SEEDTEXTINCOMING0001' })).body as Message;
      expect(m.senderContactName).toBe('Bobby B');
    });

    it('getMessage: the message, "chatId not found", "Message not found by id"', async () => {
      const ok = await h.call('getMessage', { chatId: BOB, idMessage: 'SEEDTEXTINCOMING0001' });
      expect(ok.statusCode).toBe(200);
      expect(ok.body).toMatchObject({ idMessage: 'SEEDTEXTINCOMING0001', type: 'incoming', textMessage: 'hello' });
      const noChat = await h.call('getMessage', { chatId: '79009990000@c.us', idMessage: 'SEEDTEXTINCOMING0001' });
      expect(noChat.statusCode).toBe(400);
      expect(noChat.body).toEqual({ message: 'chatId not found' });
      const wrongChat = await h.call('getMessage', { chatId: ALICE, idMessage: 'SEEDTEXTINCOMING0001' });
      expect(wrongChat.body).toEqual({ message: "Message not found by id 'SEEDTEXTINCOMING0001'" });
      const short = await h.call('getMessage', { chatId: BOB, idMessage: 'ABC' });
      expect(short.body).toEqual({ message: "Validation failed. Details: 'message id' must be at least 16 symbols" });
      const empty = await h.call('getMessage', { chatId: BOB, idMessage: '' });
      expect(empty.body).toEqual({ message: "Validation failed. Details: 'idMessage' is not allowed to be empty" });
    });

    it('getChatHistory validation: count of a wrong type or beyond the safe integers', async () => {
      for (const count of ['ten', 2 ** 60, null]) {
        const r = await h.call('getChatHistory', { chatId: LONG_CHAT, count });
        expect(r.statusCode).toBe(400);
        expect(r.body).toEqual({ message: "Validation failed. Details: 'count' must be a number" });
      }
    });

    it('lastOutgoingMessages: GET, outgoing only, minutes defaults to 1440', async () => {
      const r = await h.call('lastOutgoingMessages');
      expect(r.statusCode).toBe(200);
      const list = r.body as Message[];
      expect(list.length).toBe(70); // 10 in BOB's chat + 60 in LONG_CHAT; the 2-day-old one is out
      expect(list.every((m) => m.type === 'outgoing' && 'statusMessage' in m && 'sendByApi' in m)).toBe(true);
      expect(list.some((m) => m.idMessage === OLD_OUTGOING_ID)).toBe(false);
      const wide = (await h.call('lastOutgoingMessages', undefined, { query: { minutes: '3000' } })).body as Message[];
      expect(wide.some((m) => m.idMessage === OLD_OUTGOING_ID)).toBe(true);
      const narrow = (await h.call('lastOutgoingMessages', undefined, { query: { minutes: '60' } })).body as Message[];
      expect(narrow.length).toBe(10);
      const bad = await h.call('lastOutgoingMessages', undefined, { query: { minutes: 'soon' } });
      expect(bad.body).toEqual({ message: "Validation failed. Details: 'minutes' must be a number" });
      const post = await h.call('lastOutgoingMessages', {}, { httpMethod: 'POST' });
      expect(post.statusCode).toBe(405);
      expect(post.headers.allow).toBe('GET');
    });

    it('seeded outgoing messages without a fixed status follow the network timings', async () => {
      const sent = (await h.call('getChatHistory', { chatId: LONG_CHAT, count: 1 })).body as Message[];
      // Seeded 7081 s before T0: long past readAfterMs.
      expect(sent[0]).toMatchObject({ type: 'outgoing', statusMessage: 'read', sendByApi: false });
    });

    it('group chats: chatType group, injected messages via the admin endpoint', async () => {
      const g = (await h.call('getChatHistory', { chatId: GROUP })).body as Message[];
      expect(g[0]).toMatchObject({ chatType: 'group', senderId: ALICE, senderName: 'Alice' });
      await h.clock.advance(2000);
      const inj = await h.admin('incoming', { chatId: GROUP, typeMessage: 'textMessage', textMessage: 'new', senderId: BOB });
      expect(inj.status).toBe(200);
      expect(inj.body).toMatchObject({ type: 'incoming', chatId: GROUP, senderName: 'Bob', timestamp: Math.floor((T0 + 2000) / 1000) });
      const after = (await h.call('getChatHistory', { chatId: GROUP })).body as Message[];
      expect(after.map((m) => m.textMessage)).toEqual(['new', 'hi all']);
      const bad = await h.admin('incoming', { chatId: GROUP, typeMessage: 'carrierPigeon' });
      expect(bad.status).toBe(400);
      expect(bad.body.message).toMatch(/typeMessage/);
    });
  });
}
