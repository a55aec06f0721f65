import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { StatusPost, StatusStatisticItem } from '../../../src/api/types.js';
import type { ManualClock } from '../../../src/util/clock.js';
import { startFileServer, type FileServer } from '../../support/file-server.js';
import {
  ALICE,
  BOB,
  conformanceConfig,
  NOBODY,
  startLocal,
  T0,
  type LocalUnderTest,
  type TransportKind,
} from '../../support/local-service.js';
import { makePdf, makePng } from '../../support/media.js';

const sec = (ms: number) => Math.floor(ms / 1000);
const DAY = 24 * 3600_000;

/** The status methods (posting, the statistic, both journals, deletion, contacts' statuses), over one transport. */
export function statusesSuite(kind: TransportKind) {
  describe('statuses', () => {
    let h: LocalUnderTest<ManualClock>;
    let files: FileServer;
    beforeAll(async () => {
      files = await startFileServer({
        '/story.png': { body: makePng(90, 160), contentType: 'image/png' },
        '/voice.mp3': { body: Buffer.from('ID3\u0003\u0000\u0000\u0000\u0000\u0000\u0000voice'), contentType: 'audio/mpeg' },
        '/doc.pdf': { body: makePdf(), contentType: 'application/pdf' },
      });
    });
    afterAll(() => files.close());
    beforeEach(async () => {
      h = await startLocal({ kind, config: conformanceConfig() });
    });
    afterEach(() => h.close());

    async function ok<T>(method: Parameters<typeof h.call>[0], body?: unknown, query?: Record<string, string>): Promise<T> {
      const r = await h.call(method, body, query ? { query } : {});
      expect(r.statusCode, JSON.stringify(r.body)).toBe(200);
      return r.body as T;
    }
    async function post(method: 'sendTextStatus' | 'sendVoiceStatus' | 'sendMediaStatus', body: unknown): Promise<string> {
      const { idMessage } = await ok<{ idMessage: string }>(method, body);
      expect(idMessage).toMatch(/^[0-9A-F]{32}$/);
      return idMessage;
    }
    async function error(method: Parameters<typeof h.call>[0], body?: unknown, query?: Record<string, string>): Promise<string> {
      const r = await h.call(method, body, query ? { query } : {});
      expect(r.statusCode).toBe(400);
      return (r.body as { message: string }).message;
    }
    const statistic = (idMessage: string) => ok<StatusStatisticItem[]>('getStatusStatistic', undefined, { idMessage });
    const outgoing = (minutes?: number) =>
      ok<StatusPost[]>('getOutgoingStatuses', undefined, minutes === undefined ? undefined : { minutes: String(minutes) });
    const incoming = (minutes?: number) =>
      ok<StatusPost[]>('getIncomingStatuses', undefined, minutes === undefined ? undefined : { minutes: String(minutes) });

    it('a text status reaches each participant on the network timings; one without an account stays sent', async () => {
      const id = await post('sendTextStatus', { message: 'I use GREEN-API', font: 'SERIF', participants: [ALICE, NOBODY] });
      expect(await outgoing()).toEqual([
        {
          type: 'outgoing',
          idMessage: id,
          timestamp: sec(T0),
          typeMessage: 'extendedTextMessage',
          chatId: expect.stringMatching(/@c\.us$/),
          textMessage: 'I use GREEN-API',
          extendedTextMessage: { text: 'I use GREEN-API', backgroundColor: '#000000', font: 'SERIF', participants: [ALICE, NOBODY] },
          participants: [ALICE, NOBODY],
          statusMessage: 'sent',
          sendByApi: true,
        },
      ]);
      expect(await statistic(id)).toEqual([
        { participant: ALICE, timestamp: sec(T0), status: 'sent' },
        { participant: NOBODY, timestamp: sec(T0), status: 'sent' },
      ]);
      await h.clock.advance(1000);
      expect((await statistic(id))[0]).toEqual({ participant: ALICE, timestamp: sec(T0 + 1000), status: 'delivered' });
      await h.clock.advance(4000);
      expect(await statistic(id)).toEqual([
        { participant: ALICE, timestamp: sec(T0 + 5000), status: 'read' },
        { participant: NOBODY, timestamp: sec(T0), status: 'sent' },
      ]);
      expect((await outgoing())[0]!.statusMessage).toBe('read');
    });

    it('without participants a status goes to every contact of the contact list', async () => {
      await ok('addContact', { chatId: ALICE, firstName: 'Alice' });
      await ok('addContact', { chatId: BOB, firstName: 'Bob' });
      const id = await post('sendTextStatus', { message: 'to all', backgroundColor: '#228B22' });
      expect((await statistic(id)).map((s) => s.participant).sort()).toEqual([ALICE, BOB].sort());
      expect((await outgoing())[0]!.extendedTextMessage).toMatchObject({ backgroundColor: '#228B22' });
    });

    it('a status is up for 24 hours: nobody reads it later, and it can no longer be deleted', async () => {
      await h.close();
      h = await startLocal({
        kind,
        config: conformanceConfig((raw) => {
          (raw.network as { readAfterMs: number }).readAfterMs = DAY + 3600_000;
        }),
      });
      const id = await post('sendTextStatus', { message: 'a day', participants: [ALICE] });
      await h.clock.advance(DAY + 2 * 3600_000);
      expect(await statistic(id)).toEqual([{ participant: ALICE, timestamp: sec(T0 + 1000), status: 'delivered' }]);
      expect(await outgoing()).toEqual([]);
      expect((await outgoing(2 * 1440)).map((s) => s.idMessage)).toEqual([id]);
      expect(await error('deleteStatus', { idMessage: id })).toBe('ID message notfound');
    });

    it('a status posted while the instance is not authorized waits (pending) and goes out when it works again', async () => {
      expect((await h.admin('state', { state: 'notAuthorized' })).status).toBe(200);
      const id = await post('sendTextStatus', { message: 'held', participants: [ALICE] });
      expect(await statistic(id)).toEqual([]);
      await h.clock.advance(10_000);
      expect((await outgoing()).map((s) => [s.idMessage, s.statusMessage])).toEqual([[id, 'pending']]);
      expect(await statistic(id)).toEqual([]);
      await h.admin('state', { state: 'authorized' });
      expect(await statistic(id)).toEqual([{ participant: ALICE, timestamp: sec(T0 + 10_000), status: 'sent' }]);
      await h.clock.advance(1000);
      expect(await statistic(id)).toEqual([{ participant: ALICE, timestamp: sec(T0 + 11_000), status: 'delivered' }]);
      await h.restart();
      expect((await outgoing())[0]!.statusMessage).toBe('delivered');
    });

    it('a status held more than 24 hours is dropped when the instance works again', async () => {
      await h.admin('state', { state: 'notAuthorized' });
      const id = await post('sendTextStatus', { message: 'too late', participants: [ALICE] });
      await h.clock.advance(DAY);
      await h.admin('state', { state: 'authorized' });
      expect(await outgoing(2 * 1440)).toEqual([]);
      expect(await error('getStatusStatistic', undefined, { idMessage: id })).toBe('ID message notfound');
    });

    it('deleteStatus answers an empty 200; the status leaves the journal and the statistic', async () => {
      const kept = await post('sendTextStatus', { message: 'kept', participants: [ALICE] });
      const gone = await post('sendTextStatus', { message: 'gone', participants: [ALICE] });
      const r = await h.call('deleteStatus', { idMessage: gone });
      expect([r.statusCode, r.body]).toEqual([200, undefined]);
      expect((await outgoing()).map((s) => s.idMessage)).toEqual([kept]);
      expect(await error('getStatusStatistic', undefined, { idMessage: gone })).toBe('ID message notfound');
      expect(await error('deleteStatus', { idMessage: gone })).toBe('ID message notfound');
      expect(await error('getStatusStatistic', undefined, { idMessage: 'BAE5F4886F6F2D05' })).toBe('ID message notfound');
    });

    it('media and voice statuses are fetched and kept: their downloadUrl serves the file', async () => {
      const pic = await post('sendMediaStatus', { urlFile: files.url('/story.png'), fileName: 'story.png', caption: 'look' });
      const voice = await post('sendVoiceStatus', { urlFile: files.url('/voice.mp3'), fileName: 'voice.mp3', participants: [BOB] });
      const [v, p] = await outgoing();
      expect(p).toMatchObject({
        idMessage: pic,
        typeMessage: 'imageMessage',
        caption: 'look',
        fileName: 'story.png',
        mimeType: 'image/png',
      });
      expect(p!.jpegThumbnail).not.toBe('');
      expect(v).toMatchObject({ idMessage: voice, typeMessage: 'audioMessage', mimeType: 'audio/mpeg', participants: [BOB] });
      const got = await h.download(p!.downloadUrl!);
      expect(got.status).toBe(200);
      expect(got.body.equals(makePng(90, 160))).toBe(true);
    });

    it('refuses what the service refuses, naming the field', async () => {
      expect(await error('sendTextStatus', { message: 'x'.repeat(501) })).toBe(
        "Validation failed. Details: 'message' length must be less than or equal to 500 characters long",
      );
      expect(await error('sendTextStatus', { message: 'hi', font: 'COMIC' })).toMatch(
        /^Validation failed\. Details: 'font' must be one of \[SERIF,/,
      );
      expect(await error('sendTextStatus', { message: 'hi', backgroundColor: 'green' })).toBe(
        "Validation failed. Details: 'backgroundColor' must be a colour as #RRGGBB",
      );
      expect(await error('sendTextStatus', { message: 'hi', participants: ['120363043968066561@g.us'] })).toMatch(
        /^Validation failed\. Details: 'participants\[\]' must be a personal chat ID/,
      );
      expect(await error('sendMediaStatus', { urlFile: files.url('/doc.pdf'), fileName: 'doc.pdf' })).toBe(
        "Validation failed. Details: 'urlFile' must be a picture or a video, got application/pdf",
      );
      expect(await error('sendVoiceStatus', { urlFile: files.url('/story.png'), fileName: 'story.png' })).toBe(
        "Validation failed. Details: 'urlFile' must be an audio file, got image/png",
      );
      expect(await error('getStatusStatistic', undefined, {})).toBe("Validation failed. Details: 'idMessage' is required");
      // The file is fetched before the answer: a link that does not serve one is refused, naming it.
      expect(await error('sendMediaStatus', { urlFile: files.url('/nope.png'), fileName: 'nope.png' })).toMatch(
        /^Validation failed\. Details: 'urlFile' could not be fetched: urlFile http:\/\/127\.0\.0\.1:\d+\/nope\.png: the server answered HTTP 404/,
      );
      expect(await outgoing()).toEqual([]);
    });

    it("contacts' statuses arrive only from the account's contacts, with their names, within `minutes`", async () => {
      const stranger = await h.admin('status', { chatId: ALICE, message: 'hello' });
      expect([stranger.status, stranger.body]).toEqual([200, { received: false }]);
      await ok('addContact', { chatId: ALICE, firstName: 'Alice', lastName: 'A' });
      const r = await h.admin('status', { chatId: ALICE, message: 'hello', backgroundColor: '#112233' });
      expect(r.status).toBe(200);
      const expected = {
        type: 'incoming',
        idMessage: r.body.status.idMessage,
        timestamp: sec(T0),
        typeMessage: 'extendedTextMessage',
        chatId: ALICE,
        senderId: ALICE,
        senderName: 'Alice',
        senderContactName: 'Alice A',
        textMessage: 'hello',
        extendedTextMessage: { text: 'hello', backgroundColor: '#112233' },
      };
      expect(r.body).toEqual({ received: true, status: expected });
      expect(await incoming()).toEqual([expected]);
      await h.clock.advance(2 * 3600_000);
      expect(await incoming(60)).toEqual([]);
      expect(await incoming()).toEqual([expected]);
      const bad = await h.admin('status', { chatId: ALICE });
      expect([bad.status, bad.body.message]).toEqual([400, expect.stringMatching(/'message' \(text\) or 'urlFile'/)]);
    });

    it('posted, received and deleted statuses survive a restart', async () => {
      await ok('addContact', { chatId: BOB, firstName: 'Bob' });
      const kept = await post('sendTextStatus', { message: 'kept', participants: [ALICE] });
      const gone = await post('sendTextStatus', { message: 'gone' });
      await ok('deleteStatus', { idMessage: gone });
      await h.admin('status', { chatId: BOB, message: 'from bob' });
      await h.clock.advance(5000);
      await h.restart();
      expect((await outgoing()).map((s) => [s.idMessage, s.statusMessage])).toEqual([[kept, 'read']]);
      expect(await error('getStatusStatistic', undefined, { idMessage: gone })).toBe('ID message notfound');
      expect((await incoming()).map((s) => [s.senderId, s.textMessage])).toEqual([[BOB, 'from bob']]);
    });
  });
}
