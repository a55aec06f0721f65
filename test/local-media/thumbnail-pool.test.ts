import { describe, expect, it } from 'vitest';
import { makeJpegThumbnail } from '../../src/local/media/thumbnail.js';
import { makeJpegThumbnailAsync, thumbnailThread } from '../../src/local/media/thumbnail-pool.js';
import { makePdf, makePng } from '../support/media.js';

describe('thumbnail worker', () => {
  it('makes the same thumbnail as the in-thread function, in a worker thread', async () => {
    const png = makePng(120, 80);
    const [a, b, none] = await Promise.all([
      makeJpegThumbnailAsync(png),
      makeJpegThumbnailAsync(makePng(30, 30)),
      makeJpegThumbnailAsync(makePdf()),
    ]);
    expect(thumbnailThread()).toBe('worker');
    expect(a).toBe(makeJpegThumbnail(png));
    expect(Buffer.from(b!, 'base64').subarray(0, 2).toString('hex')).toBe('ffd8');
    expect(none).toBeUndefined();
  });
});
