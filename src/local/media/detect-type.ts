/**
 * The spec's type order for sendFileByUrl: (1) the extension of `fileName`,
 * (2) the link's Content-Type, (3) the file's bytes, (4) a generic binary.
 */
import { GENERIC_BINARY, essenceOf, extensionOf, typeForExtension, typeForMime, type MediaTypeMessage } from './mime-table.js';

/** Which step of the type order decided. */
export type TypeSource = 'extension' | 'content-type' | 'bytes' | 'fallback';

export interface DetectedType {
  mimeType: string;
  typeMessage: MediaTypeMessage;
  source: TypeSource;
}

/** What byte sniffing found (file-type's answer shape). */
export interface SniffedType {
  ext: string;
  mime: string;
}

export interface DetectTypeInput {
  fileName: string;
  /** The Content-Type header of the (final) response, if any. */
  contentType?: string;
  /** Looks at the bytes; only called when steps 1 and 2 did not decide. */
  sniff: () => Promise<SniffedType | undefined>;
}

/**
 * Headers that say nothing about the type: servers send them for "some
 * bytes", so they count as absent and the bytes get a say.
 */
const UNINFORMATIVE = new Set(['application/octet-stream', 'binary/octet-stream', 'application/unknown', 'application/binary']);

/**
 * The first step of the type order alone: the type `fileName`'s extension
 * names, or undefined when it names none we know (then the link's
 * Content-Type or the bytes decide, once fetched). Known the moment a
 * message is queued, so a queued file is shown with the type it is sent as.
 */
export function typeByFileName(fileName: string): DetectedType | undefined {
  const byExt = typeForExtension(extensionOf(fileName));
  return byExt && { ...byExt, source: 'extension' };
}

/**
 * Decides a file's MIME type and message type in the spec's order.
 *
 * "fileName has no extension" is read as "fileName has no extension we
 * know": `report.xyz` falls through to the Content-Type exactly like
 * `report`, because an unknown extension cannot name a type. The caller
 * keeps the user's fileName either way. A Content-Type we do not know
 * (`application/x-foo`) or a generic one (`application/octet-stream`)
 * counts as absent, so the bytes decide next.
 *
 * @example
 * await detectType({ fileName: 'cat.jpg', contentType: 'image/png', sniff })
 * // → { mimeType: 'image/jpeg', typeMessage: 'imageMessage', source: 'extension' }
 */
export async function detectType(input: DetectTypeInput): Promise<DetectedType> {
  const byExt = typeByFileName(input.fileName);
  if (byExt) return byExt;

  if (input.contentType !== undefined) {
    const essence = essenceOf(input.contentType);
    const byHeader = UNINFORMATIVE.has(essence) ? undefined : typeForMime(essence);
    if (byHeader) return { ...byHeader, source: 'content-type' };
  }

  const sniffed = await input.sniff();
  if (sniffed) {
    // Prefer our table (canonical spelling, our image/document split); a
    // format only file-type knows (e.g. a SQLite file) is still named
    // precisely, and sent as a document.
    const known = typeForMime(sniffed.mime) ?? typeForExtension(sniffed.ext.toLowerCase());
    return known ? { ...known, source: 'bytes' } : { mimeType: sniffed.mime, typeMessage: 'documentMessage', source: 'bytes' };
  }

  return { mimeType: GENERIC_BINARY, typeMessage: 'documentMessage', source: 'fallback' };
}
