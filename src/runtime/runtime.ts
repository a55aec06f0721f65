/**
 * Wires a validated config into a working msgflow: the local service (when
 * used), a client per instance, the action registry (built-ins, jobs,
 * plugins), the store, the event bus and the engine. The CLI commands and
 * programmatic users both start here.
 */
import { loadConfig, type Config } from '../config/load.js';
import { createBus, type EngineBus } from '../engine/events.js';
import type { Logger } from '../engine/action.js';
import type { ActionRegistry } from '../engine/registry/registry.js';
import { buildRegistry } from './registry.js';
import { loadFlows, type LoadedFlows } from '../engine/flow/load.js';
import type { Engine } from '../engine/run/types.js';
import { createStore } from '../store/create.js';
import type { EngineStore } from '../store/types.js';
import { systemClock, type Clock } from '../util/clock.js';
import { createClientResolver, identityOf } from './clients.js';
import { createProjectEngine, flowSource, localUrlOf, secretLookup } from './project-engine.js';
import { interceptApi, type InterceptedApi } from '../client/interceptors.js';
import type { InstanceApi } from '../api/types.js';
import { openLocalHost, type LocalHost } from './local-host.js';
import { Redactor } from '../util/secrets.js';
import { type ItemExecutor, localExecutor } from '../engine/run/executor.js';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Telemetry } from './telemetry.js';

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
  /** @see EngineOptions.waitRecheckMs (tests shorten it). @default 1000 */
  waitRecheckMs?: number;
  /**
   * Called once the store is open, before the local service listens: where
   * `msgflow start` claims its one-daemon-per-store lease, so that a second
   * daemon refuses before touching the port or the data directory. A throw
   * closes the store and rejects createRuntime.
   */
  beforeListen?(store: EngineStore): Promise<void>;
  /**
   * What this runtime hides in the text it prints, logs or answers; the
   * runtime adds every instance's token and id to it. The CLI passes its
   * invocation's, so what the command prints is scrubbed too. @default one of its own
   */
  redactor?: Redactor;
  /** With config.yaml telemetry: where spans go instead of its OTLP URL (tests: the SDK's InMemorySpanExporter). @default the OTLP exporter */
  spanExporter?: SpanExporter;
}

export interface Runtime {
  readonly config: Config;
  /** The value of `${{ secrets.NAME }}` (config.yaml `secrets:`), hidden by the redactor once handed out. */
  readonly secret: (name: string) => string | undefined;
  readonly bus: EngineBus;
  readonly registry: ActionRegistry;
  readonly store: EngineStore;
  readonly engine: Engine;
  readonly clock: Clock;
  /** Hides this runtime's tokens and instance ids (and what its parts add: webhook, dashboard tokens) in text it lets out. */
  readonly redactor: Redactor;
  /** The local service as seen by this process, once opened. */
  local(): Promise<LocalHost>;
  /** Traces (config.yaml telemetry:), when on. */
  readonly telemetry?: Telemetry;
  clientFor(instance: string): InterceptedApi;
  flows(): LoadedFlows;
  /** `${{ local.url }}` of flows; undefined without a `local:` section. */
  readonly localUrl?: string;
  /** Where forEach items run (config.yaml `executor:`). */
  readonly executor: ItemExecutor;
  close(): Promise<void>;
}

/**
 * The executor config.yaml asks for: BullMQ workers, or this process. BullMQ
 * is loaded only when used: every command starts faster without it.
 */
async function createExecutor(config: Config, store: EngineStore): Promise<ItemExecutor & { close?(): Promise<void> }> {
  if (config.executor.driver !== 'bullmq') return localExecutor;
  const [{ BullmqExecutor }, { bullmqTarget }] = await Promise.all([import('./bullmq/executor.js'), import('./bullmq/names.js')]);
  return new BullmqExecutor({ target: bullmqTarget(config), store, identityFor: (name) => identityOf(config, name) });
}

/** Options of the one-argument form: everything but the config, which is read from the file. */
export type RuntimeFileOptions = Partial<Omit<RuntimeOptions, 'config'>>;

/**
 * A working msgflow for a project: from its config file (the form for
 * embedding: the file is read and validated as `msgflow validate` does, and
 * relative paths in it resolve against its directory), or from a loaded
 * config with options.
 *
 * @example
 * const runtime = await createRuntime('config.yaml');
 * try {
 *   const flow = runtime.flows().flows.find((f) => f.name === 'check-leads')!;
 *   const record = await (await runtime.engine.start(flow)).done;
 * } finally {
 *   await runtime.close();
 * }
 */
export function createRuntime(configPath: string, opts?: RuntimeFileOptions): Promise<Runtime>;
export function createRuntime(opts: RuntimeOptions): Promise<Runtime>;
export function createRuntime(arg: string | RuntimeOptions, fileOpts: RuntimeFileOptions = {}): Promise<Runtime> {
  if (typeof arg !== 'string') return openRuntime(arg);
  // `command` is what the data-dir lock records as the holder: a program embedding msgflow.
  return openRuntime({ command: 'embedded', ...fileOpts, config: loadConfig(arg) });
}

/** The project's store, with the caller's `beforeListen` done on it (closed again when that fails). */
async function openStore(opts: RuntimeOptions): Promise<EngineStore> {
  const store = createStore(opts.config.store, opts.config.baseDir, { logger: opts.logger });
  if (!opts.beforeListen) return store;
  try {
    await opts.beforeListen(store);
  } catch (e) {
    await store.close().catch(() => {});
    throw e;
  }
  return store;
}

/** The local service opened to listen; refused (its data in use by another process, a busy port), the store is closed: an open Redis connection must not keep the process up. */
async function listenOrClose(store: EngineStore, local: () => Promise<LocalHost>): Promise<void> {
  try {
    await local();
  } catch (e) {
    await store.close().catch(() => {});
    throw e;
  }
}

/**
 * The configured clients by name, each built on first use: opening the local
 * service (or finding who owns it) is asynchronous, and only for instances a
 * run uses. Once built, a client is handed over as is (`resolve` keeps it for
 * good): a call no longer waits a turn for the promise of one at hand.
 */
function clientsOnFirstUse(resolve: (name: string) => Promise<InstanceApi>): (name: string) => InterceptedApi {
  const apis = new Map<string, InterceptedApi>();
  return (name) => {
    let api = apis.get(name);
    if (!api) {
      let built: InstanceApi | undefined;
      api = interceptApi(
        () =>
          built ??
          resolve(name).then((client) => {
            built = client;
            return client;
          }),
        [],
      );
      apis.set(name, api);
    }
    return api;
  };
}

/** Loaded only when traces are on: an untraced process never loads the OpenTelemetry SDK. */
async function openTracing(config: Config, opts: RuntimeOptions): Promise<Telemetry | undefined> {
  if (!config.telemetry) return undefined;
  const { openTelemetry } = await import('./telemetry.js');
  return openTelemetry({ ...config.telemetry, ...(opts.spanExporter ? { exporter: opts.spanExporter } : {}) });
}

async function openRuntime(opts: RuntimeOptions): Promise<Runtime> {
  const { config } = opts;
  const clock = opts.clock ?? systemClock;
  const bus = opts.bus ?? createBus();
  const redactor = opts.redactor ?? new Redactor();
  for (const inst of Object.values(config.instances)) redactor.add(inst);
  for (const inst of config.local?.instances ?? []) redactor.add(inst);

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
  const store = await openStore(opts);
  if (opts.listen && config.local) await listenOrClose(store, local);

  // Every call of a configured client feeds the bus's api:call (the dashboard's metrics, debug log lines).
  const resolve = createClientResolver(config, local, {
    clock,
    logger: opts.logger,
    onCall: (e) => bus.emit('api:call', e),
    heard: () => bus.listenerCount('api:call') > 0,
  });
  const clientFor = clientsOnFirstUse(resolve);
  const telemetry = await openTracing(config, opts);
  const registry = await buildRegistry(config);
  const localUrl = localUrlOf(config);
  const executor = await createExecutor(config, store);

  const source = flowSource(config, registry);
  const secret = secretLookup(config, redactor);
  const engine = createProjectEngine(config, {
    // A sub-flow step's child, as the flows directory holds it now (read once per step execution).
    flowFor: (name) => loadFlows(source.dir, source.options).flows.find((f) => f.name === name),
    store,
    registry,
    bus,
    clock,
    clientFor,
    logger: opts.logger,
    executor,
    waitRecheckMs: opts.waitRecheckMs,
    secret,
    redactor,
    ...(telemetry ? { tracer: telemetry.tracer } : {}),
  });
  let closed = false;
  return {
    config,
    bus,
    registry,
    store,
    engine,
    clock,
    redactor,
    secret,
    local,
    clientFor,
    localUrl,
    executor,
    flows: () => loadFlows(source.dir, source.options),
    ...(telemetry ? { telemetry } : {}),
    /** Closes every part even when one fails (a store that refuses its last writes must not keep the local service listening), then throws the first failure. */
    async close() {
      if (closed) return;
      closed = true;
      const failures: unknown[] = [];
      const attempt = (op: () => Promise<unknown> | undefined) =>
        Promise.resolve()
          .then(op)
          .catch((e: unknown) => void failures.push(e));
      await attempt(() => engine.shutdown());
      await attempt(() => executor.close?.());
      await attempt(() => telemetry?.shutdown());
      await attempt(() => store.close());
      if (localHost) await attempt(async () => (await localHost!.catch(() => undefined))?.close());
      if (failures.length > 0) throw failures[0];
    },
  };
}
