/**
 * The file kinds the local service knows by name: extension → MIME type →
 * the message type the file is sent as. Only images a messenger shows inline
 * become `imageMessage`; everything else that is neither video nor audio is a
 * `documentMessage`.
 */

/** The message types a fetched file can be sent as. */
export type MediaTypeMessage = 'imageMessage' | 'videoMessage' | 'documentMessage' | 'audioMessage';

/** MIME type used when nothing tells the type: a generic binary file. */
export const GENERIC_BINARY = 'application/octet-stream';

interface Kind {
  readonly mime: string;
  readonly typeMessage: MediaTypeMessage;
  /** Other spellings seen in Content-Type headers for the same kind. */
  readonly aliases?: readonly string[];
}

const image = (mime: string, aliases?: string[]): Kind => ({ mime, typeMessage: 'imageMessage', aliases });
const video = (mime: string, aliases?: string[]): Kind => ({ mime, typeMessage: 'videoMessage', aliases });
const audio = (mime: string, aliases?: string[]): Kind => ({ mime, typeMessage: 'audioMessage', aliases });
const doc = (mime: string, aliases?: string[]): Kind => ({ mime, typeMessage: 'documentMessage', aliases });

/** Lower-case extension without the dot → kind. */
const BY_EXTENSION: Readonly<Record<string, Kind>> = {
  // images shown inline
  jpg: image('image/jpeg', ['image/jpg', 'image/pjpeg']),
  jpeg: image('image/jpeg'),
  jpe: image('image/jpeg'),
  png: image('image/png', ['image/x-png']),
  gif: image('image/gif'),
  webp: image('image/webp'),
  bmp: image('image/bmp', ['image/x-bmp', 'image/x-ms-bmp']),
  // video
  mp4: video('video/mp4'),
  m4v: video('video/x-m4v'),
  mov: video('video/quicktime'),
  avi: video('video/x-msvideo', ['video/avi', 'video/msvideo']),
  mkv: video('video/x-matroska', ['video/matroska']),
  webm: video('video/webm'),
  '3gp': video('video/3gpp'),
  '3g2': video('video/3gpp2'),
  mpeg: video('video/mpeg'),
  mpg: video('video/mpeg'),
  // audio
  mp3: audio('audio/mpeg', ['audio/mp3', 'audio/x-mp3', 'audio/mpeg3']),
  ogg: audio('audio/ogg', ['application/ogg']),
  oga: audio('audio/ogg'),
  opus: audio('audio/opus'),
  wav: audio('audio/wav', ['audio/x-wav', 'audio/wave', 'audio/vnd.wave']),
  m4a: audio('audio/mp4', ['audio/x-m4a', 'audio/m4a']),
  aac: audio('audio/aac', ['audio/x-aac', 'audio/aacp']),
  amr: audio('audio/amr'),
  flac: audio('audio/flac', ['audio/x-flac']),
  weba: audio('audio/webm'),
  // documents
  pdf: doc('application/pdf', ['application/x-pdf']),
  doc: doc('application/msword'),
  docx: doc('application/vnd.openxmlformats-officedocument.wordprocessingml.document'),
  xls: doc('application/vnd.ms-excel'),
  xlsx: doc('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'),
  ppt: doc('application/vnd.ms-powerpoint'),
  pptx: doc('application/vnd.openxmlformats-officedocument.presentationml.presentation'),
  odt: doc('application/vnd.oasis.opendocument.text'),
  ods: doc('application/vnd.oasis.opendocument.spreadsheet'),
  odp: doc('application/vnd.oasis.opendocument.presentation'),
  rtf: doc('application/rtf', ['text/rtf']),
  txt: doc('text/plain'),
  log: doc('text/plain'),
  md: doc('text/markdown'),
  csv: doc('text/csv'),
  tsv: doc('text/tab-separated-values'),
  json: doc('application/json'),
  xml: doc('application/xml', ['text/xml']),
  html: doc('text/html'),
  htm: doc('text/html'),
  yaml: doc('application/yaml', ['application/x-yaml', 'text/yaml']),
  yml: doc('application/yaml'),
  zip: doc('application/zip', ['application/x-zip-compressed']),
  rar: doc('application/vnd.rar', ['application/x-rar-compressed', 'application/x-rar']),
  '7z': doc('application/x-7z-compressed'),
  gz: doc('application/gzip', ['application/x-gzip']),
  tar: doc('application/x-tar'),
  apk: doc('application/vnd.android.package-archive'),
  epub: doc('application/epub+zip'),
  svg: doc('image/svg+xml'),
  tif: doc('image/tiff'),
  tiff: doc('image/tiff'),
  heic: doc('image/heic'),
  ico: doc('image/x-icon', ['image/vnd.microsoft.icon']),
  vcf: doc('text/vcard', ['text/x-vcard']),
  ics: doc('text/calendar'),
};

/** Every MIME spelling we know (canonical and aliases) → its kind, canonical MIME first. */
const BY_MIME: ReadonlyMap<string, Kind> = (() => {
  const map = new Map<string, Kind>();
  for (const kind of Object.values(BY_EXTENSION)) {
    if (!map.has(kind.mime)) map.set(kind.mime, kind);
    for (const alias of kind.aliases ?? []) if (!map.has(alias)) map.set(alias, kind);
  }
  return map;
})();

/** A resolved type: canonical MIME type and message type. */
export interface KnownType {
  mimeType: string;
  typeMessage: MediaTypeMessage;
}

/**
 * The extension of a file name as the type order understands it: the text
 * after the last dot of the last path segment, lower-cased; `''` for none.
 * A leading dot (`.bashrc`) or a trailing one (`report.`) is not an extension.
 */
export function extensionOf(fileName: string): string {
  const base = fileName.split(/[\\/]/).pop() ?? '';
  const dot = base.lastIndexOf('.');
  if (dot <= 0 || dot === base.length - 1) return '';
  return base.slice(dot + 1).toLowerCase();
}

/** The type for a known extension (without the dot), or undefined. */
export function typeForExtension(ext: string): KnownType | undefined {
  const kind = Object.hasOwn(BY_EXTENSION, ext) ? BY_EXTENSION[ext] : undefined;
  return kind && { mimeType: kind.mime, typeMessage: kind.typeMessage };
}

/**
 * The type for a MIME type we know (parameters such as `; charset=` and case
 * are ignored), answered with its canonical spelling; undefined otherwise.
 */
export function typeForMime(mime: string): KnownType | undefined {
  const kind = BY_MIME.get(essenceOf(mime));
  return kind && { mimeType: kind.mime, typeMessage: kind.typeMessage };
}

/** The usual extension (without the dot) of a MIME type we know, or undefined. */
export function extensionForMime(mime: string): string | undefined {
  const canonical = typeForMime(mime)?.mimeType;
  return canonical === undefined ? undefined : Object.keys(BY_EXTENSION).find((ext) => BY_EXTENSION[ext]!.mime === canonical);
}

/** `Image/PNG; charset=x` → `image/png`. */
export function essenceOf(mime: string): string {
  return (mime.split(';')[0] ?? '').trim().toLowerCase();
}
