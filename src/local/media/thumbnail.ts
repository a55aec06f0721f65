/**
 * jpegThumbnail: a small JPEG preview of an image, base64-encoded, made with
 * pure-JS codecs (jpeg-js, pngjs, omggif and a BMP reader below) so nothing
 * native is installed. The format is read from the bytes, not from the name,
 * so `photo.png` holding JPEG bytes still gets a preview. WebP and other
 * formats have no pure-JS decoder here: they get no thumbnail.
 */
import * as jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { GifReader } from 'omggif';
import { isGif } from './animation.js';

export interface ThumbnailOptions {
  /** Longest side of the preview, px. @default 100 */
  maxSide?: number;
  /** JPEG quality, 1-100. @default 60 */
  quality?: number;
  /**
   * Largest source image decoded, in pixels (width × height). Decoding needs
   * 4 bytes per pixel, so this bounds memory against a tiny file that claims
   * a huge canvas. @default 25_000_000
   */
  maxPixels?: number;
}

/** Decoded pixels, 4 bytes (RGBA) per pixel, rows top to bottom. */
interface Rgba {
  width: number;
  height: number;
  data: Uint8Array;
}

/** The thumbnail formats that can be decoded here, by magic bytes. */
export type DecodableImage = 'jpeg' | 'png' | 'gif' | 'bmp';

export function decodableFormat(b: Uint8Array): DecodableImage | undefined {
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b.length >= 8 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) return 'png';
  if (isGif(b)) return 'gif';
  if (b.length >= 26 && b[0] === 0x42 && b[1] === 0x4d) return 'bmp';
  return undefined;
}

/**
 * A base64 JPEG at most `maxSide` px on its longest side, or undefined when
 * the bytes are not a decodable image, are broken, or are larger than
 * `maxPixels`. Never throws: a missing preview must not fail a send.
 * Transparent pixels are laid on white, as JPEG has no alpha. The first
 * frame stands for an animated GIF. EXIF orientation is not applied.
 */
export function makeJpegThumbnail(bytes: Uint8Array, options: ThumbnailOptions = {}): string | undefined {
  const maxSide = options.maxSide ?? 100;
  const quality = options.quality ?? 60;
  const maxPixels = options.maxPixels ?? 25_000_000;
  try {
    const image = decode(bytes, maxPixels);
    if (!image || image.width < 1 || image.height < 1) return undefined;
    const small = downscaleOnWhite(image, maxSide);
    return jpeg.encode(small, quality).data.toString('base64');
  } catch {
    return undefined;
  }
}

function decode(bytes: Uint8Array, maxPixels: number): Rgba | undefined {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  switch (decodableFormat(buf)) {
    case 'jpeg':
      return jpeg.decode(buf, {
        useTArray: true,
        formatAsRGBA: true,
        maxResolutionInMP: maxPixels / 1e6,
        maxMemoryUsageInMB: Math.ceil((maxPixels * 8) / 1e6),
      });
    case 'png': {
      // IHDR sits at a fixed place: check the canvas before inflating it.
      if (buf.length < 24 || buf.readUInt32BE(16) * buf.readUInt32BE(20) > maxPixels) return undefined;
      return PNG.sync.read(buf);
    }
    case 'gif': {
      if (buf.readUInt16LE(6) * buf.readUInt16LE(8) > maxPixels) return undefined;
      const reader = new GifReader(buf);
      const data = new Uint8Array(reader.width * reader.height * 4);
      reader.decodeAndBlitFrameRGBA(0, data);
      return { width: reader.width, height: reader.height, data };
    }
    case 'bmp':
      return decodeBmp(buf, maxPixels);
    default:
      return undefined;
  }
}

/**
 * Uncompressed 24- and 32-bit BMP (BI_RGB), the common output of image
 * tools. Paletted and compressed BMPs get no thumbnail.
 */
function decodeBmp(b: Buffer, maxPixels: number): Rgba | undefined {
  const offset = b.readUInt32LE(10);
  const width = b.readInt32LE(18);
  const rawHeight = b.readInt32LE(22);
  const bpp = b.readUInt16LE(28);
  const compression = b.length >= 34 ? b.readUInt32LE(30) : 0;
  const height = Math.abs(rawHeight);
  if (width <= 0 || height === 0 || width * height > maxPixels) return undefined;
  if (compression !== 0 || (bpp !== 24 && bpp !== 32)) return undefined;
  const bytesPerPixel = bpp / 8;
  const stride = Math.ceil((width * bytesPerPixel) / 4) * 4;
  if (offset + stride * height > b.length) return undefined;
  const data = new Uint8Array(width * height * 4);
  const bottomUp = rawHeight > 0;
  for (let y = 0; y < height; y++) {
    const row = offset + (bottomUp ? height - 1 - y : y) * stride;
    for (let x = 0; x < width; x++) {
      const s = row + x * bytesPerPixel;
      const d = (y * width + x) * 4;
      data[d] = b[s + 2]!;
      data[d + 1] = b[s + 1]!;
      data[d + 2] = b[s]!;
      data[d + 3] = 255; // BI_RGB's fourth byte is reserved, not alpha
    }
  }
  return { width, height, data };
}

/**
 * Area-average downscale (each output pixel is the mean of the source box it
 * covers), compositing alpha over white on the way. Never upscales.
 */
function downscaleOnWhite(src: Rgba, maxSide: number): { width: number; height: number; data: Buffer } {
  const scale = Math.min(1, maxSide / Math.max(src.width, src.height));
  const width = Math.max(1, Math.round(src.width * scale));
  const height = Math.max(1, Math.round(src.height * scale));
  const out = Buffer.alloc(width * height * 4);
  for (let ty = 0; ty < height; ty++) {
    const y0 = Math.floor((ty * src.height) / height);
    const y1 = Math.max(y0 + 1, Math.floor(((ty + 1) * src.height) / height));
    for (let tx = 0; tx < width; tx++) {
      const x0 = Math.floor((tx * src.width) / width);
      const x1 = Math.max(x0 + 1, Math.floor(((tx + 1) * src.width) / width));
      let r = 0;
      let g = 0;
      let bl = 0;
      for (let y = y0; y < y1; y++) {
        let s = (y * src.width + x0) * 4;
        for (let x = x0; x < x1; x++, s += 4) {
          const a = src.data[s + 3]! / 255;
          const white = 255 * (1 - a);
          r += src.data[s]! * a + white;
          g += src.data[s + 1]! * a + white;
          bl += src.data[s + 2]! * a + white;
        }
      }
      const n = (x1 - x0) * (y1 - y0);
      const d = (ty * width + tx) * 4;
      out[d] = Math.round(r / n);
      out[d + 1] = Math.round(g / n);
      out[d + 2] = Math.round(bl / n);
      out[d + 3] = 255;
    }
  }
  return { width, height, data: out };
}
