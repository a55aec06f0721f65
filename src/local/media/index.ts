/**
 * Media module of the local service: fetches sendFileByUrl links, decides
 * their type in the spec's order, makes a JPEG preview of images, and keeps
 * the files for the retention period. See docs/local-media.md.
 */
export { createMediaStore } from './file-store.js';
export type { FetchedFile, MediaStore, MediaStoreOptions, OpenedFile } from './types.js';
export { detectType, type DetectedType, type DetectTypeInput, type SniffedType, type TypeSource } from './detect-type.js';
export { GENERIC_BINARY, extensionOf, typeForExtension, typeForMime, type KnownType, type MediaTypeMessage } from './mime-table.js';
export { isAnimatedImage, countGifFrames } from './animation.js';
export { makeJpegThumbnail, type ThumbnailOptions } from './thumbnail.js';
export { displayUrl, FetchError, privateRange } from './download.js';
