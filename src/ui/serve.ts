/**
 * The dashboard and HTTP API (docs/dashboard.md). `msgflow start` and
 * `msgflow ui` call {@link serveDashboard}; tests use createUiServer.
 */
import type { UiConfig } from '../config/schema.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Logger } from '../util/logger.js';
import { createUiServer, type UiServer } from './server.js';

/**
 * Starts the dashboard with config.yaml's `ui:` settings, `overrides`
 * (the `--port` / `--host` flags) winning. Rejects with UI_UNSAFE_BIND or
 * PORT_IN_USE (naming ui.port), messages a person can act on.
 *
 * @example
 * const ui = await serveDashboard(runtime, {}, logger);
 * io.out(`msgflow: dashboard on ${ui.url}`);
 */
export function serveDashboard(
  runtime: Runtime,
  overrides: Partial<Pick<UiConfig, 'port' | 'host'>> & { probeLocal?: boolean } = {},
  logger?: Logger,
): Promise<UiServer> {
  const ui = runtime.config.ui;
  return createUiServer({
    runtime,
    host: overrides.host ?? ui.host,
    port: overrides.port ?? ui.port,
    token: ui.token,
    probeLocal: overrides.probeLocal,
    logger,
  });
}
