/**
 * Worker-thread entry: makes thumbnails off the main thread, so decoding a
 * large photo (hundreds of ms of pure-JS work) never stalls the service's
 * event loop (HTTP answers, send-queue timing).
 */
import { parentPort } from 'node:worker_threads';
import { makeJpegThumbnail, type ThumbnailOptions } from './thumbnail.js';

export interface ThumbnailJob {
  id: number;
  bytes: Uint8Array;
  options?: ThumbnailOptions;
}

export interface ThumbnailResult {
  id: number;
  thumbnail?: string;
}

parentPort?.on('message', (job: ThumbnailJob) => {
  const result: ThumbnailResult = { id: job.id, thumbnail: makeJpegThumbnail(job.bytes, job.options) };
  parentPort!.postMessage(result);
});
