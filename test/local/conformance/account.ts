import { describe, expect, it } from 'vitest';
import type { ApiMethod } from '../../../src/api/methods.js';
import { PNG } from 'pngjs';
import { ALICE, BOB, conformanceConfig, T0, useLocal, type TransportKind } from '../../support/local-service.js';
import { makePng } from '../../support/media.js';

/** The account's own number in the conformance config (instance A's default phone). */
const PHONE_RE = /^\d+$/;

export function accountSuite(kind: TransportKind) {
  describe('account, queues and calls', () => {
    const h = useLocal(kind, () => ({ config: conformanceConfig() }));

    async function ok<T>(method: ApiMethod, body?: unknown, opts?: Parameters<typeof h.call>[2]): Promise<T> {
      const r = await h.call(method, body, opts);
      expect([method, r.statusCode]).toEqual([method, 200]);
      return r.body as T;
    }

    /** The notifications waiting, in order, each deleted once read. */
    async function drainNotifications(): Promise<Record<string, unknown>[]> {
      const out: Record<string, unknown>[] = [];
      for (;;) {
        const count = (await ok<{ count: number }>('getWebhooksCount')).count;
        if (count === 0) return out;
        const n = await ok<{ receiptId: number; body: Record<string, unknown> }>('receiveNotification', undefined, {
          query: { receiveTimeout: '5' },
        });
        out.push(n.body);
        await ok('deleteNotification', undefined, { pathParams: [String(n.receiptId)] });
      }
    }

    it('logout makes the account notAuthorized (stateInstanceChanged); qr then answers a PNG code, and alreadyLogged once authorized again', async () => {
      await ok('setSettings', { stateWebhook: 'yes' });
      expect(await ok('qr')).toEqual({ type: 'alreadyLogged', message: 'instance account already authorized' });
      expect(await ok('getStatusInstance')).toEqual({ statusInstance: 'online' });
      expect(await ok('logout')).toEqual({ isLogout: true });
      expect(await ok('getStateInstance')).toEqual({ stateInstance: 'notAuthorized' });
      expect(await ok('getStatusInstance')).toEqual({ statusInstance: 'offline' });
      const qr = await ok<{ type: string; message: string }>('qr');
      expect(qr.type).toBe('qrCode');
      const image = PNG.sync.read(Buffer.from(qr.message, 'base64'));
      expect([image.width, image.height]).toEqual([200, 200]);
      // Scanning it is the admin state endpoint: the account works again.
      await h.admin('state', { state: 'authorized' });
      expect(await ok('qr')).toEqual({ type: 'alreadyLogged', message: 'instance account already authorized' });
      const states = (await drainNotifications()).map((n) => [n.typeWebhook, n.stateInstance]);
      expect(states).toEqual([
        ['stateInstanceChanged', 'notAuthorized'],
        ['stateInstanceChanged', 'authorized'],
      ]);
    });

    it('getAuthorizationCode: a code while not authorized, none once authorized; the phone number is checked', async () => {
      expect(await ok('getAuthorizationCode', { phoneNumber: 79001234567 })).toEqual({ status: false, code: '' });
      await ok('logout');
      const a = await ok<{ status: boolean; code: string }>('getAuthorizationCode', { phoneNumber: 79001234567 });
      expect(a.status).toBe(true);
      expect(a.code).toMatch(/^[A-Z0-9]{8}$/);
      const bad = await h.call('getAuthorizationCode', { phoneNumber: '+7 900' });
      expect(bad.statusCode).toBe(400);
      expect((bad.body as { message: string }).message).toContain("'phoneNumber'");
    });

    it('getStateInstanceHistory lists every state change, newest first, with the account number; it survives a restart', async () => {
      await ok('logout');
      await h.clock.advance(5000);
      await h.admin('state', { state: 'authorized' });
      const history = await ok<{ stateInstance: string; timestamp: number; phoneNumber: string }[]>('getStateInstanceHistory');
      expect(history.map((r) => [r.stateInstance, r.timestamp])).toEqual([
        ['authorized', Math.floor(T0 / 1000) + 5],
        ['notAuthorized', Math.floor(T0 / 1000)],
        ['authorized', Math.floor(T0 / 1000)],
      ]);
      expect(history[0]!.phoneNumber).toMatch(/^\d+@c\.us$/);
      expect(await ok('getStateInstanceHistory', undefined, { query: { count: '1' } })).toEqual([history[0]]);
      await h.restart();
      expect(await ok('getStateInstanceHistory')).toEqual(history);
    });

    it('reboot: starting for a moment, then back; a yellowCard account comes back authorized; each change is notified', async () => {
      await ok('setSettings', { stateWebhook: 'yes' });
      await h.admin('state', { state: 'yellowCard' });
      expect(await ok('reboot')).toEqual({ isReboot: true });
      expect(await ok('getStateInstance')).toEqual({ stateInstance: 'starting' });
      const starting = await h.call('lastIncomingCalls');
      expect([starting.statusCode, starting.body]).toEqual([400, { message: 'instance in starting process try later' }]);
      await h.clock.advance(1000);
      await expect.poll(async () => (await ok<{ stateInstance: string }>('getStateInstance')).stateInstance).toBe('authorized');
      expect((await drainNotifications()).map((n) => n.stateInstance)).toEqual(['yellowCard', 'starting', 'authorized']);
      expect((await ok<{ stateInstance: string }[]>('getStateInstanceHistory')).map((r) => r.stateInstance)).toEqual([
        'authorized',
        'starting',
        'yellowCard',
        'authorized',
      ]);
    });

    it('getWaSettings: the account, with the picture setProfilePicture set; empty fields while not authorized', async () => {
      const wa = await ok<{ avatar: string; phone: string; stateInstance: string; deviceId: string }>('getWaSettings');
      expect(wa).toMatchObject({ avatar: '', stateInstance: 'authorized' });
      expect(wa.phone).toMatch(PHONE_RE);
      expect(wa.deviceId).toBe(`${wa.phone}:1@s.whatsapp.net`);
      const picture = makePng(32, 32);
      const set = await ok<{ reason: null; urlAvatar: string; setProfilePicture: boolean }>('setProfilePicture', undefined, {
        upload: { kind: 'multipart', fields: {}, file: { data: picture, fileName: 'me.png' } },
      });
      expect(set).toMatchObject({ reason: null, setProfilePicture: true });
      expect((await h.download(set.urlAvatar)).body.equals(picture)).toBe(true);
      expect((await ok<{ avatar: string }>('getWaSettings')).avatar).toBe(set.urlAvatar);
      await h.restart();
      expect((await ok<{ avatar: string }>('getWaSettings')).avatar).toBe(set.urlAvatar);
      await ok('logout');
      expect(await ok('getWaSettings')).toEqual({ avatar: '', phone: '', stateInstance: 'notAuthorized', deviceId: '' });
      const refused = await h.call('setProfilePicture', undefined, {
        upload: { kind: 'multipart', fields: {}, file: { data: picture, fileName: 'me.png' } },
      });
      expect([refused.statusCode, refused.body]).toEqual([400, { message: 'instance account not authorized' }]);
    });

    it('setProfilePicture refuses an empty file and a file that is not an image', async () => {
      const empty = await h.call('setProfilePicture', undefined, {
        upload: { kind: 'multipart', fields: {}, file: { data: Buffer.alloc(0), fileName: 'me.jpg' } },
      });
      expect([empty.statusCode, empty.body]).toEqual([400, { message: 'Validation failed. Details: File is empty' }]);
      const text = await h.call('setProfilePicture', undefined, {
        upload: { kind: 'multipart', fields: {}, file: { data: Buffer.from('not a picture at all'), fileName: 'me.txt' } },
      });
      expect(text.statusCode).toBe(400);
      expect((text.body as { message: string }).message).toContain('Unsupported media type');
    });

    it('getMessagesCount counts the send queue; getWebhooksCount and clearWebhooksQueue the notification queue (once a minute)', async () => {
      await ok('setSettings', { incomingWebhook: 'yes', outgoingAPIMessageWebhook: 'yes' });
      expect(await ok('getMessagesCount')).toEqual({ count: 0 });
      await ok('sendMessage', { chatId: ALICE, message: 'one' });
      await ok('sendMessage', { chatId: BOB, message: 'two' });
      await ok('sendTyping', { chatId: BOB });
      // The first leaves at once; the second waits its interval; a typing notice is not a message.
      expect(await ok('getMessagesCount')).toEqual({ count: (await ok<unknown[]>('showMessagesQueue')).length });
      await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: 'hi' });
      await h.admin('incoming', { chatId: BOB, typeMessage: 'textMessage', textMessage: 'hello' });
      const waiting = (await ok<{ count: number }>('getWebhooksCount')).count;
      expect(waiting).toBeGreaterThanOrEqual(2);
      expect(await ok('clearWebhooksQueue')).toEqual({ isCleared: true, reason: '' });
      expect(await ok('getWebhooksCount')).toEqual({ count: 0 });
      await h.clock.advance(15_000);
      expect(await ok('clearWebhooksQueue')).toEqual({
        isCleared: false,
        reason: 'Too many requests',
        leftTime: 45,
      });
      await h.clock.advance(45_000);
      expect(await ok('clearWebhooksQueue')).toMatchObject({ isCleared: true });
      // Cleared for good: a restart does not bring them back.
      await h.restart();
      expect((await ok<{ count: number }>('getWebhooksCount')).count).toBeLessThan(waiting);
    });

    it('a call to the account: incomingCall offer then how it ended, one record in lastIncomingCalls with its last status', async () => {
      await ok('setSettings', { incomingWebhook: 'yes', incomingCallWebhook: 'yes' });
      const rang = await h.admin('call', { from: ALICE });
      expect(rang.status).toBe(200);
      expect(rang.body.notified).toBe(true);
      const id = rang.body.call.idMessage as string;
      await h.clock.advance(3000);
      await h.admin('call', { from: ALICE, idMessage: id, status: 'missed' });
      await h.admin('call', { from: BOB, type: 'outgoing', status: 'pickUp', isVideo: true });
      const calls = (await drainNotifications()).filter((n) => n.typeWebhook === 'incomingCall');
      expect(calls).toEqual([
        expect.objectContaining({ from: ALICE, status: 'offer', idMessage: id, timestamp: Math.floor(T0 / 1000) }),
        expect.objectContaining({ from: ALICE, status: 'missed', idMessage: id, timestamp: Math.floor(T0 / 1000) + 3 }),
      ]);
      expect(calls[0]!.instanceData).toMatchObject({ typeInstance: 'whatsapp' });
      expect(await ok('lastIncomingCalls')).toEqual([
        { type: 'incoming', idMessage: id, timestamp: Math.floor(T0 / 1000) + 3, from: ALICE, status: 'missed', isVideo: false },
      ]);
      const out = await ok<{ type: string; from: string; status: string; isVideo: boolean }[]>('lastOutgoingCalls');
      expect(out).toEqual([expect.objectContaining({ type: 'outgoing', from: BOB, status: 'pickUp', isVideo: true })]);
      await h.clock.advance(2 * 60_000);
      expect(await ok('lastIncomingCalls', undefined, { query: { minutes: '1' } })).toEqual([]);
      await h.restart();
      expect(await ok<unknown[]>('lastIncomingCalls')).toHaveLength(1);
    });

    it('incomingCall is not produced while incomingCallWebhook is off; the call is still in the journal', async () => {
      await ok('setSettings', { incomingWebhook: 'yes' });
      const r = await h.admin('call', { from: ALICE, status: 'declined' });
      expect(r.body.notified).toBe(false);
      expect(await ok('getWebhooksCount')).toEqual({ count: 0 });
      expect(await ok<unknown[]>('lastIncomingCalls')).toHaveLength(1);
      const bad = await h.admin('call', { from: 'alice', status: 'ringing' });
      expect([bad.status, bad.body]).toEqual([
        400,
        { message: "Validation failed. Details: 'from' must be a chat id such as 79001234567@c.us" },
      ]);
    });

    it('a contact blocking the account raises incomingBlock with the documented body, once per block; unblocking raises none', async () => {
      await ok('setSettings', { incomingBlockWebhook: 'yes' });
      const blocked = await h.admin('block', { chatId: ALICE });
      expect([blocked.status, blocked.body]).toEqual([200, { chatId: ALICE, blocked: true, notified: true }]);
      // Blocking again while blocked is no new event; unblocking is not documented as a notification.
      expect((await h.admin('block', { chatId: ALICE })).body.notified).toBe(false);
      expect((await h.admin('block', { chatId: ALICE, blocked: false })).body).toEqual({ chatId: ALICE, blocked: false, notified: false });
      await h.clock.advance(2000);
      // The service's default chat id: WhatsApp no longer tells who blocked.
      expect((await h.admin('block', {})).body).toEqual({ chatId: '10000000000@c.us', blocked: true, notified: true });
      const blocks = (await drainNotifications()).filter((n) => n.typeWebhook === 'incomingBlock');
      expect(blocks).toEqual([
        {
          typeWebhook: 'incomingBlock',
          instanceData: expect.objectContaining({ typeInstance: 'whatsapp' }),
          timestamp: Math.floor(T0 / 1000),
          chatId: ALICE,
          chatState: 'blocked',
        },
        expect.objectContaining({ chatId: '10000000000@c.us', chatState: 'blocked', timestamp: Math.floor(T0 / 1000) + 2 }),
      ]);
    });

    it('incomingBlock is not produced while incomingBlockWebhook is off, and a bad block body names its field', async () => {
      await ok('setSettings', { incomingWebhook: 'yes' });
      expect((await h.admin('block', { chatId: BOB })).body).toEqual({ chatId: BOB, blocked: true, notified: false });
      expect(await ok('getWebhooksCount')).toEqual({ count: 0 });
      const bad = await h.admin('block', { chatId: BOB, blocked: 'yes' });
      expect([bad.status, bad.body]).toEqual([400, { message: "Validation failed. Details: 'blocked' must be a boolean" }]);
      const badChat = await h.admin('block', { chatId: 'bob' });
      expect([badChat.status, badChat.body]).toEqual([
        400,
        { message: "Validation failed. Details: 'chatId' must be a chat id such as 79001234567@c.us" },
      ]);
    });
  });
}
