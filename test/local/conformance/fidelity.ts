/**
 * What protects an account on the real service, as the local service does it:
 * every documented setting, the statuses that cannot be switched off, a
 * yellowCard instance holding its queue, and the journals' statuses of
 * messages that went nowhere.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NotificationBody, ReceivedNotification } from '../../../src/api/notifications.js';
import type { Message } from '../../../src/api/types.js';
import { ALICE, conformanceConfig, NOBODY, startLocal, type LocalUnderTest, type TransportKind } from '../../support/local-service.js';
import type { ManualClock } from '../../../src/util/clock.js';

/** Every switch getSettings documents, each with the value setSettings is given here. */
const DOCUMENTED_SWITCHES = {
  markIncomingMessagesReaded: 'yes',
  markIncomingMessagesReadedOnReply: 'yes',
  outgoingWebhook: 'no',
  outgoingMessageWebhook: 'yes',
  outgoingAPIMessageWebhook: 'no',
  incomingWebhook: 'yes',
  stateWebhook: 'yes',
  keepOnlineStatus: 'yes',
  pollMessageWebhook: 'yes',
  incomingCallWebhook: 'yes',
  incomingBlockWebhook: 'yes',
  deviceWebhook: 'yes',
  editedMessageWebhook: 'yes',
  deletedMessageWebhook: 'yes',
  statusInstanceWebhook: 'no',
  enableMessagesHistory: 'no',
  sharedSession: 'no',
} as const;

export function fidelitySuite(kind: TransportKind) {
  describe('settings, unswitchable statuses, yellowCard, journal statuses', () => {
    let h: LocalUnderTest<ManualClock>;
    beforeEach(async () => {
      h = await startLocal({ kind, config: conformanceConfig() });
    });
    afterEach(() => h.close());

    /** Every notification queued so far: read up to a sentinel incoming message (incomingWebhook must be on). */
    async function drain(): Promise<NotificationBody[]> {
      await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: 'sentinel' });
      const out: NotificationBody[] = [];
      for (;;) {
        const n = (await h.call('receiveNotification', undefined, { query: { receiveTimeout: '5' } })).body as ReceivedNotification;
        await h.call('deleteNotification', undefined, { pathParams: [String(n.receiptId)] });
        if (n.body.typeWebhook === 'incomingMessageReceived') return out;
        out.push(n.body);
      }
    }
    async function sendText(chatId: string, message = 'hello'): Promise<string> {
      const r = await h.call('sendMessage', { chatId, message });
      expect(r.statusCode).toBe(200);
      return (r.body as { idMessage: string }).idMessage;
    }

    it('getSettings returns every documented field, off by default; setSettings accepts, stores and returns each', async () => {
      const before = (await h.call('getSettings')).body as Record<string, unknown>;
      for (const key of Object.keys(DOCUMENTED_SWITCHES)) expect(before[key], key).toBe('no');
      expect(before).toMatchObject({ countryInstance: '', typeAccount: '', webhookUrl: '', webhookUrlToken: '' });
      const set = await h.call('setSettings', { ...DOCUMENTED_SWITCHES, delaySendMessagesMilliseconds: 86_400_000 });
      expect(set).toMatchObject({ statusCode: 200, body: { saveSettings: true } });
      await h.restart();
      expect((await h.call('getSettings')).body).toMatchObject({ ...DOCUMENTED_SWITCHES, delaySendMessagesMilliseconds: 86_400_000 });
      expect(await h.call('setSettings', { keepOnlineStatus: 'maybe' })).toMatchObject({
        statusCode: 400,
        body: { message: expect.stringContaining("'keepOnlineStatus' must be one of [yes, no]") },
      });
    });

    it('noAccount and failed statuses arrive although outgoingWebhook is no; sent/delivered do not', async () => {
      await h.call('setSettings', { outgoingWebhook: 'no', outgoingAPIMessageWebhook: 'no', incomingWebhook: 'yes' });
      const nobody = await sendText(NOBODY);
      await h.clock.advance(1000);
      const alice = await sendText(ALICE);
      expect(await h.settled(nobody)).toBe('sent');
      expect(await h.settled(alice)).toBe('sent');
      await h.clock.advance(10_000);
      const early = await drain();
      await h.admin('state', { state: 'notAuthorized' });
      const stuck = await sendText(ALICE, 'never leaves');
      await h.clock.advance(24 * 3600_000);
      expect(await h.settled(stuck)).toBe('failed');
      const statuses = [...early, ...(await drain())]
        .filter((b) => b.typeWebhook === 'outgoingMessageStatus')
        .map((b) => `${(b as { idMessage: string }).idMessage}:${(b as { status: string }).status}`);
      expect(statuses).toEqual([`${nobody}:noAccount`, `${stuck}:failed`]);
    });

    it('yellowCard: account methods answer, but sending is suspended: messages wait (pending) until it passes', async () => {
      await h.admin('state', { state: 'yellowCard' });
      const id = await sendText(ALICE);
      await h.clock.advance(60_000);
      expect((await h.call('getStateInstance')).body).toEqual({ stateInstance: 'yellowCard' });
      expect((await h.call('checkWhatsapp', { phoneNumber: 79001112233 })).statusCode).toBe(200);
      expect(((await h.call('showMessagesQueue')).body as { messageID: string }[]).map((q) => q.messageID)).toEqual([id]);
      const journal = (await h.call('lastOutgoingMessages', undefined, { query: { minutes: '5' } })).body as Message[];
      expect(journal.find((m) => m.idMessage === id)?.statusMessage).toBe('pending');
      await h.admin('state', { state: 'authorized' });
      expect(await h.settled(id)).toBe('sent');
    });

    it('a message held by a yellowCard for 24 h fails, saying so', async () => {
      await h.call('setSettings', { outgoingWebhook: 'yes', incomingWebhook: 'yes' });
      await h.admin('state', { state: 'yellowCard' });
      const id = await sendText(ALICE);
      await h.clock.advance(24 * 3600_000);
      expect(await h.settled(id)).toBe('failed');
      const failed = (await drain()).find((b) => b.typeWebhook === 'outgoingMessageStatus');
      expect(failed).toMatchObject({
        idMessage: id,
        status: 'failed',
        description: 'not sent within 24 hours: sending was suspended (yellowCard)',
      });
    });

    it('a message to a number without an account is noAccount in every journal, not sent', async () => {
      const id = await sendText(NOBODY);
      expect(await h.settled(id)).toBe('sent');
      await h.clock.advance(60_000);
      expect(((await h.call('getMessage', { chatId: NOBODY, idMessage: id })).body as Message).statusMessage).toBe('noAccount');
      const journal = (await h.call('lastOutgoingMessages', undefined, { query: { minutes: '5' } })).body as Message[];
      expect(journal.find((m) => m.idMessage === id)?.statusMessage).toBe('noAccount');
      expect(((await h.call('getChatHistory', { chatId: NOBODY })).body as Message[])[0]?.statusMessage).toBe('noAccount');
    });
  });
}
