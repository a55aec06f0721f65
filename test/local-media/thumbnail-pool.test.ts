import { rm } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLocalService } from '../../src/local/service.js';
import { createMediaStore } from '../../src/local/media/file-store.js';
import { makeJpegThumbnail } from '../../src/local/media/thumbnail.js';
import { ThumbnailPool } from '../../src/local/media/thumbnail-pool.js';
import { makePdf, makePng } from '../support/media.js';
import { localConfig, tempDir } from '../support/local-service.js';

describe('thumbnail worker', () => {
  it('makes the same thumbnail as the in-thread function, in a worker thread', async () => {
    const pool = new ThumbnailPool();
    try {
      const png = makePng(120, 80);
      const [a, b, none] = await Promise.all([pool.make(png), pool.make(makePng(30, 30)), pool.make(makePdf())]);
      expect(pool.thread()).toBe('worker');
      expect(a).toBe(makeJpegThumbnail(png));
      expect(Buffer.from(b!, 'base64').subarray(0, 2).toString('hex')).toBe('ffd8');
      expect(none).toBeUndefined();
    } finally {
      await pool.close();
    }
  });

  it('belongs to its owner: closing one pool leaves another working, and a closed pool makes thumbnails on the calling thread', async () => {
    const png = makePng(40, 40);
    const first = new ThumbnailPool();
    const second = new ThumbnailPool();
    try {
      await Promise.all([first.make(png), second.make(png)]);
      await first.close();
      expect(first.thread()).toBe('caller');
      expect(second.thread()).toBe('worker');
      expect(await second.make(png)).toBe(makeJpegThumbnail(png));
      expect(await first.make(png)).toBe(makeJpegThumbnail(png));
      expect(first.thread()).toBe('caller');
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  it('is closed with the local service that owns its media store', async () => {
    const dir = await tempDir('msgflow-thumbs-');
    const config = localConfig();
    const store = createMediaStore({
      dir: path.join(dir, 'files'),
      clock: { now: () => 0, sleep: async () => {} },
      maxBytes: 1024,
      timeoutMs: 1000,
      maxRedirects: 0,
      retentionMs: 1000,
    });
    let closed = 0;
    const service = createLocalService(config, { baseDir: dir, mediaStore: { ...store, close: async () => void closed++ } });
    await service.start();
    expect(closed).toBe(0);
    await service.close();
    expect(closed).toBe(1);
    await rm(dir, { recursive: true, force: true });
  });
});
