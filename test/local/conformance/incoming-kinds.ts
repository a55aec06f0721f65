import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NotificationBody, ReceivedNotification } from '../../../src/api/notifications.js';
import type { Message } from '../../../src/api/types.js';
import type { ManualClock } from '../../../src/util/clock.js';
import { defaultPhone } from '../../../src/local/config.js';
import { A, ALICE, conformanceConfig, startLocal, type LocalUnderTest, type TransportKind } from '../../support/local-service.js';

const OWN = `${defaultPhone(A.idInstance)}@c.us`;
const VCARD = 'BEGIN:VCARD\nVERSION:3.0\nFN:Victor\nEND:VCARD';
const F = { forwardingScore: 0, isForwarded: false };

/**
 * Every documented incoming kind, injected as the admin `incoming` endpoint
 * takes it (what the network scripts and a flow test's messages use), with
 * the messageData its notification carries.
 */
const KINDS: { input: Record<string, unknown>; messageData: Record<string, unknown> }[] = [
  {
    input: { typeMessage: 'textMessage', textMessage: 'hi' },
    messageData: { typeMessage: 'textMessage', textMessageData: { textMessage: 'hi' } },
  },
  {
    input: { typeMessage: 'extendedTextMessage', textMessage: 'https://x.example', preview: { title: 'X', description: 'd' } },
    messageData: {
      typeMessage: 'extendedTextMessage',
      extendedTextMessageData: { text: 'https://x.example', title: 'X', description: 'd', previewType: 'NONE', jpegThumbnail: '', ...F },
    },
  },
  {
    input: {
      typeMessage: 'imageMessage',
      fileName: 'a.jpg',
      mimeType: 'image/jpeg',
      caption: 'pic',
      downloadUrl: 'https://files.example/a.jpg',
    },
    messageData: {
      typeMessage: 'imageMessage',
      fileMessageData: {
        downloadUrl: 'https://files.example/a.jpg',
        caption: 'pic',
        fileName: 'a.jpg',
        jpegThumbnail: '',
        mimeType: 'image/jpeg',
        isAnimated: false,
        ...F,
      },
    },
  },
  {
    input: { typeMessage: 'stickerMessage', fileName: 's.webp', mimeType: 'image/webp', isAnimated: true },
    messageData: {
      typeMessage: 'stickerMessage',
      fileMessageData: {
        downloadUrl: '',
        caption: '',
        fileName: 's.webp',
        jpegThumbnail: '',
        mimeType: 'image/webp',
        isAnimated: true,
        ...F,
      },
    },
  },
  {
    input: { typeMessage: 'locationMessage', location: { latitude: 1.5, longitude: 2.5, nameLocation: 'Home', address: 'Street' } },
    messageData: {
      typeMessage: 'locationMessage',
      locationMessageData: { nameLocation: 'Home', address: 'Street', jpegThumbnail: '', latitude: 1.5, longitude: 2.5, ...F },
    },
  },
  {
    input: { typeMessage: 'contactMessage', contact: { displayName: 'Victor', vcard: VCARD } },
    messageData: { typeMessage: 'contactMessage', contactMessageData: { displayName: 'Victor', vcard: VCARD, ...F } },
  },
  {
    input: {
      typeMessage: 'contactsArrayMessage',
      contacts: [
        { displayName: 'Victor', vcard: VCARD },
        { displayName: 'Oleg', vcard: VCARD },
      ],
    },
    messageData: {
      typeMessage: 'contactsArrayMessage',
      messageData: {
        contacts: [
          { displayName: 'Victor', vcard: VCARD },
          { displayName: 'Oleg', vcard: VCARD },
        ],
        ...F,
      },
    },
  },
  {
    input: { typeMessage: 'pollMessage', pollMessageData: { name: 'Q?', options: ['a', 'b'] } },
    messageData: {
      typeMessage: 'pollMessage',
      pollMessageData: { name: 'Q?', options: [{ optionName: 'a' }, { optionName: 'b' }], multipleAnswers: false },
    },
  },
  {
    input: {
      typeMessage: 'pollUpdateMessage',
      pollMessageData: { stanzaId: 'BAE53AFDD5F0C000', name: 'Q?', votes: [{ optionName: 'a', optionVoters: [ALICE] }] },
    },
    messageData: {
      typeMessage: 'pollUpdateMessage',
      pollMessageData: {
        stanzaId: 'BAE53AFDD5F0C000',
        name: 'Q?',
        votes: [{ optionName: 'a', optionVoters: [ALICE] }],
        multipleAnswers: false,
      },
    },
  },
  {
    input: {
      typeMessage: 'reactionMessage',
      reaction: '👍',
      quotedMessage: { stanzaId: 'A16014FAC9F5382E7B9CEEFEF1FFEB6F', participant: OWN },
    },
    messageData: {
      typeMessage: 'reactionMessage',
      extendedTextMessageData: { text: '👍' },
      quotedMessage: { stanzaId: 'A16014FAC9F5382E7B9CEEFEF1FFEB6F', participant: OWN },
    },
  },
  {
    input: {
      typeMessage: 'buttonsResponseMessage',
      buttonsResponseMessage: { stanzaId: 'BAE53AFDD5F0C137', selectedButtonId: '1', selectedButtonText: 'Green' },
    },
    messageData: {
      typeMessage: 'buttonsResponseMessage',
      buttonsResponseMessage: { stanzaId: 'BAE53AFDD5F0C137', selectedButtonId: '1', selectedButtonText: 'Green' },
    },
  },
  {
    input: {
      typeMessage: 'listResponseMessage',
      listResponseMessage: { stanzaId: 'BAE53AFDD5F0C137', title: 'Option 2', singleSelectReply: 'option2' },
    },
    messageData: {
      typeMessage: 'listResponseMessage',
      listResponseMessage: { stanzaId: 'BAE53AFDD5F0C137', title: 'Option 2', listType: 1, singleSelectReply: 'option2' },
    },
  },
  {
    input: {
      typeMessage: 'templateButtonReplyMessage',
      templateButtonReplyMessage: { stanzaId: 'BAE53AFDD5F0C137', selectedIndex: 2, selectedId: 'id1', selectedDisplayText: 'red' },
    },
    messageData: {
      typeMessage: 'templateButtonReplyMessage',
      templateButtonReplyMessage: { stanzaId: 'BAE53AFDD5F0C137', selectedIndex: 2, selectedId: 'id1', selectedDisplayText: 'red' },
    },
  },
  {
    input: { typeMessage: 'buttonsMessage', buttonsMessage: { contentText: 'Hello', buttons: [{ buttonId: '1', buttonText: 'green' }] } },
    messageData: {
      typeMessage: 'buttonsMessage',
      buttonsMessage: { contentText: 'Hello', footer: '', buttons: [{ buttonId: '1', buttonText: 'green' }], ...F },
    },
  },
  {
    input: {
      typeMessage: 'interactiveButtonsReply',
      interactiveButtonsReply: { body: 'Coming?', buttons: [{ buttonId: 'y', buttonText: 'Yes' }] },
    },
    messageData: {
      typeMessage: 'interactiveButtonsReply',
      interactiveButtonsReply: { header: '', body: 'Coming?', footer: '', buttons: [{ buttonId: 'y', buttonText: 'Yes' }] },
    },
  },
];

export function incomingKindsSuite(kind: TransportKind) {
  describe('incoming message kinds', () => {
    let h: LocalUnderTest<ManualClock>;
    beforeEach(async () => {
      h = await startLocal({
        kind,
        config: conformanceConfig((raw) => {
          (raw.instances as Record<string, unknown>[])[0]!.settings = { incomingWebhook: 'yes', pollMessageWebhook: 'yes' };
        }),
      });
    });
    afterEach(() => h.close());

    async function arrive(input: Record<string, unknown>): Promise<{ stored: Message; body: NotificationBody }> {
      const { status, body: stored } = await h.admin('incoming', { chatId: ALICE, ...input });
      expect(status, JSON.stringify(stored)).toBe(200);
      const r = await h.call('receiveNotification', undefined, { query: { receiveTimeout: '5' } });
      const n = r.body as ReceivedNotification;
      await h.call('deleteNotification', undefined, { pathParams: [String(n.receiptId)] });
      return { stored: stored as Message, body: n.body };
    }

    it.each(KINDS.map((k) => [k.input.typeMessage as string, k] as const))(
      '%s: its documented notification body, and the same message in the journal',
      async (_name, k) => {
        const { stored, body } = await arrive(k.input);
        expect(body).toMatchObject({
          typeWebhook: 'incomingMessageReceived',
          idMessage: stored.idMessage,
          senderData: { chatId: ALICE, sender: ALICE },
        });
        expect((body as { messageData: unknown }).messageData).toEqual(k.messageData);
        const journal = (await h.call('getMessage', { chatId: ALICE, idMessage: stored.idMessage })).body as Message;
        expect(journal).toMatchObject({ type: 'incoming', typeMessage: k.input.typeMessage, senderId: ALICE });
        expect((await h.call('lastIncomingMessages')).body as Message[]).toContainEqual(
          expect.objectContaining({ idMessage: stored.idMessage }),
        );
      },
    );

    it('an incoming text quoting a message arrives as typeMessage quotedMessage with extendedTextMessageData and the quoted message', async () => {
      const { stored: original } = await arrive({ typeMessage: 'textMessage', textMessage: 'Hello' });
      const { stored, body } = await arrive({
        typeMessage: 'textMessage',
        textMessage: 'Quoting a text message',
        quotedMessage: { stanzaId: original.idMessage },
      });
      const quoted = { stanzaId: original.idMessage, participant: ALICE, typeMessage: 'textMessage', textMessage: 'Hello' };
      expect((body as { messageData: unknown }).messageData).toEqual({
        typeMessage: 'quotedMessage',
        extendedTextMessageData: { text: 'Quoting a text message', stanzaId: original.idMessage, participant: ALICE },
        quotedMessage: quoted,
      });
      expect(stored).toMatchObject({ typeMessage: 'quotedMessage', textMessage: 'Quoting a text message', quotedMessage: quoted });
    });

    it('a quote of another kind keeps its kind, with quotedMessage beside its data', async () => {
      const { stored: poll } = await arrive({ typeMessage: 'pollMessage', pollMessageData: { name: 'Q?', options: ['a', 'b'] } });
      const { body } = await arrive({
        typeMessage: 'locationMessage',
        location: { latitude: 1, longitude: 2 },
        quotedMessage: { stanzaId: poll.idMessage },
      });
      expect(body).toMatchObject({
        messageData: {
          typeMessage: 'locationMessage',
          quotedMessage: { stanzaId: poll.idMessage, participant: ALICE, typeMessage: 'pollMessage', pollMessageData: { name: 'Q?' } },
        },
      });
    });

    it('a message kind the service does not document is refused, naming the kinds it takes', async () => {
      const r = await h.admin('incoming', { chatId: ALICE, typeMessage: 'hologramMessage' });
      expect(r.status).toBe(400);
      expect(r.body.message).toMatch(
        /'typeMessage' must be one of textMessage, extendedTextMessage, quotedMessage, .*interactiveButtonsReply$/,
      );
    });
  });
}
