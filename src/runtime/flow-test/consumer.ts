/**
 * The notification consumer of a flow test whose flow waits for replies
 * (waitForReply): as `msgflow start` would, it polls the in-process local
 * service's notifications on the case's virtual clock and records them, so
 * the case's `replies:` reach the flow. Its calls do not hold the clock: a
 * long poll is a sleeper like any other, and time jumps over it.
 */
import { createClient } from '../../client/client.js';
import type { Logger } from '../../engine/action.js';
import type { EngineBus } from '../../engine/events.js';
import type { Flow } from '../../engine/flow/types.js';
import { CONSUMERS_NS, sharedState, type ConsumerRecord } from '../../engine/notify/records.js';
import { NotificationDispatcher } from '../../engine/notify/dispatcher.js';
import type { Engine } from '../../engine/run/types.js';
import type { LocalService } from '../../local/service.js';
import type { EngineStore } from '../../store/types.js';
import type { VirtualClock } from '../../util/virtual-clock.js';
import { createInProcessTransport } from '../in-process-transport.js';
import { pollNotifications } from '../notifications/poll.js';
import { ensureSwitches } from '../notifications/switches.js';

export interface FlowTestConsumerOptions {
  service: LocalService;
  target: { idInstance: string; apiTokenInstance: string };
  clock: VirtualClock;
  store: EngineStore;
  bus: EngineBus;
  engine: Engine;
  flow: Flow;
  identity: string;
}

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** Whether the flow reads replies, so its test needs the consumer. */
export function needsConsumer(flow: Flow): boolean {
  return flow.steps.some((s) => s.uses === 'waitForReply');
}

/** Starts consuming; resolves with the function that stops it. */
export async function startFlowTestConsumer(o: FlowTestConsumerOptions): Promise<() => Promise<void>> {
  const { idInstance, apiTokenInstance } = o.target;
  const transport = createInProcessTransport(o.service, idInstance, apiTokenInstance);
  const client = createClient({
    apiUrl: 'http://local.invalid',
    idInstance,
    apiTokenInstance,
    transport,
    clock: o.clock,
    rateLimit: false,
  });
  await ensureSwitches(client, o.flow.instance, 'poll', [], quiet);
  await sharedState(o.store, CONSUMERS_NS).set(o.identity, {
    instance: o.flow.instance,
    mode: 'poll',
    since: o.clock.now(),
  } satisfies ConsumerRecord);
  // No flow is triggered here: the case's run is the subject; the dispatcher only records.
  const dispatcher = new NotificationDispatcher({
    engine: o.engine,
    store: o.store,
    bus: o.bus,
    clock: o.clock,
    flows: [],
    identityFor: () => o.identity,
    logger: quiet,
  });
  const controller = new AbortController();
  const loop = pollNotifications({
    instance: o.flow.instance,
    client,
    handle: (name, body) => dispatcher.dispatch(name, body),
    signal: controller.signal,
    clock: o.clock,
    logger: quiet,
  });
  return async () => {
    controller.abort();
    await loop;
  };
}
