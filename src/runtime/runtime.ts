/**
 * Wires a validated config into a working msgflow: the local service (when
 * used), a client per instance, the action registry (built-ins, jobs,
 * plugins), the store, the event bus and the engine. The CLI commands and
 * programmatic users both start here.
 */
import type { Config } from '../config/index.js';
import { resolveFromConfig } from '../config/index.js';
import { createBus, type EngineBus } from '../engine/events.js';
import type { Logger } from '../engine/action.js';
import type { ActionRegistry } from '../engine/registry/index.js';
import { buildRegistry } from './registry.js';
import { loadFlows, type LoadedFlows } from '../engine/flow/index.js';
import { createEngine, type Engine } from '../engine/run/index.js';
import { createStore, type EngineStore } from '../store/index.js';
import { systemClock, type Clock } from '../util/clock.js';
import { createClientResolver, identityOf } from './clients.js';
import { lazyApi, type LazyApi } from './lazy-api.js';
import { openLocalHost, type LocalHost } from './local-host.js';
import { registerSecrets } from '../util/secrets.js';

export interface RuntimeOptions {
  config: Config;
  /** Which command this process runs (recorded in the data-dir lock). */
  command: string;
  /** Open the local service's HTTP port. @default false */
  listen?: boolean;
  /** Open it only if free, when the local service is used (see LocalHostOptions). @default false */
  listenIfFree?: boolean;
  port?: number;
  clock?: Clock;
  logger?: Logger;
  bus?: EngineBus;
  /**
   * Called once the store is open, before the local service listens: where
   * `msgflow start` claims its one-daemon-per-store lease, so that a second
   * daemon refuses before touching the port or the data directory. A throw
   * closes the store and rejects createRuntime.
   */
  beforeListen?(store: EngineStore): Promise<void>;
}

export interface Runtime {
  readonly config: Config;
  readonly bus: EngineBus;
  readonly registry: ActionRegistry;
  readonly store: EngineStore;
  readonly engine: Engine;
  readonly clock: Clock;
  /** The local service as seen by this process, once opened. */
  local(): Promise<LocalHost>;
  clientFor(instance: string): LazyApi;
  flows(): LoadedFlows;
  close(): Promise<void>;
}

export async function createRuntime(opts: RuntimeOptions): Promise<Runtime> {
  const { config } = opts;
  const clock = opts.clock ?? systemClock;
  const bus = opts.bus ?? createBus();
  for (const inst of Object.values(config.instances)) registerSecrets(inst);
  for (const inst of config.local?.instances ?? []) registerSecrets(inst);

  let localHost: Promise<LocalHost> | undefined;
  const local = () =>
    (localHost ??= openLocalHost(config, {
      command: opts.command,
      listen: opts.listen ?? false,
      listenIfFree: opts.listenIfFree ?? false,
      port: opts.port,
      clock,
      logger: opts.logger,
    }));
  const store = createStore(config.store, config.baseDir, { logger: opts.logger });
  if (opts.beforeListen) {
    try {
      await opts.beforeListen(store);
    } catch (e) {
      await store.close().catch(() => {});
      throw e;
    }
  }
  if (opts.listen && config.local) await local();

  // Every call of a configured client feeds the bus's api:call (the dashboard's metrics, debug log lines).
  const resolve = createClientResolver(config, local, { clock, logger: opts.logger, onCall: (e) => bus.emit('api:call', e) });
  const apis = new Map<string, LazyApi>();
  const clientFor = (name: string): LazyApi => {
    let api = apis.get(name);
    if (!api) {
      api = lazyApi(() => resolve(name));
      apis.set(name, api);
    }
    return api;
  };

  const registry = await buildRegistry(config);

  const engine = createEngine({
    store,
    registry,
    bus,
    clock,
    clientFor,
    identityFor: (name) => identityOf(config, name),
    // What the local service calls itself (publicUrl) or where it listens: `${{ local.url }}` in flows.
    localUrl: config.local ? (config.local.publicUrl ?? `http://127.0.0.1:${config.local.port}`).replace(/\/+$/, '') : undefined,
    logger: opts.logger,
    baseDir: config.baseDir,
  });

  const flowsDir = resolveFromConfig(config, config.flowsDir);
  let closed = false;
  return {
    config,
    bus,
    registry,
    store,
    engine,
    clock,
    local,
    clientFor,
    flows: () => loadFlows(flowsDir, { registry, baseDir: config.baseDir, instances: Object.keys(config.instances) }),
    async close() {
      if (closed) return;
      closed = true;
      await engine.shutdown();
      await store.close();
      if (localHost) await (await localHost.catch(() => undefined))?.close();
    },
  };
}
