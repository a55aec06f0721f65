/**
 * Media built in memory for the tests of fetching, sniffing and thumbnails:
 * real images encoded with the same pure-JS codecs users would meet, a
 * minimal PDF, and noise no detector recognises. Served by
 * ./file-server.ts.
 */
import { PNG } from 'pngjs';
import { GifWriter } from 'omggif';
import * as jpeg from 'jpeg-js';

/** A w×h PNG: a red/blue gradient, with alpha when `alpha` is set. */
export function makePng(width: number, height: number, alpha = 255): Buffer {
  const png = new PNG({ width, height });
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4;
      png.data[i] = Math.round((x / width) * 255);
      png.data[i + 1] = 40;
      png.data[i + 2] = Math.round((y / height) * 255);
      png.data[i + 3] = alpha;
    }
  }
  return PNG.sync.write(png);
}

/** A GIF with `frames` frames of w×h pixels, alternating palette colours. */
export function makeGif(width: number, height: number, frames: number): Buffer {
  const buf = new Uint8Array(1024 + width * height * frames * 2);
  const writer = new GifWriter(buf, width, height, { palette: [0xff0000, 0x00ff00, 0x0000ff, 0xffffff], loop: 0 });
  for (let f = 0; f < frames; f++) {
    const pixels = Array.from({ length: width * height }, (_, i) => (i + f) % 4);
    writer.addFrame(0, 0, width, height, pixels, { delay: 10 });
  }
  return Buffer.from(buf.subarray(0, writer.end()));
}

export function makeJpeg(width: number, height: number): Buffer {
  const data = Buffer.alloc(width * height * 4);
  for (let i = 0; i < width * height; i++) data.writeUInt32BE(0x3366ccff, i * 4);
  return jpeg.encode({ width, height, data }, 80).data;
}

/** Uncompressed 24-bit bottom-up BMP filled with one colour. */
export function makeBmp(width: number, height: number, rgb: [number, number, number]): Buffer {
  const stride = Math.ceil((width * 3) / 4) * 4;
  const b = Buffer.alloc(54 + stride * height);
  b.write('BM', 0, 'ascii');
  b.writeUInt32LE(b.length, 2);
  b.writeUInt32LE(54, 10);
  b.writeUInt32LE(40, 14);
  b.writeInt32LE(width, 18);
  b.writeInt32LE(height, 22);
  b.writeUInt16LE(1, 26);
  b.writeUInt16LE(24, 28);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const p = 54 + y * stride + x * 3;
      b[p] = rgb[2];
      b[p + 1] = rgb[1];
      b[p + 2] = rgb[0];
    }
  return b;
}

function riffChunk(fourcc: string, payload: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.write(fourcc, 0, 'ascii');
  head.writeUInt32LE(payload.length, 4);
  return Buffer.concat([head, payload, payload.length % 2 ? Buffer.alloc(1) : Buffer.alloc(0)]);
}

/** A WebP container: VP8X (+ ANIM when animated). Enough for type and animation detection. */
export function makeWebp(animated: boolean): Buffer {
  const vp8x = Buffer.alloc(10);
  vp8x[0] = animated ? 0x02 : 0x00;
  vp8x.writeUIntLE(15, 4, 3); // canvas width - 1
  vp8x.writeUIntLE(15, 7, 3);
  const chunks = [riffChunk('VP8X', vp8x)];
  if (animated) chunks.push(riffChunk('ANIM', Buffer.from([255, 255, 255, 255, 0, 0])));
  // A lossless VP8L bitstream header for a 16×16 image (signature 0x2f).
  chunks.push(riffChunk('VP8L', Buffer.from([0x2f, 0x0f, 0xc0, 0x03, 0x00, 0x00, 0x00])));
  const body = Buffer.concat([Buffer.from('WEBP', 'ascii'), ...chunks]);
  const riff = Buffer.alloc(8);
  riff.write('RIFF', 0, 'ascii');
  riff.writeUInt32LE(body.length, 4);
  return Buffer.concat([riff, body]);
}

export function makePdf(): Buffer {
  return Buffer.from('%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n', 'latin1');
}

/**
 * Noise no detector recognises: a fixed pseudo-random sequence (so a test
 * cannot flake on bytes that happen to look like a format).
 */
export function makeNoise(size: number, seed = 12345): Buffer {
  const b = Buffer.alloc(size);
  let x = seed >>> 0;
  for (let i = 0; i < size; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    b[i] = x >>> 24;
  }
  b.set([0x00, 0x13, 0x37, 0x00], 0);
  return b;
}
