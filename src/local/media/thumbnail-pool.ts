/**
 * Runs makeJpegThumbnail in a worker thread, falling back to the calling
 * thread when a worker cannot be started (e.g. a runtime without worker
 * support).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { ThumbnailOptions } from './thumbnail.js';
import type { ThumbnailJob, ThumbnailResult } from './thumbnail-worker.js';

/**
 * makeJpegThumbnail on the calling thread. Its image decoders (pngjs,
 * jpeg-js, omggif: ~35 ms to load) are loaded here, on the first thumbnail
 * made without a worker, not when a local service starts.
 */
async function onThisThread(bytes: Uint8Array, options: ThumbnailOptions | undefined): Promise<string | undefined> {
  return (await import('./thumbnail.js')).makeJpegThumbnail(bytes, options);
}

interface Pending {
  resolve: (thumbnail: string | undefined | Promise<string | undefined>) => void;
  job: ThumbnailJob;
}

/**
 * One worker thread making thumbnails for its owner (a media store, so one
 * per local service): started on first use, unref'd while idle so it never
 * keeps a process alive, and ended by close() with its owner.
 */
export class ThumbnailPool {
  private worker: Worker | undefined;
  /** Set once starting a worker failed, or the pool closed: stay on the calling thread from then on. */
  private workerUnavailable = false;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  /** makeJpegThumbnail, off the main thread when possible. Never rejects. */
  make(bytes: Uint8Array, options?: ThumbnailOptions): Promise<string | undefined> {
    const w = this.startWorker();
    if (!w) return onThisThread(bytes, options);
    return new Promise((resolve) => {
      const job: ThumbnailJob = { id: this.nextId++, bytes, options };
      this.pending.set(job.id, { resolve, job });
      w.ref();
      w.postMessage(job);
    });
  }

  /** Where thumbnails are made: for diagnostics and tests. */
  thread(): 'worker' | 'caller' | 'not-started' {
    if (this.worker) return 'worker';
    return this.workerUnavailable ? 'caller' : 'not-started';
  }

  /** Ends the worker; what it held is made on this thread. Later thumbnails are made on the calling thread. */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.workerUnavailable = true;
    this.redoPending();
    await w?.terminate();
  }

  private redoPending(): void {
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      p.resolve(onThisThread(p.job.bytes, p.job.options));
    }
  }

  /**
   * The worker entry beside this module: `thumbnail-worker.js` once compiled.
   * When running from TypeScript sources (tsx, vitest) it is the `.ts` file,
   * loaded through tsx's require hook: on Node 20 ESM loader hooks given to a
   * worker with `--import` do not apply to its entry, the require hook does.
   */
  private startWorker(): Worker | undefined {
    if (this.workerUnavailable) return undefined;
    if (this.worker) return this.worker;
    try {
      const self = import.meta.url;
      const fromSource = self.endsWith('.ts');
      const entry = new URL(fromSource ? './thumbnail-worker.ts' : './thumbnail-worker.js', self);
      if (!existsSync(fileURLToPath(entry))) throw new Error('worker entry missing');
      const path = fileURLToPath(entry);
      const w = fromSource
        ? new Worker(`require(${JSON.stringify(createRequire(self).resolve('tsx/cjs'))}); require(${JSON.stringify(path)});`, {
            eval: true,
          })
        : new Worker(entry);
      w.on('message', (r: ThumbnailResult) => {
        const p = this.pending.get(r.id);
        if (!p) return;
        this.pending.delete(r.id);
        if (this.pending.size === 0) w.unref();
        p.resolve(r.thumbnail);
      });
      // A crashed worker must not lose work: redo what it held on this thread.
      const fail = () => {
        if (this.worker === w) this.worker = undefined;
        this.workerUnavailable = true;
        this.redoPending();
      };
      w.on('error', fail);
      w.on('exit', fail);
      w.unref();
      this.worker = w;
      return w;
    } catch {
      this.workerUnavailable = true;
      return undefined;
    }
  }
}
