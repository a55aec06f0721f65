import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { NotificationBody, ReceivedNotification } from '../../../src/api/notifications.js';
import type { Message, QueuedMessage } from '../../../src/api/types.js';
import type { ManualClock } from '../../../src/util/clock.js';
import { startFileServer, type FileServer } from '../../support/file-server.js';
import { ALICE, BOB, conformanceConfig, startLocal, T0, type LocalUnderTest, type TransportKind } from '../../support/local-service.js';
import { makePng } from '../../support/media.js';
import { waitFor } from '../../support/wait.js';

const ALL_ON = {
  incomingWebhook: 'yes',
  outgoingWebhook: 'yes',
  outgoingAPIMessageWebhook: 'yes',
  outgoingMessageWebhook: 'yes',
  pollMessageWebhook: 'yes',
};
const sec = Math.floor(T0 / 1000);

/** The sending methods and the message kinds they and the network produce, over one transport. */
export function sendingSuite(kind: TransportKind) {
  describe('sending', () => {
    let h: LocalUnderTest<ManualClock>;
    let files: FileServer;
    const png = makePng(40, 30);
    beforeAll(async () => {
      files = await startFileServer({ '/big.png': { body: png, contentType: 'image/png' } });
    });
    afterAll(() => files.close());
    beforeEach(async () => {
      h = await startLocal({
        kind,
        config: conformanceConfig((raw) => {
          const instances = raw.instances as Record<string, unknown>[];
          instances[0]!.settings = ALL_ON;
          raw.maxFileBytes = 4096;
          const network = raw.network as { accounts: Record<string, unknown>[] };
          const bob = network.accounts.find((a) => a.phone === 79002223344)!;
          bob.votes = [{ options: ['pizza'], afterMs: 2000 }];
          bob.presses = [{ buttonId: 'no', afterMs: 3000 }];
        }),
      });
    });
    afterEach(() => h.close());

    async function ok<T>(method: Parameters<typeof h.call>[0], body: unknown, opts?: Parameters<typeof h.call>[2]): Promise<T> {
      const r = await h.call(method, body, opts);
      expect(r.statusCode, JSON.stringify(r.body)).toBe(200);
      return r.body as T;
    }
    async function send(method: Parameters<typeof h.call>[0], body: unknown): Promise<string> {
      const { idMessage } = await ok<{ idMessage: string }>(method, body);
      expect(idMessage).toMatch(/^[0-9A-F]{32}$/);
      return idMessage;
    }
    async function details(method: Parameters<typeof h.call>[0], body: unknown): Promise<string> {
      const r = await h.call(method, body);
      expect(r.statusCode).toBe(400);
      return (r.body as { message: string }).message;
    }
    async function message(chatId: string, idMessage: string): Promise<Message> {
      return ok<Message>('getMessage', { chatId, idMessage });
    }
    /** The next notification (one is due: a long poll returns as soon as it is queued), deleted once read. */
    async function next(): Promise<NotificationBody> {
      const n = await ok<ReceivedNotification>('receiveNotification', undefined, { query: { receiveTimeout: '5' } });
      await h.call('deleteNotification', undefined, { pathParams: [String(n.receiptId)] });
      return n.body;
    }
    /** The next notification of this type (and message); the ones before it are read and deleted. */
    async function nextOf(type: string, idMessage?: string): Promise<NotificationBody> {
      for (;;) {
        const b = await next();
        if (b.typeWebhook === type && (idMessage === undefined || ('idMessage' in b && b.idMessage === idMessage))) return b;
      }
    }
    /** The message's outgoingAPIMessageReceived. */
    const apiNotification = (idMessage: string) => nextOf('outgoingAPIMessageReceived', idMessage);
    /** Sends a text and lets it leave: the next message then waits sendIntervalMs (1 s) in the queue, where it can be seen. */
    async function occupy(): Promise<void> {
      expect(await h.settled(await send('sendMessage', { chatId: ALICE, message: 'before' }))).toBe('sent');
    }
    /** Once the queue waits on the service clock until `at` (a typing pause in progress). */
    const sleepingUntil = (at: number) => waitFor(`a pause until T0+${at - T0} ms`, () => h.clock.wakeTimes().includes(at));
    /** Sends, lets the queue release it (every message before it first), and returns its journal record. */
    async function sent(method: Parameters<typeof h.call>[0], body: { chatId: string } & Record<string, unknown>): Promise<Message> {
      const id = await send(method, body);
      expect(await h.settled(id)).toBe('sent');
      return message(body.chatId, id);
    }

    it('sendMessage: typingTime holds the message on the service clock, then it is sent', async () => {
      const id = await send('sendMessage', { chatId: ALICE, message: 'typing first', typingTime: 3000 });
      await sleepingUntil(T0 + 3000);
      await h.clock.advance(2999);
      expect((await message(ALICE, id)).statusMessage).toBe('pending');
      await h.clock.advance(1);
      expect(await h.settled(id)).toBe('sent');
      expect(await message(ALICE, id)).toMatchObject({ typeMessage: 'textMessage', timestamp: sec + 3, statusMessage: 'sent' });
    });

    it('sendMessage: typePreview and customPreview make a link preview, kept in the queue, the journal and the notification', async () => {
      const customPreview = { title: 'Green', description: 'All about it', link: 'example.com', jpegThumbnail: 'AAAA' };
      await occupy();
      const id = await send('sendMessage', { chatId: ALICE, message: 'see https://example.com', typePreview: 'large', customPreview });
      const queued = (await ok<QueuedMessage[]>('showMessagesQueue', undefined)).find((q) => q.messageID === id);
      expect(queued?.body).toMatchObject({ message: 'see https://example.com', typePreview: 'large', customPreview });
      await h.clock.advance(1000);
      await h.settled(id);
      const m = await message(ALICE, id);
      expect(m).toMatchObject({
        typeMessage: 'extendedTextMessage',
        textMessage: 'see https://example.com',
        extendedTextMessage: {
          text: 'see https://example.com',
          title: 'Green',
          description: 'All about it',
          previewType: 'LARGE',
          jpegThumbnail: 'AAAA',
        },
      });
      const body = await apiNotification(id);
      expect(body).toMatchObject({
        messageData: {
          typeMessage: 'extendedTextMessage',
          extendedTextMessageData: { text: 'see https://example.com', title: 'Green', description: 'All about it', previewType: 'LARGE' },
        },
      });
    });

    it("sendMessage: customPreview.urlFile's image becomes the preview's thumbnail; an image that cannot be fetched leaves it out", async () => {
      const m = await sent('sendMessage', {
        chatId: ALICE,
        message: 'menu',
        customPreview: { title: 'Menu', urlFile: files.url('/big.png') },
      });
      expect(m).toMatchObject({ typeMessage: 'extendedTextMessage', extendedTextMessage: { title: 'Menu', previewType: 'NONE' } });
      expect(Buffer.from(m.extendedTextMessage!.jpegThumbnail, 'base64').subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
      await h.clock.advance(1000);
      const gone = await sent('sendMessage', {
        chatId: ALICE,
        message: 'menu',
        customPreview: { title: 'Menu', urlFile: files.url('/gone.png') },
      });
      expect(gone).toMatchObject({ typeMessage: 'extendedTextMessage', extendedTextMessage: { title: 'Menu', jpegThumbnail: '' } });
    });

    it('sendMessage: a link without linkPreview is a plain text; the options are checked with the service texts', async () => {
      expect((await sent('sendMessage', { chatId: ALICE, message: 'https://x.example', linkPreview: false })).typeMessage).toBe(
        'textMessage',
      );
      expect(await details('sendMessage', { chatId: ALICE, message: 'x', typingTime: 999 })).toBe(
        "Validation failed. Details: 'typingTime' must be greater than or equal to 1000",
      );
      expect(await details('sendMessage', { chatId: ALICE, message: 'x', typePreview: 'huge' })).toBe(
        "Validation failed. Details: 'typePreview' must be one of [large, small]",
      );
      expect(await details('sendMessage', { chatId: ALICE, message: 'x', customPreview: { title: 't'.repeat(301) } })).toBe(
        "Validation failed. Details: 'customPreview.title' length must be less than or equal to 300 characters long",
      );
      expect(await details('sendMessage', { chatId: ALICE, message: 'x', customPreview: { description: 'no title' } })).toBe(
        "Validation failed. Details: 'customPreview.title' is required",
      );
    });

    it('a text quoting a message of the chat is a quotedMessage: the quoted kind and content in the journal and the notification', async () => {
      const { body: original } = await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: 'Lunch at 1?' });
      const m = await sent('sendMessage', { chatId: ALICE, message: 'Yes!', quotedMessageId: original.idMessage });
      const quoted = { stanzaId: original.idMessage, participant: ALICE, typeMessage: 'textMessage', textMessage: 'Lunch at 1?' };
      expect(m).toMatchObject({ typeMessage: 'quotedMessage', textMessage: 'Yes!', quotedMessage: quoted });
      expect(await apiNotification(m.idMessage)).toMatchObject({
        messageData: {
          typeMessage: 'quotedMessage',
          extendedTextMessageData: { text: 'Yes!', stanzaId: original.idMessage, participant: ALICE },
          quotedMessage: quoted,
        },
      });
    });

    it('uploadFile: the file as the body (GA-Filename) or multipart, stored and served back at its urlFile', async () => {
      const raw = await ok<{ urlFile: string }>('uploadFile', undefined, {
        upload: { kind: 'binary', data: png, contentType: 'image/png', fileName: 'отчёт.png' },
      });
      expect(raw.urlFile).toMatch(new RegExp(`^.*/files/[0-9a-f]{32}/${encodeURIComponent('отчёт.png')}$`));
      const got = await h.download(raw.urlFile);
      expect(got.status).toBe(200);
      expect(got.body.equals(png)).toBe(true);
      expect(got.headers['content-type']).toBe('image/png');
      // As the official client sends it: a multipart `file` part named "blob", the name in GA-Filename.
      const form = await ok<{ urlFile: string }>('uploadFile', undefined, {
        upload: { kind: 'multipart', fields: {}, file: { data: png, fileName: 'blob' } },
      });
      // No name at all: named after the type the bytes show.
      expect(form.urlFile).toMatch(/\/files\/([0-9a-f]{32})\/\1\.png$/);
      expect((await h.download(form.urlFile)).body.equals(png)).toBe(true);
      // Kept 15 days (a fetched file: 24 hours).
      await h.clock.advance(15 * 24 * 3600_000 - 1);
      expect((await h.download(raw.urlFile)).status).toBe(200);
      await h.clock.advance(1);
      expect((await h.download(raw.urlFile)).status).toBe(404);
    });

    it('uploadFile: no file, or one larger than the limit, is refused', async () => {
      const none = await h.call('uploadFile', undefined, { upload: { kind: 'binary', data: Buffer.alloc(0), contentType: 'image/png' } });
      expect([none.statusCode, none.body]).toEqual([400, { message: "Validation failed. Details: 'file' is required" }]);
      const big = await h.call('uploadFile', undefined, { upload: { kind: 'binary', data: Buffer.alloc(4097), contentType: 'image/png' } });
      expect([big.statusCode, big.body]).toEqual([413, { message: 'request body is larger than 4096 bytes' }]);
    });

    it('an empty file is refused alike by uploadFile and sendFileByUpload, multipart or as the body: File is empty', async () => {
      const empty = Buffer.alloc(0);
      const tries = [
        h.call('uploadFile', undefined, { upload: { kind: 'multipart', fields: {}, file: { data: empty, fileName: 'a.png' } } }),
        h.call('uploadFile', undefined, { upload: { kind: 'binary', data: empty, contentType: 'image/png', fileName: 'a.png' } }),
        h.call('sendFileByUpload', undefined, {
          upload: { kind: 'multipart', fields: { chatId: ALICE, fileName: 'a.png' }, file: { data: empty, fileName: 'a.png' } },
        }),
      ];
      for (const r of await Promise.all(tries)) {
        expect([r.statusCode, r.body]).toEqual([400, { message: 'Validation failed. Details: File is empty' }]);
      }
      expect(await ok<unknown[]>('showMessagesQueue', undefined)).toEqual([]);
    });

    it('sendFileByUpload: answers {idMessage, urlFile}; queued as sendFileByUrl; sent from the store as a file message', async () => {
      await occupy();
      const answer = await ok<{ idMessage: string; urlFile: string }>('sendFileByUpload', undefined, {
        upload: {
          kind: 'multipart',
          fields: { chatId: ALICE, fileName: 'photo.png', caption: 'look' },
          file: { data: png, fileName: 'blob' },
        },
      });
      expect(answer.urlFile).toMatch(/\/files\/[0-9a-f]{32}\/photo\.png$/);
      const queued = (await ok<QueuedMessage[]>('showMessagesQueue', undefined))[0];
      expect(queued).toMatchObject({
        messageID: answer.idMessage,
        type: 'sendFileByUrl',
        body: { chatId: ALICE, urlFile: answer.urlFile, fileName: 'photo.png', caption: 'look' },
      });
      await h.clock.advance(1000);
      expect(await h.settled(answer.idMessage)).toBe('sent');
      const m = await message(ALICE, answer.idMessage);
      expect(m).toMatchObject({
        typeMessage: 'imageMessage',
        fileName: 'photo.png',
        caption: 'look',
        mimeType: 'image/png',
        downloadUrl: answer.urlFile,
      });
      expect(m.jpegThumbnail!.length).toBeGreaterThan(20);
      expect(await apiNotification(answer.idMessage)).toMatchObject({
        messageData: {
          typeMessage: 'imageMessage',
          fileMessageData: { downloadUrl: answer.urlFile, caption: 'look', fileName: 'photo.png' },
        },
      });
      const bad = await h.call('sendFileByUpload', { chatId: ALICE, fileName: 'a.png' });
      expect([bad.statusCode, bad.body]).toEqual([
        400,
        { message: "Validation failed. Details: the request must be multipart/form-data with a 'file' part" },
      ]);
      const noChat = await h.call('sendFileByUpload', undefined, {
        upload: { kind: 'multipart', fields: {}, file: { data: png, fileName: 'a.png' } },
      });
      expect(noChat.body).toEqual({ message: "Validation failed. Details: 'chatId' is required" });
    });

    it('sendLocation: a locationMessage with every location field, in the queue, the journal and the notification', async () => {
      const req = { chatId: ALICE, nameLocation: 'Office', address: '1 Main St', latitude: 55.7558, longitude: 37.6173 };
      await occupy();
      const id = await send('sendLocation', req);
      expect((await ok<QueuedMessage[]>('showMessagesQueue', undefined))[0]).toMatchObject({
        messageID: id,
        type: 'sendLocation',
        body: req,
      });
      await h.clock.advance(1000);
      await h.settled(id);
      const location = { nameLocation: 'Office', address: '1 Main St', latitude: 55.7558, longitude: 37.6173, jpegThumbnail: '' };
      expect(await message(ALICE, id)).toMatchObject({ typeMessage: 'locationMessage', location });
      expect(await apiNotification(id)).toMatchObject({ messageData: { typeMessage: 'locationMessage', locationMessageData: location } });
      expect(await details('sendLocation', { chatId: ALICE, latitude: 91, longitude: 0 })).toBe(
        "Validation failed. Details: 'latitude' must be a number from -90 to 90",
      );
      expect(await details('sendLocation', { chatId: ALICE, latitude: 1 })).toBe("Validation failed. Details: 'longitude' is required");
    });

    it('sendContact: a contactMessage with a vCard built from the card', async () => {
      const m = await sent('sendContact', {
        chatId: ALICE,
        contact: { phoneContact: 79002223344, firstName: 'Bob', lastName: 'Stone', company: 'Acme' },
      });
      expect(m).toMatchObject({
        typeMessage: 'contactMessage',
        contact: { displayName: 'Bob Stone', phoneNumber: 79002223344, chatId: BOB },
      });
      expect(m.contact!.vcard.split('\n')).toEqual([
        'BEGIN:VCARD',
        'VERSION:3.0',
        'N:Stone;Bob;;;',
        'FN:Bob Stone',
        'ORG:Acme',
        'TEL;type=CELL;type=VOICE;waid=79002223344:+79002223344',
        'END:VCARD',
      ]);
      expect(await apiNotification(m.idMessage)).toMatchObject({
        messageData: { typeMessage: 'contactMessage', contactMessageData: { displayName: 'Bob Stone', vcard: m.contact!.vcard } },
      });
      expect(await details('sendContact', { chatId: ALICE, contact: { phoneContact: 79002223344 } })).toBe(
        "Validation failed. Details: 'contact' must have at least one of firstName, middleName, lastName, company",
      );
    });

    it('sendPoll: the documented limits, with the service-style texts', async () => {
      const o = (...names: string[]) => names.map((optionName) => ({ optionName }));
      expect(await details('sendPoll', { chatId: ALICE, message: 'Q', options: o('only') })).toBe(
        "Validation failed. Details: 'options' must contain at least 2 items",
      );
      const thirteen = o(...Array.from({ length: 13 }, (_, i) => `o${i}`));
      expect(await details('sendPoll', { chatId: ALICE, message: 'Q', options: thirteen })).toBe(
        "Validation failed. Details: 'options' must contain less than or equal to 12 items",
      );
      expect(await details('sendPoll', { chatId: ALICE, message: 'Q', options: o('a', 'a') })).toBe(
        "Validation failed. Details: 'options' must be unique: each optionName must differ from the others",
      );
      expect(await details('sendPoll', { chatId: ALICE, message: 'x'.repeat(256), options: o('a', 'b') })).toBe(
        "Validation failed. Details: 'message' length must be less than or equal to 255 characters long",
      );
      expect(await details('sendPoll', { chatId: ALICE, message: 'Q', options: o('a', 'b'.repeat(101)) })).toBe(
        "Validation failed. Details: 'optionName' length must be less than or equal to 100 characters long",
      );
    });

    it('sendPoll: a pollMessage; a scripted contact votes, votes arrive as pollUpdateMessage with every option and its voters', async () => {
      const options = [{ optionName: 'pizza' }, { optionName: 'sushi' }];
      const poll = await sent('sendPoll', { chatId: BOB, message: 'Lunch?', options });
      expect(poll).toMatchObject({ typeMessage: 'pollMessage', pollMessageData: { name: 'Lunch?', options, multipleAnswers: false } });
      expect(await apiNotification(poll.idMessage)).toMatchObject({
        messageData: { typeMessage: 'pollMessage', pollMessageData: { name: 'Lunch?', options, multipleAnswers: false } },
      });
      // network.accounts: Bob votes for pizza 2 s after the poll was sent.
      await h.clock.advance(2000);
      expect(await nextOf('incomingMessageReceived')).toMatchObject({
        typeWebhook: 'incomingMessageReceived',
        senderData: { chatId: BOB, sender: BOB, senderName: 'Bob' },
        messageData: {
          typeMessage: 'pollUpdateMessage',
          pollMessageData: {
            stanzaId: poll.idMessage,
            name: 'Lunch?',
            votes: [
              { optionName: 'pizza', optionVoters: [BOB] },
              { optionName: 'sushi', optionVoters: [] },
            ],
            multipleAnswers: false,
          },
        },
      });
      // The admin endpoint injects another vote of the same voter: the update shows the state now.
      const { status, body } = await h.admin('incoming', {
        chatId: BOB,
        typeMessage: 'pollUpdateMessage',
        vote: { stanzaId: poll.idMessage, options: ['sushi'] },
      });
      expect(status).toBe(200);
      expect(body).toMatchObject({
        typeMessage: 'pollUpdateMessage',
        pollMessageData: {
          votes: [
            { optionName: 'pizza', optionVoters: [] },
            { optionName: 'sushi', optionVoters: [BOB] },
          ],
        },
      });
      const bad = await h.admin('incoming', {
        chatId: BOB,
        typeMessage: 'pollUpdateMessage',
        vote: { stanzaId: poll.idMessage, options: ['pizza', 'sushi'] },
      });
      expect([bad.status, bad.body]).toEqual([
        400,
        { message: "Validation failed. Details: 'vote.options' may name one option: the poll takes a single answer" },
      ]);
      const other = await h.admin('incoming', {
        chatId: ALICE,
        typeMessage: 'pollUpdateMessage',
        vote: { stanzaId: poll.idMessage, options: [] },
      });
      expect(other.body).toEqual({
        message: `Validation failed. Details: 'vote.stanzaId' ${poll.idMessage} is not a poll of chat ${ALICE}`,
      });
    });

    it('a scripted vote due across a restart arrives once', async () => {
      const poll = await sent('sendPoll', { chatId: BOB, message: 'Q', options: [{ optionName: 'pizza' }, { optionName: 'b' }] });
      await h.restart();
      await h.clock.advance(2000);
      const vote = await nextOf('incomingMessageReceived');
      expect(vote).toMatchObject({ messageData: { typeMessage: 'pollUpdateMessage', pollMessageData: { stanzaId: poll.idMessage } } });
      await h.restart();
      await h.clock.advance(60_000);
      const history = await ok<Message[]>('getChatHistory', { chatId: BOB });
      expect(history.filter((m) => m.typeMessage === 'pollUpdateMessage').map((m) => m.idMessage)).toEqual([
        (vote as { idMessage: string }).idMessage,
      ]);
    });

    it('poll votes need pollMessageWebhook as well as incomingWebhook', async () => {
      expect(await ok('setSettings', { pollMessageWebhook: 'no' })).toEqual({ saveSettings: true });
      const poll = await sent('sendPoll', {
        chatId: ALICE,
        message: 'Q',
        options: [{ optionName: 'a' }, { optionName: 'b' }],
        multipleAnswers: true,
      });
      const vote = await h.admin('incoming', {
        chatId: ALICE,
        typeMessage: 'pollUpdateMessage',
        vote: { stanzaId: poll.idMessage, options: ['a', 'b'] },
      });
      expect(vote.body.pollMessageData.votes).toEqual([
        { optionName: 'a', optionVoters: [ALICE] },
        { optionName: 'b', optionVoters: [ALICE] },
      ]);
      // The vote is in the journal all the same, but the next incoming notification is the text after it.
      expect((await message(ALICE, vote.body.idMessage)).typeMessage).toBe('pollUpdateMessage');
      const { body: text } = await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: 'and a text' });
      expect(await nextOf('incomingMessageReceived')).toMatchObject({ idMessage: text.idMessage });
    });

    it('sendInteractiveButtons: an interactiveButtons message; the buttons are checked as documented', async () => {
      const buttons = [
        { type: 'copy', buttonId: '1', buttonText: 'Copy code', copyCode: 'X42' },
        { type: 'call', buttonId: '2', buttonText: 'Call us', phoneNumber: '79001112233' },
        { type: 'url', buttonId: '3', buttonText: 'Open', url: 'https://example.com/' },
      ];
      const m = await sent('sendInteractiveButtons', { chatId: ALICE, header: 'Hi', body: 'Pick one', footer: 'Thanks', buttons });
      const data = { header: 'Hi', body: 'Pick one', footer: 'Thanks', buttons };
      expect(m).toMatchObject({ typeMessage: 'interactiveButtons', interactiveButtons: data });
      expect(await apiNotification(m.idMessage)).toMatchObject({
        messageData: { typeMessage: 'interactiveButtons', interactiveButtons: data },
      });
      const four = [...buttons, { type: 'url', buttonId: '4', buttonText: 'More', url: 'https://example.com/more' }];
      expect(await details('sendInteractiveButtons', { chatId: ALICE, body: 'x', buttons: four })).toBe(
        "Validation failed. Details: 'buttons' must contain less than or equal to 3 items",
      );
      expect(
        await details('sendInteractiveButtons', {
          chatId: ALICE,
          body: 'x',
          buttons: [{ type: 'url', buttonId: '1', buttonText: 'Open' }],
        }),
      ).toBe("Validation failed. Details: 'buttons[].url' is required for a url button");
      expect(
        await details('sendInteractiveButtons', {
          chatId: ALICE,
          body: 'x',
          buttons: [{ type: 'copy', buttonId: '1', buttonText: 'x'.repeat(26), copyCode: 'c' }],
        }),
      ).toBe("Validation failed. Details: 'buttons[].buttonText' length must be less than or equal to 25 characters long");
    });

    it('sendInteractiveButtonsReply: a scripted contact presses a button: a buttonsResponseMessage with its id and text', async () => {
      const buttons = [
        { buttonId: 'yes', buttonText: 'Yes' },
        { buttonId: 'no', buttonText: 'No, thanks' },
      ];
      const m = await sent('sendInteractiveButtonsReply', { chatId: BOB, body: 'Coming?', buttons });
      expect(m).toMatchObject({
        typeMessage: 'interactiveButtonsReply',
        interactiveButtonsReply: { header: '', body: 'Coming?', footer: '', buttons },
      });
      // network.accounts: Bob presses "no" 3 s after it was sent.
      await h.clock.advance(3000);
      expect(await nextOf('incomingMessageReceived')).toMatchObject({
        messageData: {
          typeMessage: 'buttonsResponseMessage',
          buttonsResponseMessage: { stanzaId: m.idMessage, selectedButtonId: 'no', selectedButtonText: 'No, thanks' },
        },
      });
      expect(
        await details('sendInteractiveButtonsReply', {
          chatId: BOB,
          body: 'x',
          buttons: [
            { buttonId: 'a', buttonText: 'A' },
            { buttonId: 'a', buttonText: 'B' },
          ],
        }),
      ).toBe("Validation failed. Details: 'buttons[].buttonId' must be unique");
    });

    it('forwardMessages: copies of the messages in the other chat, new ids, marked forwarded; queued as one ForwardMessages', async () => {
      const { body: a } = await h.admin('incoming', { chatId: ALICE, typeMessage: 'textMessage', textMessage: 'first' });
      const { body: b } = await h.admin('incoming', {
        chatId: ALICE,
        typeMessage: 'locationMessage',
        location: { latitude: 1, longitude: 2 },
      });
      await occupy();
      const { messages } = await ok<{ messages: string[] }>('forwardMessages', {
        chatId: BOB,
        chatIdFrom: ALICE,
        messages: [a.idMessage, b.idMessage],
      });
      expect(messages).toHaveLength(2);
      expect(messages).not.toContain(a.idMessage);
      expect((await ok<QueuedMessage[]>('showMessagesQueue', undefined))[0]).toMatchObject({
        messageID: messages[0],
        messagesIDs: messages,
        type: 'ForwardMessages',
        body: { chatId: BOB, chatIdFrom: ALICE, messages: [a.idMessage, b.idMessage] },
      });
      expect((await message(BOB, messages[1]!)).statusMessage).toBe('pending');
      await h.clock.advance(1000);
      expect(await h.settled(messages[0]!)).toBe('sent');
      const [first, second] = [await message(BOB, messages[0]!), await message(BOB, messages[1]!)];
      expect(first).toMatchObject({
        type: 'outgoing',
        chatId: BOB,
        typeMessage: 'textMessage',
        textMessage: 'first',
        isForwarded: true,
        forwardingScore: 1,
        sendByApi: true,
      });
      expect(second).toMatchObject({ typeMessage: 'locationMessage', location: { latitude: 1, longitude: 2 }, isForwarded: true });
      expect(first).not.toHaveProperty('senderId');
      expect(await apiNotification(messages[0]!)).toMatchObject({ messageData: { typeMessage: 'textMessage' } });
      expect(await apiNotification(messages[1]!)).toMatchObject({ messageData: { typeMessage: 'locationMessage' } });
      const missing = await h.call('forwardMessages', { chatId: BOB, chatIdFrom: BOB, messages: [a.idMessage] });
      expect([missing.statusCode, missing.body]).toEqual([400, { message: `Message not found by id '${a.idMessage}'` }]);
      expect(await details('forwardMessages', { chatId: BOB, chatIdFrom: ALICE, messages: [] })).toBe(
        "Validation failed. Details: 'messages' must contain at least 1 item",
      );
    });

    it('sendTyping: an empty answer; the notice holds the queue for its typingTime and leaves no message', async () => {
      const typing = await h.call('sendTyping', { chatId: ALICE, typingTime: 5000 });
      expect([typing.statusCode, typing.body]).toEqual([200, undefined]);
      const id = await send('sendMessage', { chatId: ALICE, message: 'after typing' });
      // Not a message: showMessagesQueue lists only the text.
      expect((await ok<QueuedMessage[]>('showMessagesQueue', undefined)).map((q) => q.messageID)).toEqual([id]);
      await sleepingUntil(T0 + 5000);
      await h.clock.advance(4999);
      expect((await message(ALICE, id)).statusMessage).toBe('pending');
      await h.clock.advance(1);
      expect(await h.settled(id)).toBe('sent');
      expect((await ok<Message[]>('getChatHistory', { chatId: ALICE })).map((m) => m.idMessage)).toEqual([id]);
      expect(await details('sendTyping', { chatId: ALICE, typingTime: 20001 })).toBe(
        "Validation failed. Details: 'typingTime' must be less than or equal to 20000",
      );
    });

    it('every send waits in the paced queue and is listed with its documented type', async () => {
      const ids = [
        await send('sendMessage', { chatId: ALICE, message: 'one' }),
        await send('sendLocation', { chatId: ALICE, latitude: 1, longitude: 1 }),
        await send('sendContact', { chatId: ALICE, contact: { phoneContact: 79002223344, company: 'Acme' } }),
        await send('sendPoll', { chatId: ALICE, message: 'Q', options: [{ optionName: 'a' }, { optionName: 'b' }] }),
        await send('sendInteractiveButtons', {
          chatId: ALICE,
          body: 'b',
          buttons: [{ type: 'copy', buttonId: '1', buttonText: 'c', copyCode: 'x' }],
        }),
        await send('sendInteractiveButtonsReply', { chatId: ALICE, body: 'b', buttons: [{ buttonId: '1', buttonText: 'ok' }] }),
      ];
      expect(await h.settled(ids[0]!)).toBe('sent');
      const types = (await ok<QueuedMessage[]>('showMessagesQueue', undefined)).map((q) => q.type);
      expect(types).toEqual(['sendLocation', 'sendContact', 'sendPoll', 'sendInteractiveButtons', 'sendInteractiveButtonsReply']);
      for (let i = 1; i < ids.length; i++) {
        await h.clock.advance(1000);
        expect(await h.settled(ids[i]!)).toBe('sent');
      }
      const last = await ok<Message[]>('lastOutgoingMessages', undefined);
      expect(last.map((m) => [m.typeMessage, m.timestamp - sec])).toEqual([
        ['interactiveButtonsReply', 5],
        ['interactiveButtons', 4],
        ['pollMessage', 3],
        ['contactMessage', 2],
        ['locationMessage', 1],
        ['textMessage', 0],
      ]);
      // Each raised outgoingAPIMessageReceived and its `sent` status.
      for (const id of ids) expect(await nextOf('outgoingMessageStatus', id)).toMatchObject({ status: 'sent', sendByApi: true });
    });
  });
}
