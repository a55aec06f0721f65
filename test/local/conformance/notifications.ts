import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { NotificationBody, ReceivedNotification } from '../../../src/api/notifications.js';
import type { Message } from '../../../src/api/types.js';
import {
  A,
  ALICE,
  conformanceConfig,
  HIDDEN,
  NOBODY,
  startLocal,
  T0,
  type LocalUnderTest,
  type TransportKind,
} from '../../support/local-service.js';
import { startFileServer, type FileServer } from '../../support/file-server.js';
import { waitFor } from '../../support/wait.js';
import { makePdf, makePng } from '../../support/media.js';
import type { ManualClock } from '../../../src/util/clock.js';
import { defaultPhone } from '../../../src/local/config.js';

const REPLIER = '79004445566@c.us';
const ALL_ON = {
  incomingWebhook: 'yes',
  outgoingWebhook: 'yes',
  outgoingAPIMessageWebhook: 'yes',
  outgoingMessageWebhook: 'yes',
  stateWebhook: 'yes',
};

export function notificationsSuite(kind: TransportKind) {
  describe('notifications, settings, state, sendMessage', () => {
    let h: LocalUnderTest<ManualClock>;
    let files: FileServer;
    beforeAll(async () => {
      files = await startFileServer({
        '/doc': { body: makePdf(), contentType: 'application/pdf' },
        '/photo': { body: makePng(32, 24), contentType: 'image/png' },
      });
    });
    afterAll(() => files.close());
    beforeEach(async () => {
      h = await startLocal({
        kind,
        config: conformanceConfig((raw) => {
          const instances = raw.instances as Record<string, unknown>[];
          instances[0]!.settings = ALL_ON;
          const network = raw.network as { accounts: unknown[] };
          network.accounts.push({ phone: 79004445566, name: 'Rita', replies: [{ text: 'STOP', afterMs: 2000 }] });
        }),
      });
    });
    afterEach(() => h.close());

    async function receive(receiveTimeout = 5): Promise<ReceivedNotification | null> {
      const r = await h.call('receiveNotification', undefined, { query: { receiveTimeout: String(receiveTimeout) } });
      expect(r.statusCode).toBe(200);
      return r.body as ReceivedNotification | null;
    }
    /**
     * receiveNotification(timeout) once the service waits on it: its sleep until now + timeout
     * is on the service clock (over HTTP the request may still be on its way).
     */
    async function receiving(receiveTimeout: number): Promise<{ answer: Promise<ReceivedNotification | null> }> {
      const until = h.clock.now() + receiveTimeout * 1000;
      const answer = receive(receiveTimeout);
      await waitFor('receiveNotification to wait on the service clock', () => h.clock.wakeTimes().includes(until));
      return { answer };
    }
    async function del(receiptId: number) {
      return h.call('deleteNotification', undefined, { pathParams: [String(receiptId)] });
    }
    /** The next notification, deleted once read. */
    async function next(): Promise<NotificationBody> {
      const n = await receive();
      expect(n).not.toBeNull();
      expect((await del(n!.receiptId)).body).toEqual({ result: true });
      return n!.body;
    }
    /** The next notification of this type; the ones before it are deleted. */
    async function nextOf(type: string): Promise<NotificationBody> {
      for (;;) {
        const b = await next();
        if (b.typeWebhook === type) return b;
      }
    }
    async function sendText(chatId: string, message = 'hello'): Promise<string> {
      const r = await h.call('sendMessage', { chatId, message });
      expect(r.statusCode).toBe(200);
      return (r.body as { idMessage: string }).idMessage;
    }

    it('getStateInstance; a state change raises stateInstanceChanged', async () => {
      expect((await h.call('getStateInstance')).body).toEqual({ stateInstance: 'authorized' });
      expect((await h.admin('state', { state: 'notAuthorized' })).body).toEqual({ state: 'notAuthorized' });
      expect((await h.call('getStateInstance')).body).toEqual({ stateInstance: 'notAuthorized' });
      const body = await next();
      expect(body).toEqual({
        typeWebhook: 'stateInstanceChanged',
        instanceData: { idInstance: Number(A.idInstance), wid: `${defaultPhone(A.idInstance)}@c.us`, typeInstance: 'whatsapp' },
        timestamp: Math.floor(T0 / 1000),
        stateInstance: 'notAuthorized',
      });
    });

    it('sendMessage: pending while queued, then outgoingAPIMessageReceived and every status change in order', async () => {
      const first = await sendText(ALICE, 'one');
      const id = await sendText(ALICE, 'two');
      const queue = (await h.call('showMessagesQueue')).body as {
        messageID: string;
        type: string;
        body: { message?: string };
        statusMessage: string;
      }[];
      expect(queue.map((q) => q.messageID)).toContain(id);
      expect(queue.find((q) => q.messageID === id)).toMatchObject({
        type: 'sendMessage',
        body: { message: 'two' },
        statusMessage: 'pending',
      });
      const listed = (await h.call('lastOutgoingMessages', undefined, { query: { minutes: '5' } })).body as Message[];
      expect(listed.find((m) => m.idMessage === id)?.statusMessage).toBe('pending');
      expect(await h.settled(first)).toBe('sent');
      expect(await next()).toMatchObject({
        typeWebhook: 'outgoingAPIMessageReceived',
        idMessage: first,
        messageData: { typeMessage: 'textMessage', textMessageData: { textMessage: 'one' } },
      });
      expect(await next()).toMatchObject({
        typeWebhook: 'outgoingMessageStatus',
        idMessage: first,
        status: 'sent',
        chatId: ALICE,
        sendByApi: true,
      });
      await h.clock.advance(1000);
      expect(await h.settled(id)).toBe('sent');
      const got = [await next(), await next(), await next()].map(
        (b) => `${b.typeWebhook}:${'status' in b ? b.status : ''}:${'idMessage' in b ? b.idMessage : ''}`,
      );
      // Due at the same instant: the two messages' notifications may interleave; each message's own are in order.
      expect(got.sort()).toEqual(
        [`outgoingMessageStatus:delivered:${first}`, `outgoingAPIMessageReceived::${id}`, `outgoingMessageStatus:sent:${id}`].sort(),
      );
      await h.clock.advance(5000);
      const later = [await next(), await next(), await next()].map(
        (b) => `${'status' in b ? b.status : ''}:${'idMessage' in b ? b.idMessage : ''}`,
      );
      expect(later.sort()).toEqual([`delivered:${id}`, `read:${first}`, `read:${id}`].sort());
      const m = (await h.call('getMessage', { chatId: ALICE, idMessage: id })).body as Message;
      expect(m).toMatchObject({ typeMessage: 'textMessage', textMessage: 'two', statusMessage: 'read', sendByApi: true });
    });

    it('a queued file is typed from its file name from the moment it is queued: the same type pending and sent, in every view', async () => {
      const first = await sendText(ALICE, 'holds the queue');
      const r = await h.call('sendFileByUrl', { chatId: ALICE, urlFile: files.url('/photo'), fileName: 'holiday.png', caption: 'us' });
      const id = (r.body as { idMessage: string }).idMessage;
      // Still queued behind the text: every view shows it pending, as an image.
      const pending = (await h.call('lastOutgoingMessages', undefined, { query: { minutes: '5' } })).body as Message[];
      expect(pending.find((m) => m.idMessage === id)).toMatchObject({ typeMessage: 'imageMessage', statusMessage: 'pending' });
      expect((await h.call('getMessage', { chatId: ALICE, idMessage: id })).body).toMatchObject({
        typeMessage: 'imageMessage',
        statusMessage: 'pending',
        fileName: 'holiday.png',
      });
      expect((await h.admin('queue')).body.pending).toContainEqual(expect.objectContaining({ idMessage: id, typeMessage: 'imageMessage' }));
      expect(await h.settled(first)).toBe('sent');
      await h.clock.advance(1000);
      expect(await h.settled(id)).toBe('sent');
      const sent = (await h.call('lastOutgoingMessages', undefined, { query: { minutes: '5' } })).body as Message[];
      expect(sent.find((m) => m.idMessage === id)).toMatchObject({ typeMessage: 'imageMessage', statusMessage: 'sent' });
      expect((await h.call('getMessage', { chatId: ALICE, idMessage: id })).body).toMatchObject({ typeMessage: 'imageMessage' });
      expect(((await h.call('getChatHistory', { chatId: ALICE })).body as Message[])[0]).toMatchObject({
        idMessage: id,
        typeMessage: 'imageMessage',
      });
      expect(await nextOf('outgoingAPIMessageReceived')).toMatchObject({ idMessage: first });
      expect(await nextOf('outgoingAPIMessageReceived')).toMatchObject({ idMessage: id, messageData: { typeMessage: 'imageMessage' } });
    });

    it('noAccount for a recipient without an account; failed, with the reason, for a file that cannot be fetched', async () => {
      const id = await sendText(NOBODY);
      await next(); // outgoingAPIMessageReceived
      expect(await next()).toMatchObject({ typeWebhook: 'outgoingMessageStatus', idMessage: id, status: 'noAccount' });
      await h.clock.advance(1000);
      const r = await h.call('sendFileByUrl', { chatId: ALICE, urlFile: files.url('/missing.pdf'), fileName: 'x.pdf' });
      const fid = (r.body as { idMessage: string }).idMessage;
      expect(await h.settled(fid)).toBe('failed');
      const failed = await next();
      expect(failed).toMatchObject({ typeWebhook: 'outgoingMessageStatus', idMessage: fid, status: 'failed', chatId: ALICE });
      expect((failed as { description: string }).description).toMatch(/HTTP 404/);
    });

    it('not authorized: messages stay queued, account methods answer 400 with the service text; authorizing releases them', async () => {
      await h.admin('state', { state: 'notAuthorized' });
      const id = await sendText(ALICE);
      await h.clock.advance(10_000);
      expect(((await h.call('showMessagesQueue')).body as unknown[]).length).toBe(1);
      const refused = await h.call('checkWhatsapp', { phoneNumber: 79001112233 });
      expect(refused).toMatchObject({ statusCode: 400, body: { message: 'instance account not authorized' } });
      await h.admin('state', { state: 'starting' });
      expect((await h.call('lastIncomingMessages')).body).toEqual({ message: 'instance in starting process try later' });
      await h.admin('state', { state: 'authorized' });
      expect(await h.settled(id)).toBe('sent');
      expect((await h.call('showMessagesQueue')).body).toEqual([]);
    });

    it('a message that waits 24 h for the instance to be authorized is dropped and reported failed', async () => {
      await h.admin('state', { state: 'notAuthorized' });
      await nextOf('stateInstanceChanged');
      const id = await sendText(ALICE);
      await h.clock.advance(24 * 3600_000);
      expect(await h.settled(id)).toBe('failed');
      const failed = await nextOf('outgoingMessageStatus');
      expect(failed).toMatchObject({
        idMessage: id,
        status: 'failed',
        description: 'not sent within 24 hours: the instance was not authorized',
      });
      expect((await h.call('showMessagesQueue')).body).toEqual([]);
    });

    it('clearMessagesQueue drops what waits', async () => {
      await sendText(ALICE, 'a');
      await sendText(ALICE, 'b');
      await sendText(ALICE, 'c');
      expect((await h.call('clearMessagesQueue')).body).toEqual({ isCleared: true });
      expect(((await h.call('showMessagesQueue')).body as unknown[]).length).toBeLessThanOrEqual(1);
      await h.restart();
      expect(((await h.call('showMessagesQueue')).body as unknown[]).length).toBeLessThanOrEqual(1);
    });

    it('getMessage finds a waiting message by its id and chat, also after a restart, and not once the queue is cleared', async () => {
      await sendText(ALICE, 'a');
      await sendText(ALICE, 'b');
      const id = await sendText(ALICE, 'c');
      const waiting = { idMessage: id, chatId: ALICE, statusMessage: 'pending', textMessage: 'c' };
      expect((await h.call('getMessage', { chatId: ALICE, idMessage: id })).body).toMatchObject(waiting);
      // The same id asked in another chat is not that message.
      expect((await h.call('getMessage', { chatId: REPLIER, idMessage: id })).statusCode).toBe(400);
      await h.restart();
      expect((await h.call('getMessage', { chatId: ALICE, idMessage: id })).body).toMatchObject(waiting);
      await h.call('clearMessagesQueue');
      expect((await h.call('getMessage', { chatId: ALICE, idMessage: id })).statusCode).toBe(400);
    });

    it('checkWhatsapp follows checkAccount: an account, a hidden number, no account', async () => {
      expect((await h.call('checkWhatsapp', { phoneNumber: 79001112233 })).body).toEqual({ existsWhatsapp: true, chatId: ALICE });
      expect((await h.call('checkWhatsapp', { phoneNumber: HIDDEN })).body).toEqual({ existsWhatsapp: false, chatId: '' });
      expect((await h.call('checkWhatsapp', { phoneNumber: 79009990000 })).body).toEqual({ existsWhatsapp: false, chatId: '' });
    });

    it('an injected incoming message: lastIncomingMessages and incomingMessageReceived', async () => {
      await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: 'hi there' });
      const list = (await h.call('lastIncomingMessages', undefined, { query: { minutes: '10' } })).body as Message[];
      expect(list.map((m) => m.textMessage)).toEqual(['hi there']);
      expect(await next()).toMatchObject({
        typeWebhook: 'incomingMessageReceived',
        senderData: { chatId: ALICE, sender: ALICE, senderName: 'Alice' },
        messageData: { typeMessage: 'textMessage', textMessageData: { textMessage: 'hi there' } },
      });
    });

    it('receiveNotification waits up to receiveTimeout (service clock) and wakes as soon as one arrives; null after the timeout', async () => {
      const { answer: waiting } = await receiving(30);
      await h.clock.advance(29_000);
      await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: 'now' });
      expect((await waiting)?.body).toMatchObject({ typeWebhook: 'incomingMessageReceived' });
      await del((await receive())!.receiptId);
      const { answer: empty } = await receiving(5);
      await h.clock.advance(5000);
      expect(await empty).toBeNull();
    });

    it('FIFO; a notification is gone only after deleteNotification; both survive a restart; receiptIds are never reused', async () => {
      await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: 'first' });
      await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: 'second' });
      const a = await receive();
      expect(await receive()).toEqual(a); // not deleted: the same one again
      expect((await del(a!.receiptId)).body).toEqual({ result: true });
      expect((await del(a!.receiptId)).body).toEqual({ result: false });
      await h.restart();
      const b = await receive();
      expect(b!.receiptId).toBeGreaterThan(a!.receiptId);
      expect((b!.body as { messageData: { textMessageData: { textMessage: string } } }).messageData.textMessageData.textMessage).toBe(
        'second',
      );
      await del(b!.receiptId);
      await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: 'third' });
      expect((await receive())!.receiptId).toBeGreaterThan(b!.receiptId);
    });

    it('a notification not received within 24 h is dropped', async () => {
      await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: 'old' });
      await h.clock.advance(24 * 3600_000 + 1);
      const { answer: empty } = await receiving(5);
      await h.clock.advance(5000);
      expect(await empty).toBeNull();
    });

    it('settings: real defaults, setSettings → {saveSettings: true}, kept across a restart; the switches decide what is produced', async () => {
      const s = (await h.call('getSettings')).body as Record<string, unknown>;
      expect(s).toMatchObject({
        webhookUrl: '',
        webhookUrlToken: '',
        delaySendMessagesMilliseconds: 1000,
        markIncomingMessagesReaded: 'no',
        ...ALL_ON,
      });
      expect((await h.call('setSettings', { incomingWebhook: 'no', delaySendMessagesMilliseconds: 2000 })).body).toEqual({
        saveSettings: true,
      });
      await h.restart();
      expect((await h.call('getSettings')).body).toMatchObject({
        incomingWebhook: 'no',
        delaySendMessagesMilliseconds: 2000,
        stateWebhook: 'yes',
      });
      await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: 'unheard' });
      await h.admin('state', { state: 'starting' });
      expect(await next()).toMatchObject({ typeWebhook: 'stateInstanceChanged', stateInstance: 'starting' });
      const bad = await h.call('setSettings', {});
      expect(bad.statusCode).toBe(400);
      expect((bad.body as { message: string }).message).toMatch(/^Validation failed\. Details: at least one parameter/);
      const badSwitch = await h.call('setSettings', { incomingWebhook: 'maybe' });
      expect(badSwitch.body).toEqual({ message: "Validation failed. Details: 'incomingWebhook' must be one of [yes, no]" });
    });

    it('bad parameters: receiveTimeout out of 5..60, receiptId not a number, message too long', async () => {
      const r = await h.call('receiveNotification', undefined, { query: { receiveTimeout: '4' } });
      expect(r).toMatchObject({
        statusCode: 400,
        body: { message: "Validation failed. Details: 'receiveTimeout' must be greater than or equal to 5" },
      });
      const d = await h.call('deleteNotification', undefined, { pathParams: ['abc'] });
      expect(d).toMatchObject({ statusCode: 400, body: { message: "Validation failed. Details: 'receiptId' must be a number" } });
      const long = await h.call('sendMessage', { chatId: ALICE, message: 'x'.repeat(20001) });
      expect(long.body).toEqual({
        message: "Validation failed. Details: 'message' length must be less than or equal to 20000 characters long",
      });
    });

    it('network replies: the account answers its first message after afterMs, as an incoming message and a notification', async () => {
      const id = await sendText(REPLIER, 'Big sale!');
      expect(await h.settled(id)).toBe('sent');
      await h.clock.advance(2000);
      const reply = await nextOf('incomingMessageReceived');
      expect(reply).toMatchObject({
        typeWebhook: 'incomingMessageReceived',
        senderData: { chatId: REPLIER, sender: REPLIER },
        messageData: { typeMessage: 'textMessage', textMessageData: { textMessage: 'STOP' } },
      });
      const history = (await h.call('getChatHistory', { chatId: REPLIER, count: 10 })).body as Message[];
      expect(history.map((m) => `${m.type}:${m.textMessage}`)).toEqual(['incoming:STOP', 'outgoing:Big sale!']);
      // Only the first message is answered.
      await h.clock.advance(1000);
      const second = await sendText(REPLIER, 'Another sale');
      expect(await h.settled(second)).toBe('sent');
      await h.clock.advance(10_000);
      expect(
        ((await h.call('getChatHistory', { chatId: REPLIER, count: 10 })).body as Message[]).filter((m) => m.type === 'incoming'),
      ).toHaveLength(1);
    });
  });
}
