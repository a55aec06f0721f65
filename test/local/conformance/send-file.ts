import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message } from '../../../src/api/types.js';
import { ALICE, BOB, conformanceConfig, NOBODY, T0, useLocal, type TransportKind } from '../../support/local-service.js';
import { startFileServer, type FileServer } from '../../support/file-server.js';
import { makePdf, makePng } from '../../support/media.js';

export function sendFileSuite(kind: TransportKind) {
  describe('sendFileByUrl', () => {
    let files: FileServer;
    const png = makePng(64, 48);
    beforeAll(async () => {
      files = await startFileServer({
        '/photo.png': { body: png, contentType: 'image/png' },
        '/doc': { body: makePdf(), contentType: 'application/pdf' },
        '/mystery': { body: png },
        '/blob': { body: Buffer.from('just some bytes, nothing recognisable'), contentType: 'application/x-unknown-thing' },
        '/lying.pdf': { body: png, contentType: 'image/png' },
      });
    });
    afterAll(() => files.close());
    const h = useLocal(kind, () => ({ config: conformanceConfig() }));

    async function send(body: Record<string, unknown>) {
      const r = await h.call('sendFileByUrl', { chatId: ALICE, ...body });
      expect(r.statusCode).toBe(200);
      const { idMessage } = r.body as { idMessage: string };
      expect(idMessage).toMatch(/^[0-9A-F]{32}$/);
      return idMessage;
    }

    it('answers {idMessage} at once; the message is in history, with every file field, once the queue sends it', async () => {
      const id = await send({ urlFile: files.url('/photo.png'), fileName: 'photo.png', caption: 'look' });
      expect(await h.settled(id)).toBe('sent');
      const m = (await h.call('getMessage', { chatId: ALICE, idMessage: id })).body as Message;
      expect(m).toMatchObject({
        type: 'outgoing',
        idMessage: id,
        typeMessage: 'imageMessage',
        chatId: ALICE,
        chatType: 'user',
        sendByApi: true,
        statusMessage: 'sent',
        fileName: 'photo.png',
        caption: 'look',
        mimeType: 'image/png',
        isAnimated: false,
        timestamp: Math.floor(T0 / 1000),
      });
      expect(m.jpegThumbnail!.length).toBeGreaterThan(20);
      expect(Buffer.from(m.jpegThumbnail!, 'base64').subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
      const dl = await h.download(m.downloadUrl!);
      expect(dl.status).toBe(200);
      expect(dl.body.equals(png)).toBe(true);
      const hist = (await h.call('getChatHistory', { chatId: ALICE })).body as Message[];
      expect(hist.map((x) => x.idMessage)).toEqual([id]);
      const last = (await h.call('lastOutgoingMessages')).body as Message[];
      expect(last.map((x) => x.idMessage)).toContain(id);
    });

    it('status moves sent -> delivered -> read on the network timings', async () => {
      const id = await send({ urlFile: files.url('/doc'), fileName: 'report.pdf' });
      await h.settled(id);
      const status = async () => ((await h.call('getMessage', { chatId: ALICE, idMessage: id })).body as Message).statusMessage;
      expect(await status()).toBe('sent');
      await h.clock.advance(1000);
      expect(await status()).toBe('delivered');
      await h.clock.advance(4000);
      expect(await status()).toBe('read');
      // Status is derived, not stored by a timer: it is still right after a restart.
      await h.restart();
      expect(await status()).toBe('read');
    });

    it('a message to a number without an account is noAccount in the journal, not sent', async () => {
      const id = await send({ chatId: NOBODY, urlFile: files.url('/doc'), fileName: 'a.pdf' });
      await h.settled(id);
      await h.clock.advance(60_000);
      const m = (await h.call('getMessage', { chatId: NOBODY, idMessage: id })).body as Message;
      expect(m.statusMessage).toBe('noAccount');
    });

    it('the queue releases one message per sendIntervalMs, against absolute due times', async () => {
      const released: { idMessage: string; dueAt: number; releasedAt: number }[] = [];
      h.service.events.on('queue:released', (e) => released.push(e));
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push(await send({ urlFile: files.url('/doc'), fileName: `r${i}.pdf` }));
      expect(await h.settled(ids[0]!)).toBe('sent');
      // Nothing else leaves before the interval has passed.
      const q = (await h.admin('queue')).body;
      expect(q.pending.map((e: { idMessage: string }) => e.idMessage)).toEqual(ids.slice(1));
      // Still queued: getMessage shows it `pending`, not yet in the chat.
      const notYet = await h.call('getMessage', { chatId: ALICE, idMessage: ids[1] });
      expect(notYet.body).toMatchObject({ idMessage: ids[1], statusMessage: 'pending', fileName: 'r1.pdf' });
      await h.clock.advance(999);
      expect((await h.admin('queue')).body.pending).toHaveLength(2);
      await h.clock.advance(1);
      expect(await h.settled(ids[1]!)).toBe('sent');
      await h.clock.advance(1000);
      expect(await h.settled(ids[2]!)).toBe('sent');
      expect(released.map((r) => r.dueAt - T0)).toEqual([0, 1000, 2000]);
      expect(released.map((r) => r.releasedAt - r.dueAt)).toEqual([0, 0, 0]);
      const hist = (await h.call('getChatHistory', { chatId: ALICE })).body as Message[];
      expect(hist.map((m) => m.idMessage)).toEqual([...ids].reverse());
    });

    it('file type order: extension, then Content-Type, then the bytes, else generic binary', async () => {
      const cases: [string, string, string, string][] = [
        ['/lying.pdf', 'lying.pdf', 'documentMessage', 'application/pdf'], // extension wins over header and bytes
        ['/doc', 'noext', 'documentMessage', 'application/pdf'], // no extension: Content-Type
        ['/mystery', 'noext2', 'imageMessage', 'image/png'], // no extension, no header: bytes
        ['/blob', 'noext3', 'documentMessage', 'application/octet-stream'], // nothing known: generic binary
      ];
      const ids: string[] = [];
      for (const [p, fileName] of cases) ids.push(await send({ urlFile: files.url(p), fileName }));
      for (let i = 0; i < ids.length; i++) {
        if (i > 0) await h.clock.advance(1000);
        expect(await h.settled(ids[i]!)).toBe('sent');
        const m = (await h.call('getMessage', { chatId: ALICE, idMessage: ids[i]! })).body as Message;
        expect([m.typeMessage, m.mimeType], cases[i]![0]).toEqual([cases[i]![2], cases[i]![3]]);
      }
    });

    it('files are kept 24 hours, then the downloadUrl answers 404', async () => {
      const id = await send({ urlFile: files.url('/photo.png'), fileName: 'p.png' });
      await h.settled(id);
      const m = (await h.call('getMessage', { chatId: ALICE, idMessage: id })).body as Message;
      await h.clock.advance(23 * 3600_000);
      expect((await h.download(m.downloadUrl!)).status).toBe(200);
      await h.clock.advance(3600_000 + 1);
      const gone = await h.download(m.downloadUrl!);
      expect(gone.status).toBe(404);
      expect(JSON.parse(gone.body.toString())).toEqual({ message: 'file not found or expired' });
      expect(await h.service.purgeFiles()).toBe(1);
    });

    it('a file that cannot be fetched: failed, with the reason, and kept in the journals as failed', async () => {
      const id = await send({ urlFile: files.url('/missing.png'), fileName: 'missing.png', caption: 'gone' });
      expect(await h.settled(id)).toBe('failed');
      const q = (await h.admin('queue')).body;
      expect(q.failed).toEqual([expect.objectContaining({ idMessage: id, reason: expect.stringMatching(/404/) })]);
      const r = await h.call('getMessage', { chatId: ALICE, idMessage: id });
      expect(r.statusCode, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toMatchObject({ idMessage: id, type: 'outgoing', statusMessage: 'failed', fileName: 'missing.png', caption: 'gone' });
      const history = (await h.call('getChatHistory', { chatId: ALICE, count: 10 })).body as Message[];
      expect(history.find((m) => m.idMessage === id)?.statusMessage).toBe('failed');
      const last = (await h.call('lastOutgoingMessages', undefined)).body as Message[];
      expect(last.find((m) => m.idMessage === id)?.statusMessage).toBe('failed');
    });

    it('validation: url format, caption length, typingTime range', async () => {
      const bad = await h.call('sendFileByUrl', { chatId: ALICE, urlFile: 'ftp://x/y.png', fileName: 'y.png' });
      expect(bad.statusCode).toBe(400);
      expect(bad.body).toEqual({ message: 'Validation failed. Details: url has incorrect format. It should start with http(s)://' });
      const cap = await h.call('sendFileByUrl', {
        chatId: ALICE,
        urlFile: files.url('/doc'),
        fileName: 'a.pdf',
        caption: 'x'.repeat(1025),
      });
      expect((cap.body as { message: string }).message).toMatch(/^Validation failed\. Details: 'caption'/);
      const typing = await h.call('sendFileByUrl', { chatId: BOB, urlFile: files.url('/doc'), fileName: 'a.pdf', typingTime: 999 });
      expect((typing.body as { message: string }).message).toMatch(/'typingTime' must be greater than or equal to 1000/);
      expect((await h.admin('queue')).body.pending).toEqual([]);
    });

    it('a queued message is sent after a restart, exactly once', async () => {
      const a = await send({ urlFile: files.url('/doc'), fileName: 'a.pdf' });
      const b = await send({ urlFile: files.url('/doc'), fileName: 'b.pdf' });
      await h.settled(a);
      await h.restart(); // b is still queued
      expect((await h.admin('queue')).body.pending.map((e: { idMessage: string }) => e.idMessage)).toEqual([b]);
      await h.clock.advance(1000);
      expect(await h.settled(b)).toBe('sent');
      await h.restart();
      await h.clock.advance(10_000);
      const hist = (await h.call('getChatHistory', { chatId: ALICE })).body as Message[];
      expect(hist.map((m) => m.idMessage)).toEqual([b, a]);
      expect((await h.admin('queue')).body.pending).toEqual([]);
    });
  });
}
