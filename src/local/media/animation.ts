/**
 * Whether an image is animated, read from its bytes: a GIF with more than one
 * frame, or a WebP with the animation flag or an ANIM chunk. Both parsers
 * accept a prefix of the file and answer from what they saw, so a caller can
 * bound how much it reads.
 */

/** True for an animated GIF or WebP; false for anything else, including a truncated or broken file. */
export function isAnimatedImage(bytes: Uint8Array): boolean {
  if (isGif(bytes)) return countGifFrames(bytes, 2) >= 2;
  if (isWebp(bytes)) return webpIsAnimated(bytes);
  return false;
}

export function isGif(b: Uint8Array): boolean {
  const magic = ascii(b, 0, 6);
  return magic === 'GIF87a' || magic === 'GIF89a';
}

export function isWebp(b: Uint8Array): boolean {
  return ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 4) === 'WEBP';
}

/**
 * Counts image descriptors by walking the GIF block structure (header,
 * colour tables, extensions and image data sub-blocks), stopping at
 * `stopAt` frames, at the trailer, or where the bytes end or stop making
 * sense. Walking the blocks, rather than searching for the 0x2C byte, keeps
 * pixel data from being mistaken for a frame.
 */
export function countGifFrames(b: Uint8Array, stopAt = Number.POSITIVE_INFINITY): number {
  if (!isGif(b) || b.length < 13) return 0;
  let pos = 13;
  const packed = b[10]!;
  if (packed & 0x80) pos += 3 * (1 << ((packed & 0x07) + 1));
  let frames = 0;
  while (pos < b.length && frames < stopAt) {
    const block = b[pos]!;
    if (block === 0x3b) break; // trailer
    if (block === 0x21) {
      // extension: introducer, label, then data sub-blocks
      const end = skipSubBlocks(b, pos + 2);
      if (end < 0) break;
      pos = end;
    } else if (block === 0x2c) {
      if (pos + 10 > b.length) break;
      frames += 1;
      const local = b[pos + 9]!;
      pos += 10;
      if (local & 0x80) pos += 3 * (1 << ((local & 0x07) + 1));
      pos += 1; // LZW minimum code size
      const end = skipSubBlocks(b, pos);
      if (end < 0) break;
      pos = end;
    } else {
      break; // not a GIF block: a broken file
    }
  }
  return frames;
}

/** Position after the terminating zero-length sub-block, or -1 when the bytes end first. */
function skipSubBlocks(b: Uint8Array, pos: number): number {
  while (pos < b.length) {
    const size = b[pos]!;
    pos += 1;
    if (size === 0) return pos;
    pos += size;
  }
  return -1;
}

/** Animation flag of the VP8X header (bit 1 of its first byte) or an ANIM chunk. */
function webpIsAnimated(b: Uint8Array): boolean {
  let pos = 12;
  while (pos + 8 <= b.length) {
    const fourcc = ascii(b, pos, 4);
    const size = readU32LE(b, pos + 4);
    if (fourcc === 'ANIM' || fourcc === 'ANMF') return true;
    if (fourcc === 'VP8X' && pos + 8 < b.length) return (b[pos + 8]! & 0x02) !== 0;
    pos += 8 + size + (size & 1); // chunks are padded to an even size
  }
  return false;
}

function readU32LE(b: Uint8Array, pos: number): number {
  return (b[pos]! | (b[pos + 1]! << 8) | (b[pos + 2]! << 16) | (b[pos + 3]! << 24)) >>> 0;
}

function ascii(b: Uint8Array, start: number, len: number): string {
  if (start + len > b.length) return '';
  let s = '';
  for (let i = start; i < start + len; i++) s += String.fromCharCode(b[i]!);
  return s;
}
