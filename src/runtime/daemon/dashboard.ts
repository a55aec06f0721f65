/**
 * The daemon's dashboard (unless turned off) and the record of its address in
 * the store: where a `msgflow run` beside the daemon hands its runs
 * (findDaemon in address.ts).
 */
import { MsgflowError } from '../../api/errors.js';
import { defaultHostId } from '../../engine/run/ownership.js';
import type { UiServer } from '../../ui/server.js';
import type { Logger } from '../../util/logger.js';
import type { Runtime } from '../runtime.js';
import { clearDaemonUi, recordDaemonUi } from './address.js';
import type { DaemonEvent } from './types.js';

export interface DaemonDashboard {
  server?: UiServer;
  /** Why there is none. */
  off?: string;
  /** Stops serving, and removes the record if it is still this process's. */
  close(): Promise<void>;
}

/** Serves the dashboard unless `on` is false; a busy port is told (`dashboard-unavailable`) and the daemon goes on without it. */
export async function openDashboard(
  runtime: Runtime,
  on: boolean,
  logger: Logger,
  tell: (e: DaemonEvent) => void,
): Promise<DaemonDashboard> {
  let server: UiServer | undefined;
  let off = on ? undefined : 'started with --no-ui';
  if (on) {
    try {
      // Loaded only when served: daemons without a dashboard (and workers) skip its and the metrics' modules.
      const { serveDashboard } = await import('../../ui/serve.js');
      server = await serveDashboard(runtime, {}, logger);
      tell({ type: 'dashboard', url: server.url });
    } catch (e) {
      // A busy port must not keep the flows from running; an unsafe bind (a config error) stops the start.
      if (!(e instanceof MsgflowError && e.code === 'PORT_IN_USE')) throw e;
      tell({ type: 'dashboard-unavailable', error: e });
      off = `ui.port ${runtime.config.ui.port} was in use`;
    }
  }
  await recordDaemonUi(runtime.store, {
    url: server?.url ?? null,
    reason: off,
    pid: process.pid,
    host: defaultHostId(),
    startedAt: Date.now(),
  });
  return {
    server,
    off,
    async close() {
      await clearDaemonUi(runtime.store, process.pid, defaultHostId()).catch(() => {});
      await server?.close();
    },
  };
}
