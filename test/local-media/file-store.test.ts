import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as jpeg from 'jpeg-js';
import { MsgflowError } from '../../src/api/errors.js';
import { ManualClock } from '../../src/util/clock.js';
import { createMediaStore } from '../../src/local/media/file-store.js';
import type { MediaStore, MediaStoreOptions } from '../../src/local/media/types.js';
import { startFileServer, type FileServer } from '../support/file-server.js';
import { makeGif, makeNoise, makePdf, makePng, makeWebp } from '../support/media.js';

const png = makePng(240, 160);
const gif2 = makeGif(16, 16, 2);
const pdf = makePdf();
const noise = makeNoise(5000);

let server: FileServer;
let dir: string;
let clock: ManualClock;

beforeAll(async () => {
  server = await startFileServer({
    '/cat.png': { body: png, contentType: 'image/png' },
    '/cat-no-type': { body: png },
    '/cat-octet': { body: png, contentType: 'application/octet-stream' },
    '/anim.gif': { body: gif2, contentType: 'image/gif' },
    '/anim.webp': { body: makeWebp(true), contentType: 'image/webp' },
    '/doc': { body: pdf, contentType: 'application/pdf' },
    '/noise': { body: noise },
    '/noise-chunked': { body: noise, chunked: true },
    '/big': { body: Buffer.alloc(200_000, 1), contentType: 'application/zip' },
    '/big-chunked': { body: Buffer.alloc(200_000, 1), chunked: true },
    '/endless': { endless: true },
    '/hang': { hang: true },
    '/gone': { body: Buffer.from('gone'), status: 410 },
    // /r/N reaches /cat.png after N redirects
    '/r/1': { redirectTo: '/cat.png' },
    '/r/2': { redirectTo: '/r/1', status: 301 },
    '/r/3': { redirectTo: '/r/2', status: 307 },
    '/r/4': { redirectTo: '/r/3' },
    '/slow-body': { slowBody: true },
    // 500 kB of zeros, a few hundred bytes on the wire
    '/gzip-bomb': { body: gzipSync(Buffer.alloc(500_000)), headers: { 'content-encoding': 'gzip' } },
    '/gzip-pdf': { body: gzipSync(pdf), contentType: 'application/pdf', headers: { 'content-encoding': 'gzip' } },
  });
});
afterAll(() => server.close());

beforeEach(async (ctx) => {
  dir = await mkdtemp(join(tmpdir(), 'msgflow-media-'));
  clock = new ManualClock(Date.parse('2026-01-01T09:00:00Z'));
  ctx.onTestFinished(() => rm(dir, { recursive: true, force: true }));
});

const DAY = 24 * 3600_000;
function store(over: Partial<MediaStoreOptions> = {}): MediaStore {
  return createMediaStore({
    dir,
    clock,
    maxBytes: 100_000,
    timeoutMs: 5_000,
    maxRedirects: 3,
    retentionMs: DAY,
    allowPrivate: true,
    ...over,
  });
}

async function failure(p: Promise<unknown>): Promise<MsgflowError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(MsgflowError);
  return err as MsgflowError;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(Buffer.from(c as Buffer));
  return Buffer.concat(parts);
}

/** Stored file folders (ids), ignoring .tmp/.trash; and what .tmp still holds. */
async function onDisk(): Promise<{ files: string[]; tmp: string[] }> {
  const files = (await readdir(dir)).filter((n) => !n.startsWith('.'));
  const tmp = await readdir(join(dir, '.tmp')).catch(() => []);
  return { files, tmp };
}

describe('fetchAndStore: type order', () => {
  it('stores the bytes and metadata; open() streams them back', async () => {
    const media = store();
    const f = await media.fetchAndStore({ urlFile: server.url('/doc'), fileName: 'Отчёт 2026.pdf' });
    expect(f).toMatchObject({
      fileName: 'Отчёт 2026.pdf',
      mimeType: 'application/pdf',
      typeMessage: 'documentMessage',
      size: pdf.length,
      isAnimated: false,
      detectedBy: 'extension',
    });
    expect(f.id).toMatch(/^[0-9a-f]{32}$/);
    expect(f.jpegThumbnail).toBeUndefined();
    const opened = await media.open(f.id);
    expect(opened).toMatchObject({ size: pdf.length, mimeType: 'application/pdf', fileName: 'Отчёт 2026.pdf' });
    expect(await readAll(opened!.stream)).toEqual(pdf);
    expect((await onDisk()).files).toEqual([f.id]);
  });

  it('(1) the extension wins over Content-Type', async () => {
    const f = await store().fetchAndStore({ urlFile: server.url('/cat.png'), fileName: 'not-a-picture.docx' });
    expect(f).toMatchObject({ typeMessage: 'documentMessage', detectedBy: 'extension' });
    expect(f.mimeType).toBe('application/vnd.openxmlformats-officedocument.wordprocessingml.document');
  });

  it('(2) no extension: Content-Type; unknown extension counts as none and the fileName is kept', async () => {
    const media = store();
    const a = await media.fetchAndStore({ urlFile: server.url('/doc'), fileName: 'report' });
    expect(a).toMatchObject({ mimeType: 'application/pdf', detectedBy: 'content-type', fileName: 'report' });
    const b = await media.fetchAndStore({ urlFile: server.url('/cat.png'), fileName: 'report.xyz' });
    expect(b).toMatchObject({ mimeType: 'image/png', typeMessage: 'imageMessage', detectedBy: 'content-type', fileName: 'report.xyz' });
  });

  it('(3) no extension and no or generic Content-Type: the bytes', async () => {
    const media = store();
    for (const path of ['/cat-no-type', '/cat-octet']) {
      const f = await media.fetchAndStore({ urlFile: server.url(path), fileName: 'picture' });
      expect(f).toMatchObject({ mimeType: 'image/png', typeMessage: 'imageMessage', detectedBy: 'bytes' });
    }
  });

  it('(4) nothing tells: application/octet-stream documentMessage', async () => {
    const f = await store().fetchAndStore({ urlFile: server.url('/noise'), fileName: 'blob' });
    expect(f).toMatchObject({
      mimeType: 'application/octet-stream',
      typeMessage: 'documentMessage',
      detectedBy: 'fallback',
      size: noise.length,
    });
  });
});

describe('fetchAndStore: images', () => {
  it('an image gets a valid JPEG thumbnail of at most 100 px a side', async () => {
    const f = await store().fetchAndStore({ urlFile: server.url('/cat.png'), fileName: 'cat.png' });
    expect(f).toMatchObject({ typeMessage: 'imageMessage', mimeType: 'image/png', isAnimated: false });
    const thumb = Buffer.from(f.jpegThumbnail!, 'base64');
    expect(thumb.subarray(0, 2).toString('hex')).toBe('ffd8');
    const decoded = jpeg.decode(thumb);
    expect([decoded.width, decoded.height]).toEqual([100, 67]);
  });

  it('the bytes decide the preview even when the name says another format', async () => {
    const f = await store().fetchAndStore({ urlFile: server.url('/cat-no-type'), fileName: 'cat.jpg' });
    expect(f.mimeType).toBe('image/jpeg');
    expect(Buffer.from(f.jpegThumbnail!, 'base64').subarray(0, 2).toString('hex')).toBe('ffd8');
  });

  it('thumbnail: false turns previews off', async () => {
    const f = await store({ thumbnail: false }).fetchAndStore({ urlFile: server.url('/cat.png'), fileName: 'cat.png' });
    expect(f.jpegThumbnail).toBeUndefined();
  });

  it('animated GIF and WebP are flagged; the WebP has no preview', async () => {
    const media = store();
    const g = await media.fetchAndStore({ urlFile: server.url('/anim.gif'), fileName: 'anim.gif' });
    expect(g).toMatchObject({ isAnimated: true, typeMessage: 'imageMessage' });
    expect(g.jpegThumbnail).toBeTypeOf('string');
    const w = await media.fetchAndStore({ urlFile: server.url('/anim.webp'), fileName: 'anim.webp' });
    expect(w).toMatchObject({ isAnimated: true, typeMessage: 'imageMessage', mimeType: 'image/webp' });
    expect(w.jpegThumbnail).toBeUndefined();
  });
});

describe('fetchAndStore: limits and failures', () => {
  it('Content-Length above maxBytes is refused up front', async () => {
    const err = await failure(store().fetchAndStore({ urlFile: server.url('/big'), fileName: 'big.zip' }));
    expect(err.code).toBe('FILE_TOO_LARGE');
    expect(err.message).toContain('100000 bytes');
    expect(err.message).toContain('Content-Length is 200000');
    expect(await onDisk()).toEqual({ files: [], tmp: [] });
  });

  it('a chunked body that passes maxBytes is cut off', async () => {
    const err = await failure(store().fetchAndStore({ urlFile: server.url('/big-chunked'), fileName: 'big.zip' }));
    expect(err.code).toBe('FILE_TOO_LARGE');
    expect(err.message).toMatch(/more than 100000 bytes received/);
    expect(await onDisk()).toEqual({ files: [], tmp: [] });
  });

  it('an endless body is aborted as soon as it passes the cap', async () => {
    const before = server.endlessBytes();
    const err = await failure(store().fetchAndStore({ urlFile: server.url('/endless'), fileName: 'x.bin' }));
    expect(err.code).toBe('FILE_TOO_LARGE');
    // The server only got as far as socket buffers allow, not megabytes on.
    expect(server.endlessBytes() - before).toBeLessThan(20 * 1024 * 1024);
  });

  it('the cap counts decompressed bytes: a small gzip body that inflates past it is cut off', async () => {
    const media = store();
    const err = await failure(media.fetchAndStore({ urlFile: server.url('/gzip-bomb'), fileName: 'zeros.bin' }));
    expect(err.code).toBe('FILE_TOO_LARGE');
    const ok = await media.fetchAndStore({ urlFile: server.url('/gzip-pdf'), fileName: 'doc' });
    expect(ok).toMatchObject({ size: pdf.length, mimeType: 'application/pdf' });
    expect(await readAll((await media.open(ok.id))!.stream)).toEqual(pdf);
  });

  it('a body exactly at the cap is accepted', async () => {
    const f = await store({ maxBytes: noise.length }).fetchAndStore({ urlFile: server.url('/noise-chunked'), fileName: 'n.bin' });
    expect(f.size).toBe(noise.length);
  });

  it('follows redirects up to maxRedirects and refuses one more', async () => {
    const media = store({ maxRedirects: 3 });
    const ok = await media.fetchAndStore({ urlFile: server.url('/r/3'), fileName: 'cat.png' });
    expect(ok).toMatchObject({ size: png.length, typeMessage: 'imageMessage' });
    const err = await failure(media.fetchAndStore({ urlFile: server.url('/r/4?sig=SECRET'), fileName: 'cat.png' }));
    expect(err.code).toBe('FILE_TOO_MANY_REDIRECTS');
    expect(err.message).toBe(`urlFile ${server.url('/r/4')}: more than 3 redirects`);
    expect(await onDisk()).toEqual({ files: [ok.id], tmp: [] });
  });

  it('maxRedirects 0 refuses any redirect', async () => {
    const err = await failure(store({ maxRedirects: 0 }).fetchAndStore({ urlFile: server.url('/r/1'), fileName: 'cat.png' }));
    expect(err.code).toBe('FILE_TOO_MANY_REDIRECTS');
    expect(await store({ maxRedirects: 1 }).fetchAndStore({ urlFile: server.url('/r/1'), fileName: 'c.png' })).toMatchObject({
      size: png.length,
    });
  });

  it('a server that never answers times out with the phase named', async () => {
    const err = await failure(store({ timeoutMs: 150 }).fetchAndStore({ urlFile: server.url('/hang'), fileName: 'x.png' }));
    expect(err.code).toBe('FILE_FETCH_TIMEOUT');
    expect(err.message).toBe(`urlFile ${server.url('/hang')}: no answer within 150 ms (waiting for the response)`);
    expect(await onDisk()).toEqual({ files: [], tmp: [] });
    const phase = await failure(
      store({ timeoutMs: 10_000, phaseTimeoutMs: 100 }).fetchAndStore({ urlFile: server.url('/hang'), fileName: 'x.png' }),
    );
    expect(phase.message).toBe(`urlFile ${server.url('/hang')}: no answer within 100 ms (waiting for the response)`);
  });

  it('a body that stops flowing times out (silence), and so does a download over the total cap', async () => {
    const silent = await failure(
      store({ timeoutMs: 10_000, phaseTimeoutMs: 120 }).fetchAndStore({ urlFile: server.url('/slow-body'), fileName: 'x.bin' }),
    );
    expect(silent.message).toBe(`urlFile ${server.url('/slow-body')}: no answer within 120 ms (the connection went silent)`);
    const total = await failure(
      store({ timeoutMs: 150, phaseTimeoutMs: 5_000 }).fetchAndStore({ urlFile: server.url('/slow-body'), fileName: 'x.bin' }),
    );
    expect(total.message).toBe(`urlFile ${server.url('/slow-body')}: no answer within 150 ms (whole download took too long)`);
    expect(await onDisk()).toEqual({ files: [], tmp: [] });
  });

  it('non-2xx names the status and the link without its query string', async () => {
    const media = store();
    const e404 = await failure(media.fetchAndStore({ urlFile: server.url('/missing.png?token=SECRET&x=1'), fileName: 'a.png' }));
    expect(e404.code).toBe('FILE_FETCH_STATUS');
    expect(e404.message).toBe(`urlFile ${server.url('/missing.png')}: the server answered HTTP 404 Not Found`);
    expect(e404.message).not.toContain('SECRET');
    const e410 = await failure(media.fetchAndStore({ urlFile: server.url('/gone'), fileName: 'a.png' }));
    expect(e410.params).toMatchObject({ status: 410 });
    expect(await onDisk()).toEqual({ files: [], tmp: [] });
  });

  it('credentials in the link never show', async () => {
    const url = server.url('/missing').replace('http://', 'http://user:pa55w0rd@');
    const err = await failure(store().fetchAndStore({ urlFile: url, fileName: 'a.png' }));
    expect(err.message).not.toContain('pa55w0rd');
  });

  it('connection refused and bad links are clear failures', async () => {
    const refused = await failure(store().fetchAndStore({ urlFile: 'http://127.0.0.1:1/file.png', fileName: 'a.png' }));
    expect(refused.code).toBe('FILE_FETCH_FAILED');
    expect(refused.message).toBe('urlFile http://127.0.0.1:1/file.png: connection refused');
    const ftp = await failure(store().fetchAndStore({ urlFile: 'ftp://example.com/a.png', fileName: 'a.png' }));
    expect(ftp.message).toContain('should start with http(s)://');
    const junk = await failure(store().fetchAndStore({ urlFile: 'not a url', fileName: 'a.png' }));
    expect(junk.code).toBe('FILE_FETCH_FAILED');
  });

  it('an aborted signal stops the fetch', async () => {
    const ac = new AbortController();
    const p = store({ timeoutMs: 10_000 }).fetchAndStore({ urlFile: server.url('/hang'), fileName: 'x.png', signal: ac.signal });
    setTimeout(() => ac.abort(), 50);
    const err = await failure(p);
    expect(err.code).toBe('FILE_FETCH_FAILED');
    expect(err.message).toContain('aborted');
  });
});

describe('retention', () => {
  it('open() answers undefined once retentionMs has passed; purgeExpired deletes from disk', async () => {
    const media = store();
    const old = await media.fetchAndStore({ urlFile: server.url('/doc'), fileName: 'old.pdf' });
    await clock.advance(DAY / 2);
    const young = await media.fetchAndStore({ urlFile: server.url('/doc'), fileName: 'young.pdf' });

    await clock.advance(DAY / 2 - 1);
    const stillThere = await media.open(old.id);
    expect(stillThere).toBeDefined();
    (stillThere!.stream as unknown as { destroy(): void }).destroy();
    expect(await media.purgeExpired()).toBe(0);

    await clock.advance(1);
    expect(await media.open(old.id)).toBeUndefined();
    const youngOne = await media.open(young.id);
    expect(youngOne).toBeDefined();
    (youngOne!.stream as unknown as { destroy(): void }).destroy();
    expect(await media.purgeExpired()).toBe(1);
    expect((await onDisk()).files).toEqual([young.id]);

    await clock.advance(DAY / 2);
    expect(await media.purgeExpired()).toBe(1);
    expect((await onDisk()).files).toEqual([]);
  });

  it('a file stays readable while a purge removes it under an open stream', async () => {
    const media = store();
    const f = await media.fetchAndStore({ urlFile: server.url('/cat.png'), fileName: 'cat.png' });
    const opened = await media.open(f.id);
    await clock.advance(DAY);
    expect(await media.purgeExpired()).toBe(1);
    expect(await readAll(opened!.stream)).toEqual(png);
  });

  it('a new store over the same folder finds the files (restart)', async () => {
    const f = await store().fetchAndStore({ urlFile: server.url('/doc'), fileName: 'a.pdf' });
    const again = store();
    expect(await readAll((await again.open(f.id))!.stream)).toEqual(pdf);
  });

  it('open() refuses ids that are not ours', async () => {
    const media = store();
    await media.fetchAndStore({ urlFile: server.url('/doc'), fileName: 'a.pdf' });
    for (const id of ['', '../etc', '..', '.tmp', 'A'.repeat(32), '0'.repeat(32)]) expect(await media.open(id)).toBeUndefined();
  });
});
