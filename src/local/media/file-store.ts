/**
 * The media store: files fetched for sendFileByUrl, kept on disk for the
 * retention period.
 *
 * Layout under `dir`:
 * - `<id>/data` the bytes, `<id>/meta.json` what was learnt about them.
 * - `.tmp/<id>/` a fetch in progress. The finished folder is renamed into
 *   place in one step, so a reader (or a restart after kill -9) sees a whole
 *   file with its metadata or nothing.
 * - `.trash/` folders being deleted: renamed out first, so a purge that is
 *   interrupted never leaves a half-deleted file visible.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open as openFile, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MsgflowError } from '../../api/errors.js';
import { isAnimatedImage, isGif, isWebp } from './animation.js';
import { detectType, type TypeSource } from './detect-type.js';
import { displayUrl, downloadToFile } from './download.js';
import { extensionForMime, type MediaTypeMessage } from './mime-table.js';
import { ThumbnailPool } from './thumbnail-pool.js';
import type { FetchedFile, MediaStore, MediaStoreOptions, OpenedFile } from './types.js';

/**
 * file-type's sniffing, loaded with the first file whose name and Content-Type leave its type
 * open: ~40 ms of CPU at start-up that most service processes never need.
 */
const fileTypeFromFile = async (file: string) => (await import('file-type')).fileTypeFromFile(file);

const ID_PATTERN = /^[0-9a-f]{32}$/;
const DATA = 'data';
const META = 'meta.json';
const TMP = '.tmp';
const TRASH = '.trash';
const SNIFF_BYTES = 4100;

/** meta.json of a stored file. */
interface StoredMeta {
  version: 1;
  id: string;
  fileName: string;
  mimeType: string;
  typeMessage: MediaTypeMessage;
  size: number;
  storedAt: number;
  isAnimated: boolean;
  jpegThumbnail?: string;
  detectedBy: TypeSource;
  /** The link, query string stripped; `upload` for bytes sent with the request. */
  source: string;
  /** How long this file is kept, ms, when not the store's retentionMs (uploads: 15 days). */
  retentionMs?: number;
}

/**
 * Creates a media store in `opts.dir`.
 *
 * @example
 * const media = createMediaStore({
 *   dir: join(dataDir, 'files'), clock: systemClock,
 *   maxBytes: 100 * 1024 * 1024, timeoutMs: 30_000, maxRedirects: 5, retentionMs: 24 * 3600_000,
 * });
 * const file = await media.fetchAndStore({ urlFile: 'https://example.com/cat.jpg', fileName: 'cat.jpg' });
 * const opened = await media.open(file.id); // undefined after 24 h
 */
export function createMediaStore(opts: MediaStoreOptions): MediaStore {
  const ctx: StoreContext = {
    opts,
    tmpRoot: join(opts.dir, TMP),
    trashRoot: join(opts.dir, TRASH),
    maxDecodeBytes: opts.maxDecodeBytes ?? 32 * 1024 * 1024,
    inFlight: new Set<string>(),
    ready: undefined,
    thumbnails: new ThumbnailPool(),
  };
  return {
    fetchAndStore: (input) => fetchAndStore(ctx, input),
    storeUpload: (input) => storeUpload(ctx, input),
    describe: async (id) => {
      const meta = ID_PATTERN.test(id) ? await readMeta(ctx, id) : undefined;
      return meta && !isExpired(ctx, meta) ? toFetched(meta) : undefined;
    },
    open: (id) => openStored(ctx, id),
    purgeExpired: () => purgeExpired(ctx),
    close: () => ctx.thumbnails.close(),
  };
}

/** The state of one store, shared by its functions. */
interface StoreContext {
  readonly opts: MediaStoreOptions;
  readonly tmpRoot: string;
  readonly trashRoot: string;
  readonly maxDecodeBytes: number;
  /** Ids being fetched by this store: purge leaves their .tmp folders alone. */
  readonly inFlight: Set<string>;
  ready: Promise<void> | undefined;
  /** This store's thumbnail worker, ended by close(). */
  readonly thumbnails: ThumbnailPool;
}

function ensureDirs(ctx: StoreContext): Promise<void> {
  return (ctx.ready ??= Promise.all([mkdir(ctx.tmpRoot, { recursive: true }), mkdir(ctx.trashRoot, { recursive: true })]).then(
    () => undefined,
    (err: unknown) => {
      ctx.ready = undefined; // let a later call try again
      throw err;
    },
  ));
}

function isExpired(ctx: StoreContext, meta: Pick<StoredMeta, 'storedAt' | 'retentionMs'>): boolean {
  return ctx.opts.clock.now() - meta.storedAt >= (meta.retentionMs ?? ctx.opts.retentionMs);
}

/**
 * Runs `fill` in a fresh work folder under the temporary root (made by
 * ensureDirs; the folder is kept out of a purge while it works): the folder is removed when `fill` fails, and
 * `publish` moves it into the store when it succeeds.
 */
async function inWorkDir<T>(ctx: StoreContext, fill: (id: string, work: string, dataPath: string) => Promise<T>): Promise<T> {
  const id = randomBytes(16).toString('hex');
  const work = join(ctx.tmpRoot, id);
  ctx.inFlight.add(id);
  try {
    await mkdir(work);
    return await fill(id, work, join(work, DATA));
  } catch (err) {
    await rm(work, { recursive: true, force: true }).catch(() => undefined);
    throw err;
  } finally {
    ctx.inFlight.delete(id);
  }
}

async function fetchAndStore(ctx: StoreContext, input: { urlFile: string; fileName: string; signal?: AbortSignal }): Promise<FetchedFile> {
  const { opts } = ctx;
  await ensureDirs(ctx);
  try {
    return await inWorkDir(ctx, async (id, work, dataPath) => {
      const got = await downloadToFile(input.urlFile, dataPath, {
        maxBytes: opts.maxBytes,
        timeoutMs: opts.timeoutMs,
        phaseTimeoutMs: opts.phaseTimeoutMs,
        maxRedirects: opts.maxRedirects,
        userAgent: opts.userAgent,
        signal: input.signal,
        allowPrivate: opts.allowPrivate ?? false,
        isOwn: opts.isOwn,
      });
      const type = await detectType({ fileName: input.fileName, contentType: got.contentType, sniff: () => fileTypeFromFile(dataPath) });
      const looks = await lookOf(ctx, dataPath, got.size, type.typeMessage);
      const meta: StoredMeta = {
        version: 1,
        id,
        fileName: input.fileName,
        mimeType: type.mimeType,
        typeMessage: type.typeMessage,
        size: got.size,
        storedAt: opts.clock.now(),
        ...looks,
        detectedBy: type.source,
        source: got.finalUrl,
      };
      await publish(ctx, work, dataPath, meta);
      opts.logger?.debug('media: stored', {
        id,
        typeMessage: meta.typeMessage,
        mimeType: meta.mimeType,
        size: meta.size,
        detectedBy: meta.detectedBy,
        url: got.finalUrl,
      });
      return toFetched(meta);
    });
  } catch (err) {
    if (err instanceof MsgflowError) throw err;
    const reason = `could not store the file: ${(err as Error)?.message ?? String(err)}`;
    throw new MsgflowError('FILE_FETCH_FAILED', { url: displayUrl(input.urlFile), reason }, { cause: err });
  }
}

/** Stores bytes that came with the request, as fetchAndStore stores fetched ones. */
async function storeUpload(
  ctx: StoreContext,
  input: { data: Uint8Array; fileName?: string; mimeType?: string; retentionMs?: number },
): Promise<FetchedFile> {
  const { opts } = ctx;
  await ensureDirs(ctx);
  return inWorkDir(ctx, async (id, work, dataPath) => {
    await writeFile(dataPath, input.data);
    const type = await detectType({ fileName: input.fileName ?? '', contentType: input.mimeType, sniff: () => fileTypeFromFile(dataPath) });
    const meta: StoredMeta = {
      version: 1,
      id,
      fileName: input.fileName ?? `${id}.${extensionForMime(type.mimeType) ?? 'bin'}`,
      mimeType: type.mimeType,
      typeMessage: type.typeMessage,
      size: input.data.byteLength,
      storedAt: opts.clock.now(),
      ...(await lookOf(ctx, dataPath, input.data.byteLength, type.typeMessage)),
      detectedBy: type.source,
      source: 'upload',
      ...(input.retentionMs === undefined ? {} : { retentionMs: input.retentionMs }),
    };
    await publish(ctx, work, dataPath, meta);
    return toFetched(meta);
  });
}

/**
 * Animation and preview, from the bytes themselves: only images (or bytes
 * that are GIF/WebP whatever they were called) are read whole.
 */
async function lookOf(
  ctx: StoreContext,
  dataPath: string,
  size: number,
  typeMessage: MediaTypeMessage,
): Promise<{ isAnimated: boolean; jpegThumbnail?: string }> {
  const head = await readPrefix(dataPath, SNIFF_BYTES);
  if (typeMessage !== 'imageMessage' && !isGif(head) && !isWebp(head)) return { isAnimated: false };
  const bytes = size <= SNIFF_BYTES ? head : await readPrefix(dataPath, ctx.maxDecodeBytes);
  const isAnimated = isAnimatedImage(bytes);
  if (typeMessage !== 'imageMessage' || ctx.opts.thumbnail === false || size > ctx.maxDecodeBytes) return { isAnimated };
  return { isAnimated, jpegThumbnail: await ctx.thumbnails.make(bytes, ctx.opts.thumbnail || undefined) };
}

/** Makes the fetched folder visible in one step, its bytes and metadata on disk first. */
async function publish(ctx: StoreContext, work: string, dataPath: string, meta: StoredMeta): Promise<void> {
  await syncFile(dataPath);
  await writeFile(join(work, META), JSON.stringify(meta), { flush: true });
  await rename(work, join(ctx.opts.dir, meta.id));
  await syncDir(ctx.opts.dir);
}

async function readMeta(ctx: StoreContext, id: string): Promise<StoredMeta | undefined> {
  try {
    const meta = JSON.parse(await readFile(join(ctx.opts.dir, id, META), 'utf8')) as StoredMeta;
    return typeof meta?.storedAt === 'number' ? meta : undefined;
  } catch {
    return undefined;
  }
}

async function openStored(ctx: StoreContext, id: string): Promise<OpenedFile | undefined> {
  // The id comes from a URL path: anything but our own shape is not ours
  // (and could be `../`).
  if (!ID_PATTERN.test(id)) return undefined;
  const meta = await readMeta(ctx, id);
  if (!meta || isExpired(ctx, meta)) return undefined;
  let handle;
  try {
    // Opened before answering, so a purge running meanwhile cannot take
    // the bytes away from under the reader (an unlinked file stays readable).
    handle = await openFile(join(ctx.opts.dir, id, DATA), 'r');
  } catch {
    return undefined;
  }
  try {
    const { size } = await handle.stat();
    return { stream: handle.createReadStream(), size, mimeType: meta.mimeType, fileName: meta.fileName };
  } catch {
    await handle.close();
    return undefined;
  }
}

async function purgeExpired(ctx: StoreContext): Promise<number> {
  await ensureDirs(ctx);
  let purged = 0;
  for (const name of await readdir(ctx.opts.dir)) {
    if (!ID_PATTERN.test(name)) continue;
    const meta = await readMeta(ctx, name);
    // Unreadable metadata is a file nobody can open any more: purge it too.
    if (meta && !isExpired(ctx, meta)) continue;
    if (await discard(ctx, join(ctx.opts.dir, name), name)) purged += 1;
  }
  await sweepLeftovers(ctx);
  if (purged > 0) ctx.opts.logger?.info('media: purged expired files', { count: purged });
  return purged;
}

/** Moves a folder to .trash (one atomic step), then deletes it. */
async function discard(ctx: StoreContext, path: string, name: string): Promise<boolean> {
  const target = join(ctx.trashRoot, `${name}-${randomBytes(4).toString('hex')}`);
  try {
    await rename(path, target);
  } catch {
    return false; // already gone (a concurrent purge)
  }
  await rm(target, { recursive: true, force: true });
  return true;
}

/**
 * Removes what interrupted work left: the trash, and .tmp folders of
 * fetches that are not running. A .tmp folder is only taken once it is
 * older (by its mtime, real time) than a fetch may last, so another store
 * sharing the folder, or another process, keeps its fetch.
 */
async function sweepLeftovers(ctx: StoreContext): Promise<void> {
  await rm(ctx.trashRoot, { recursive: true, force: true });
  await mkdir(ctx.trashRoot, { recursive: true });
  const staleAfter = 2 * ctx.opts.timeoutMs + 60_000;
  for (const name of await readdir(ctx.tmpRoot).catch(() => [] as string[])) {
    if (ctx.inFlight.has(name)) continue;
    const path = join(ctx.tmpRoot, name);
    const info = await stat(path).catch(() => undefined);
    if (info && Date.now() - info.mtimeMs > staleAfter) await rm(path, { recursive: true, force: true });
  }
}

function toFetched(meta: StoredMeta): FetchedFile {
  return {
    id: meta.id,
    fileName: meta.fileName,
    mimeType: meta.mimeType,
    typeMessage: meta.typeMessage,
    size: meta.size,
    ...(meta.jpegThumbnail === undefined ? {} : { jpegThumbnail: meta.jpegThumbnail }),
    isAnimated: meta.isAnimated,
    detectedBy: meta.detectedBy,
    storedAt: meta.storedAt,
  };
}

async function readPrefix(path: string, max: number): Promise<Buffer> {
  const handle = await openFile(path, 'r');
  try {
    const buf = Buffer.alloc(Math.min(max, (await handle.stat()).size));
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** Flushes a file's bytes to the disk, so that the rename that publishes it cannot outlive them in a crash. */
async function syncFile(path: string): Promise<void> {
  const handle = await openFile(path, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function syncDir(path: string): Promise<void> {
  const handle = await openFile(path, 'r').catch(() => undefined);
  if (!handle) return;
  try {
    await handle.sync();
  } catch {
    // Some file systems cannot fsync a directory; the rename still happened.
  } finally {
    await handle.close();
  }
}
