import { describe, expect, it } from 'vitest';
import * as jpeg from 'jpeg-js';
import { countGifFrames, isAnimatedImage } from '../../src/local/media/animation.js';
import { makeJpegThumbnail } from '../../src/local/media/thumbnail.js';
import { makeBmp, makeGif, makeJpeg, makePdf, makePng, makeWebp } from '../support/media.js';

function decodeThumb(b64: string | undefined) {
  expect(b64).toBeTypeOf('string');
  const bytes = Buffer.from(b64!, 'base64');
  expect([...bytes.subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
  return jpeg.decode(bytes, { useTArray: true });
}

describe('isAnimatedImage', () => {
  it('counts GIF frames by walking the blocks', () => {
    expect(countGifFrames(makeGif(8, 8, 1))).toBe(1);
    expect(countGifFrames(makeGif(8, 8, 3))).toBe(3);
    expect(isAnimatedImage(makeGif(8, 8, 1))).toBe(false);
    expect(isAnimatedImage(makeGif(8, 8, 2))).toBe(true);
  });

  it('answers from a prefix: a GIF cut inside its first frame is not (yet) animated', () => {
    const gif = makeGif(32, 32, 2);
    expect(isAnimatedImage(gif.subarray(0, 40))).toBe(false);
  });

  it('WebP: VP8X animation flag / ANIM chunk', () => {
    expect(isAnimatedImage(makeWebp(true))).toBe(true);
    expect(isAnimatedImage(makeWebp(false))).toBe(false);
  });

  it('anything else is not animated', () => {
    expect(isAnimatedImage(makePng(4, 4))).toBe(false);
    expect(isAnimatedImage(makePdf())).toBe(false);
    expect(isAnimatedImage(Buffer.alloc(0))).toBe(false);
  });
});

describe('makeJpegThumbnail', () => {
  it('PNG: a JPEG of at most 100 px a side keeping the aspect ratio', () => {
    const t = decodeThumb(makeJpegThumbnail(makePng(300, 200)));
    expect([t.width, t.height]).toEqual([100, 67]);
  });

  it('does not upscale a small image', () => {
    const t = decodeThumb(makeJpegThumbnail(makePng(20, 10)));
    expect([t.width, t.height]).toEqual([20, 10]);
  });

  it('lays transparency on white', () => {
    const t = decodeThumb(makeJpegThumbnail(makePng(50, 50, 0)));
    expect(t.data[0]).toBeGreaterThan(245);
    expect(t.data[1]).toBeGreaterThan(245);
  });

  it('JPEG, GIF (first frame) and 24-bit BMP sources', () => {
    expect(decodeThumb(makeJpegThumbnail(makeJpeg(240, 120))).width).toBe(100);
    expect(decodeThumb(makeJpegThumbnail(makeGif(40, 20, 2))).width).toBe(40);
    const bmp = decodeThumb(makeJpegThumbnail(makeBmp(10, 6, [255, 0, 0]), { maxSide: 5 }));
    expect([bmp.width, bmp.height]).toEqual([5, 3]);
    expect(bmp.data[0]).toBeGreaterThan(200); // red survives the BGR → RGB swap
    expect(bmp.data[2]).toBeLessThan(60);
  });

  it('omits the preview for WebP, non-images, broken bytes and oversized canvases', () => {
    expect(makeJpegThumbnail(makeWebp(false))).toBeUndefined();
    expect(makeJpegThumbnail(makePdf())).toBeUndefined();
    expect(makeJpegThumbnail(makePng(64, 64).subarray(0, 60))).toBeUndefined();
    expect(makeJpegThumbnail(makePng(200, 200), { maxPixels: 10_000 })).toBeUndefined();
    expect(makeJpegThumbnail(makeJpeg(200, 200), { maxPixels: 10_000 })).toBeUndefined();
    expect(makeJpegThumbnail(makeGif(200, 200, 1), { maxPixels: 10_000 })).toBeUndefined();
    expect(makeJpegThumbnail(makeBmp(200, 200, [0, 0, 0]), { maxPixels: 10_000 })).toBeUndefined();
  });
});
