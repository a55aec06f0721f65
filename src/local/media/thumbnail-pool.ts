/**
 * Runs makeJpegThumbnail in one shared worker thread, falling back to the
 * calling thread when a worker cannot be started (e.g. a runtime without
 * worker support). The worker is started on first use and is unref'd while
 * idle, so it never keeps a process alive.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { makeJpegThumbnail, type ThumbnailOptions } from './thumbnail.js';
import type { ThumbnailJob, ThumbnailResult } from './thumbnail-worker.js';

interface Pending {
  resolve: (thumbnail: string | undefined) => void;
  job: ThumbnailJob;
}

let worker: Worker | undefined;
/** Set once starting a worker failed: stay on the calling thread from then on. */
let workerUnavailable = false;
let nextId = 1;
const pending = new Map<number, Pending>();

/**
 * The worker entry beside this module: `thumbnail-worker.js` once compiled.
 * When running from TypeScript sources (tsx, vitest) it is the `.ts` file,
 * loaded through tsx's require hook: on Node 20 ESM loader hooks given to a
 * worker with `--import` do not apply to its entry, the require hook does.
 */
function startWorker(): Worker | undefined {
  if (workerUnavailable) return undefined;
  if (worker) return worker;
  try {
    const self = import.meta.url;
    const fromSource = self.endsWith('.ts');
    const entry = new URL(fromSource ? './thumbnail-worker.ts' : './thumbnail-worker.js', self);
    if (!existsSync(fileURLToPath(entry))) throw new Error('worker entry missing');
    const path = fileURLToPath(entry);
    const w = fromSource
      ? new Worker(`require(${JSON.stringify(createRequire(self).resolve('tsx/cjs'))}); require(${JSON.stringify(path)});`, { eval: true })
      : new Worker(entry);
    w.on('message', (r: ThumbnailResult) => {
      const p = pending.get(r.id);
      if (!p) return;
      pending.delete(r.id);
      if (pending.size === 0) w.unref();
      p.resolve(r.thumbnail);
    });
    // A crashed worker must not lose work: redo what it held on this thread.
    const fail = () => {
      if (worker === w) worker = undefined;
      workerUnavailable = true;
      for (const [id, p] of pending) {
        pending.delete(id);
        p.resolve(makeJpegThumbnail(p.job.bytes, p.job.options));
      }
    };
    w.on('error', fail);
    w.on('exit', fail);
    w.unref();
    worker = w;
    return w;
  } catch {
    workerUnavailable = true;
    return undefined;
  }
}

/** makeJpegThumbnail, off the main thread when possible. Never rejects. */
export function makeJpegThumbnailAsync(bytes: Uint8Array, options?: ThumbnailOptions): Promise<string | undefined> {
  const w = startWorker();
  if (!w) return Promise.resolve(makeJpegThumbnail(bytes, options));
  return new Promise((resolve) => {
    const job: ThumbnailJob = { id: nextId++, bytes, options };
    pending.set(job.id, { resolve, job });
    w.ref();
    w.postMessage(job);
  });
}

/** Where thumbnails are made: for diagnostics and tests. */
export function thumbnailThread(): 'worker' | 'caller' | 'not-started' {
  if (worker) return 'worker';
  return workerUnavailable ? 'caller' : 'not-started';
}
