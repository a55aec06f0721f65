import { describe, expect, it } from 'vitest';
import { detectType, type SniffedType } from '../../src/local/media/detect-type.js';
import { extensionOf, typeForMime } from '../../src/local/media/mime-table.js';

const never = async (): Promise<SniffedType | undefined> => {
  throw new Error('the bytes must not be consulted when an earlier step decided');
};
const sniffs = (r: SniffedType | undefined) => async () => r;

describe('extensionOf', () => {
  it.each([
    ['photo.JPG', 'jpg'],
    ['archive.tar.gz', 'gz'],
    ['dir/sub/clip.mp4', 'mp4'],
    ['C:\\docs\\a.PDF', 'pdf'],
    ['noext', ''],
    ['.bashrc', ''],
    ['trailing.', ''],
  ])('%s → %s', (name, ext) => expect(extensionOf(name)).toBe(ext));
});

describe('detectType follows the spec order', () => {
  it('(1) a known extension wins over Content-Type and bytes', async () => {
    const t = await detectType({ fileName: 'report.pdf', contentType: 'image/png', sniff: never });
    expect(t).toEqual({ mimeType: 'application/pdf', typeMessage: 'documentMessage', source: 'extension' });
  });

  it.each([
    ['a.jpeg', 'image/jpeg', 'imageMessage'],
    ['a.webp', 'image/webp', 'imageMessage'],
    ['a.bmp', 'image/bmp', 'imageMessage'],
    ['a.MOV', 'video/quicktime', 'videoMessage'],
    ['a.3gp', 'video/3gpp', 'videoMessage'],
    ['a.opus', 'audio/opus', 'audioMessage'],
    ['a.amr', 'audio/amr', 'audioMessage'],
    ['a.m4a', 'audio/mp4', 'audioMessage'],
    ['a.xlsx', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'documentMessage'],
    ['a.7z', 'application/x-7z-compressed', 'documentMessage'],
    ['a.svg', 'image/svg+xml', 'documentMessage'],
  ])('extension table: %s → %s %s', async (fileName, mimeType, typeMessage) => {
    expect(await detectType({ fileName, sniff: never })).toMatchObject({ mimeType, typeMessage, source: 'extension' });
  });

  it('(2) without an extension the Content-Type decides, parameters and case ignored, alias canonicalised', async () => {
    const t = await detectType({ fileName: 'download', contentType: 'Audio/MP3; charset=binary', sniff: never });
    expect(t).toEqual({ mimeType: 'audio/mpeg', typeMessage: 'audioMessage', source: 'content-type' });
  });

  it('an unknown extension counts as none: Content-Type decides', async () => {
    const t = await detectType({ fileName: 'report.xyz', contentType: 'video/mp4', sniff: never });
    expect(t).toMatchObject({ mimeType: 'video/mp4', source: 'content-type' });
  });

  it('(3) octet-stream, unknown or missing Content-Type: the bytes decide', async () => {
    const png = sniffs({ ext: 'png', mime: 'image/png' });
    for (const contentType of [undefined, 'application/octet-stream', 'application/x-made-up', '']) {
      const t = await detectType({ fileName: 'blob', contentType, sniff: png });
      expect(t).toEqual({ mimeType: 'image/png', typeMessage: 'imageMessage', source: 'bytes' });
    }
  });

  it('bytes of a format outside the table keep their precise MIME type and are a document', async () => {
    const t = await detectType({ fileName: 'db', sniff: sniffs({ ext: 'sqlite', mime: 'application/x-sqlite3' }) });
    expect(t).toEqual({ mimeType: 'application/x-sqlite3', typeMessage: 'documentMessage', source: 'bytes' });
  });

  it('(4) nothing tells: a generic binary document', async () => {
    const t = await detectType({ fileName: 'blob.unknownext', contentType: 'application/octet-stream', sniff: sniffs(undefined) });
    expect(t).toEqual({ mimeType: 'application/octet-stream', typeMessage: 'documentMessage', source: 'fallback' });
  });

  it('typeForMime knows aliases and rejects strangers', () => {
    expect(typeForMime('image/jpg')?.mimeType).toBe('image/jpeg');
    expect(typeForMime('audio/x-wav')?.typeMessage).toBe('audioMessage');
    expect(typeForMime('application/x-unheard-of')).toBeUndefined();
    expect(typeForMime('constructor')).toBeUndefined();
  });
});
