import { MsgflowError } from '../api/errors.js';
import type { Config } from '../config/load.js';
import { resolveFromConfig } from '../config/load.js';
import type { LocalService } from '../local/service.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../engine/action.js';
import { acquireDataLock, type DataLock } from './data-lock.js';

/**
 * The local service as one msgflow process sees it: either this process owns
 * the data directory and runs the service in-process (optionally listening),
 * or another live msgflow process owns it and serves it over HTTP, and this
 * process is a client of that one.
 */
export type LocalHost =
  | { mode: 'owner'; service: LocalService; url?: string; close(): Promise<void> }
  | { mode: 'remote'; url: string; ownerPid: number; close(): Promise<void> };

export interface LocalHostOptions {
  command: string;
  /** Open the HTTP port (serve/start). */
  listen: boolean;
  /**
   * Open the port if it is free, else go on without it (`msgflow run`: links
   * to the local service, such as downloadUrl or /_local/static files, work
   * while the run lasts, and a busy port does not stop the run).
   */
  listenIfFree?: boolean;
  /** Overrides local.port. */
  port?: number;
  clock?: Clock;
  logger?: Logger;
}

export async function openLocalHost(config: Config, opts: LocalHostOptions): Promise<LocalHost> {
  const local = config.local;
  if (!local) throw new MsgflowError('USAGE', { reason: `${config.file} has no local: section` });
  const dataDir = resolveFromConfig(config, local.dataDir);
  const got = acquireDataLock(dataDir, opts.command);
  if (!got.acquired) {
    const { holder } = got;
    if (holder.url && !opts.listen) {
      return { mode: 'remote', url: holder.url, ownerPid: holder.pid, close: async () => {} };
    }
    throw new MsgflowError('LOCAL_DATA_IN_USE', {
      dir: local.dataDir,
      pid: holder.pid,
      command: holder.command ? ` (msgflow ${holder.command})` : '',
      next: holder.url ? `, serving ${holder.url}; stop it first` : '; wait for it to end or stop it',
    });
  }
  const lock: DataLock = got.lock;
  let service: LocalService;
  try {
    // Loaded on demand: the service and its media codecs are a third of what
    // a process imports, and a project with only remote instances never needs them.
    const { createLocalService } = await import('../local/service.js');
    service = createLocalService(local, { baseDir: config.baseDir, clock: opts.clock, logger: opts.logger });
    await service.start();
  } catch (e) {
    lock.release();
    throw e;
  }
  let url: string | undefined;
  let closeListener: (() => Promise<void>) | undefined;
  if (opts.listen || opts.listenIfFree) {
    try {
      const l = await service.listen(opts.port ?? local.port, local.host);
      url = l.url;
      closeListener = l.close;
      lock.setUrl(url);
    } catch (e) {
      if (!opts.listen && (e as NodeJS.ErrnoException).code === 'EADDRINUSE') {
        opts.logger?.warn(`local service: port ${opts.port ?? local.port} is in use; running without its HTTP port`);
      } else {
        await service.close();
        lock.release();
        throw e;
      }
    }
  }
  return {
    mode: 'owner',
    service,
    url,
    async close() {
      await closeListener?.();
      await service.close();
      lock.release();
    },
  };
}
