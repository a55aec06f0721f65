/**
 * The contract between the local service (src/local) and its media store.
 */
import type { Logger } from '../../util/logger.js';
import type { Clock } from '../../util/clock.js';
import type { TypeSource } from './detect-type.js';
import type { MediaTypeMessage } from './mime-table.js';
import type { ThumbnailOptions } from './thumbnail.js';

/** A file fetched from a sendFileByUrl link and kept on disk. */
export interface FetchedFile {
  /** Store id: 32 lower-case hex characters, safe in a URL path. */
  id: string;
  /** The caller's fileName, unchanged (it is metadata only, never a path on disk). */
  fileName: string;
  /** Canonical MIME type, e.g. `image/jpeg`; `application/octet-stream` when nothing told. */
  mimeType: string;
  typeMessage: MediaTypeMessage;
  /** Bytes stored. */
  size: number;
  /** Base64 JPEG preview, at most 100 px a side by default; images only, and only those that can be decoded (JPEG, PNG, GIF, uncompressed BMP). */
  jpegThumbnail?: string;
  /** True for a GIF with more than one frame or an animated WebP. */
  isAnimated: boolean;
  /** Which step of the spec's type order decided mimeType/typeMessage. */
  detectedBy?: TypeSource;
  /** Clock time the file was stored, ms since the epoch. */
  storedAt?: number;
}

/** A stored file opened for reading. */
export interface OpenedFile {
  /** The bytes; the caller consumes or destroys it. */
  stream: NodeJS.ReadableStream;
  size: number;
  mimeType: string;
  fileName: string;
}

export interface MediaStore {
  /**
   * Fetches urlFile (timeouts, size cap, bounded redirects), determines the
   * type in the spec's order, stores the bytes under dir. Throws MsgflowError
   * with a clear reason on failure (codes FILE_FETCH_FAILED,
   * FILE_FETCH_STATUS, FILE_FETCH_TIMEOUT, FILE_TOO_LARGE,
   * FILE_TOO_MANY_REDIRECTS); nothing is left behind then.
   */
  fetchAndStore(input: { urlFile: string; fileName: string; signal?: AbortSignal }): Promise<FetchedFile>;
  /**
   * Stores bytes given with the request (sendFileByUpload, uploadFile): typed
   * in the same order as a fetched file (the name's extension, the given
   * Content-Type, the bytes), kept for `retentionMs` (the store's own when
   * absent). Without a name it is named `<id>.<extension of its type>`
   * (`.bin` when the type stays unknown). Nothing is left behind when it fails.
   */
  storeUpload(input: { data: Uint8Array; fileName?: string; mimeType?: string; retentionMs?: number }): Promise<FetchedFile>;
  /** What was learnt about a stored file, or undefined when missing, expired or the id is malformed. */
  describe(id: string): Promise<FetchedFile | undefined>;
  /** The stored file, or undefined when missing, expired (older than retentionMs by the Clock) or the id is malformed. */
  open(id: string): Promise<OpenedFile | undefined>;
  /** Deletes files older than retentionMs (and leftovers of interrupted writes); returns how many stored files went. */
  purgeExpired(): Promise<number>;
  /** Ends what the store runs (its thumbnail worker); the local service closes its store with itself. */
  close(): Promise<void>;
}

export interface MediaStoreOptions {
  /** Folder of the store; created when missing. Holds `<id>/` folders, `.tmp/` and `.trash/`. */
  dir: string;
  /** Time of storing and of expiry. */
  clock: Clock;
  /** Largest file fetched, bytes. */
  maxBytes: number;
  /** Cap on one whole download, ms. */
  timeoutMs: number;
  /** Redirects followed per fetch. */
  maxRedirects: number;
  /** How long a file is kept, ms (the spec: 24 hours). */
  retentionMs: number;
  logger?: Logger;
  /** Cap on each phase of a fetch (lookup, connect, TLS, response head, silence), ms. @default Math.min(timeoutMs, 10_000) */
  phaseTimeoutMs?: number;
  /** Thumbnail settings, or false for none. @default { maxSide: 100, quality: 60, maxPixels: 25_000_000 } */
  thumbnail?: ThumbnailOptions | false;
  /**
   * Images up to this size are read into memory for the thumbnail and the
   * animation check; for larger ones only this prefix is read (no
   * thumbnail; GIF frames counted within it). @default 33554432 (32 MiB)
   */
  maxDecodeBytes?: number;
  /** User-Agent of fetches. @default 'msgflow-local' */
  userAgent?: string;
  /**
   * Fetch from loopback, private and link-local addresses (after DNS
   * resolution, and on every redirect). @default false
   */
  allowPrivate?: boolean;
  /** msgflow's own URLs (its publicUrl, its port): fetched whatever their address. */
  isOwn?: (url: URL) => boolean;
}
