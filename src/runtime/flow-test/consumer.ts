/**
 * The notification consumer of a flow test case: `msgflow start`'s own
 * (startNotificationConsumers: the same lease, switches, receiveNotification
 * loop, dispatcher and records), polling the case's in-process local service
 * on the case's virtual clock, with the case's flow as the only flow loaded.
 * So the case's event and replies reach the flow exactly as live: as
 * messages of the service, recorded in order, matched against the flow's
 * trigger, each starting its run through the dispatcher.
 */
import type { Config } from '../../config/load.js';
import type { Logger } from '../../engine/action.js';
import type { EngineBus } from '../../engine/events.js';
import type { Flow } from '../../engine/flow/types.js';
import type { Engine, RunHandle } from '../../engine/run/types.js';
import type { EngineStore } from '../../store/types.js';
import type { VirtualClock } from '../../util/virtual-clock.js';
import { identityOf } from '../clients.js';
import type { InterceptedApi } from '../../client/interceptors.js';
import { replyInstances, startNotificationConsumers } from '../notifications/consumers.js';

export interface CaseConsumerOptions {
  config: Config;
  flow: Flow;
  store: EngineStore;
  bus: EngineBus;
  clock: VirtualClock;
  engine: Pick<Engine, 'start'>;
  /** The case's other flows (`flows:`): those its notifications trigger run too. @default none */
  others?: readonly Flow[];
  /**
   * The consumer's client of a config instance, on the case's service. Its
   * calls do not hold the clock: a long poll is a sleeper like any other, and
   * time jumps over it.
   */
  clientFor(name: string): InterceptedApi;
  /** The local instance a config instance is served by in the case. */
  localOf(name: string): string;
}

export interface CaseConsumer {
  /** The first run of the case's flow the dispatcher starts (a notification matched its trigger). */
  readonly started: Promise<RunHandle>;
  stop(): Promise<void>;
}

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * The config the case's consumer reads: only the instances the flow uses (its own, a trigger's, a campaign pool's)
 * (one per local instance: two names served by the same one would split its
 * notifications), webhook mode polled instead (the case has no webhook
 * receiver; what a notification does once received is the same).
 */
function caseConfig(o: CaseConsumerOptions): Config {
  const triggered = (o.others ?? []).filter((f) => f.on.notification).map((f) => f.on.notification!.instance ?? f.instance);
  // As msgflow start: the instances a flow waits for replies on, or counts them from (a campaign's pool) too.
  const replying = replyInstances([o.flow, ...(o.others ?? [])], o.config.pools);
  const names = [
    ...new Set([o.flow.on.notification?.instance, o.flow.instance, ...triggered, ...replying].filter((n): n is string => n !== undefined)),
  ];
  const served = new Set<string>();
  const instances: Record<string, Config['instances'][string]> = {};
  for (const name of names) {
    const inst = o.config.instances[name];
    if (!inst || served.has(o.localOf(name))) continue;
    served.add(o.localOf(name));
    instances[name] = inst.notifications === 'webhook' ? { ...inst, notifications: 'poll' } : inst;
  }
  return { ...o.config, instances };
}

/** Starts consuming (resolves once every consumed instance is polled). */
export async function startCaseConsumer(o: CaseConsumerOptions): Promise<CaseConsumer> {
  let follow!: (h: RunHandle) => void;
  const started = new Promise<RunHandle>((r) => (follow = r));
  const engine: Pick<Engine, 'start'> = {
    async start(flow, opts) {
      const h = await o.engine.start(flow, opts);
      if (flow.name === o.flow.name) follow(h);
      return h;
    },
  };
  const config = caseConfig(o);
  const consumers = await startNotificationConsumers({
    config,
    store: o.store,
    bus: o.bus,
    clock: o.clock,
    engine,
    flows: [o.flow, ...(o.others ?? [])],
    clientFor: o.clientFor,
    identityFor: (name) => identityOf(config, name),
    logger: quiet,
  });
  return { started, stop: () => consumers.stop() };
}
