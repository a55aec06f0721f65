/**
 * The notification consumers of `msgflow start`: one per instance whose
 * notifications a flow is triggered by (or whose config says
 * `notifications: poll|webhook`), each polling or fed by the webhook
 * receiver, each holding the store lease `notifications:<identity>` so that
 * only one process consumes an instance's notifications even when several
 * share a store.
 */
import type { InterceptedApi } from '../../client/interceptors.js';
import type { Config } from '../../config/load.js';
import type { Logger } from '../../engine/action.js';
import type { EngineBus } from '../../engine/events.js';
import type { Flow } from '../../engine/flow/types.js';
import type { ConsumerRecord } from '../../engine/notify/records.js';
import { CONSUMERS_NS, sharedState } from '../../engine/shared.js';
import { NotificationDispatcher } from '../../engine/notify/dispatcher.js';
import { triggeredInstances } from '../../engine/notify/match.js';
import type { Notification } from '../../engine/notify/body.js';
import { LeaseOwner, defaultHostId, describeHolder } from '../../engine/run/ownership.js';
import { defaultLeaseTtlMs } from '../../engine/run/ownership.js';
import type { Engine } from '../../engine/run/types.js';
import type { EngineStore } from '../../store/types.js';
import type { Clock } from '../../util/clock.js';
import { localTarget } from '../clients.js';
import { pollNotifications } from './poll.js';
import { ensureSwitches } from './switches.js';
import type { Redactor } from '../../util/secrets.js';
import { MESSAGES_BROADCAST, WAIT_FOR_REPLY } from '../../actions/builtins.js';
import { isNotificationType } from '../../api/notifications.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-server.js';
import { startIdleSweeper } from '../conversation/idle.js';
import type { Pool } from '../../util/pool.js';

export interface ConsumersOptions {
  config: Config;
  store: EngineStore;
  bus: EngineBus;
  clock: Clock;
  /** What starts the runs notifications trigger. */
  engine: Pick<Engine, 'start'>;
  flows: readonly Flow[];
  clientFor(instance: string): InterceptedApi;
  identityFor(instance: string): string;
  logger: Logger;
  /** Seconds one receiveNotification may be held. @default 20 */
  receiveTimeout?: number;
  /** How often dialogs' idle timers are looked at, ms of the engine clock. @default 10000 */
  idleSweepMs?: number;
  /** The runtime's redactor: the webhook token is added to it. @default none */
  redactor?: Redactor;
}

export interface ConsumedInstance {
  name: string;
  mode: 'poll' | 'webhook';
}

export interface NotificationConsumers {
  readonly instances: readonly ConsumedInstance[];
  /** The webhook receiver's URL, when an instance uses webhook mode. */
  readonly webhookUrl?: string;
  stop(): Promise<void>;
}

/**
 * Config names of the instances a flow waits for replies on (a waitForReply
 * step), or counts replies from (a messages.broadcast campaign's funnel and
 * health guard: its instance and its pool's, config.yaml's `pools:` for a
 * named one): their incoming messages must be recorded.
 */
export function replyInstances(flows: readonly Flow[], pools: Readonly<Record<string, Pool>> = {}): string[] {
  const names = flows.flatMap((f) =>
    f.steps.flatMap((s) => {
      if (s.uses === WAIT_FOR_REPLY) return [f.instance];
      if (s.uses !== MESSAGES_BROADCAST) return [];
      const raw = s.with?.pool as { use?: unknown; instances?: unknown } | string | undefined;
      const named = typeof raw === 'string' ? raw : raw?.use;
      const pool =
        typeof named === 'string'
          ? Object.hasOwn(pools, named)
            ? pools[named]!.instances
            : []
          : (raw as { instances?: unknown } | undefined)?.instances;
      return [f.instance, ...(Array.isArray(pool) ? pool.filter((n): n is string => typeof n === 'string') : [])];
    }),
  );
  return [...new Set(names)].sort();
}

/**
 * The instances to consume and how: those a flow is triggered by or waits
 * for replies on default to poll; `notifications: off` wins.
 */
export function consumedInstances(config: Config, flows: readonly Flow[], logger: Logger): ConsumedInstance[] {
  const triggered = new Set(triggeredInstances(flows));
  const waited = new Set(replyInstances(flows, config.pools));
  const out: ConsumedInstance[] = [];
  for (const [name, inst] of Object.entries(config.instances)) {
    const mode = inst.notifications ?? (triggered.has(name) || waited.has(name) ? 'poll' : 'off');
    if (mode !== 'off') out.push({ name, mode });
    else if (triggered.has(name))
      logger.warn(`instance ${name} has notifications: off, so the flows triggered by its notifications never run`);
    else if (waited.has(name)) logger.warn(`instance ${name} has notifications: off, so waitForReply never sees a reply on it`);
  }
  return out;
}

/** The idInstance a webhook body of this config instance carries. */
function idInstanceOf(config: Config, name: string): string | undefined {
  const inst = config.instances[name]!;
  return inst.apiUrl === 'local' ? (localTarget(config, inst)?.idInstance ?? inst.idInstance) : inst.idInstance;
}

/** Starts consuming. The returned `stop()` ends every loop and the receiver, and releases the leases. */
export async function startNotificationConsumers(o: ConsumersOptions): Promise<NotificationConsumers> {
  const instances = consumedInstances(o.config, o.flows, o.logger);
  const handover = o.config.conversations.handover;
  const dispatcher = new NotificationDispatcher({ ...o, ...(handover ? { handoverFor: () => handover } : {}) });
  const controller = new AbortController();
  const held = new Set<string>();
  const leases: LeaseOwner[] = [];
  const pendingTick = () =>
    void dispatcher.startPending().catch((e: unknown) => o.logger.warn(`notification runs: ${e instanceof Error ? e.message : String(e)}`));
  const events = ['run:finished', 'run:failed', 'run:interrupted'] as const;
  for (const ev of events) o.bus.on(ev, pendingTick);
  // Slots freed by other processes are not seen on this bus.
  const timer = setInterval(pendingTick, 5000);
  timer.unref();
  pendingTick();
  // Dialog sessions left silent end on the same engine and clock as the messages that move them.
  const idle = startIdleSweeper({ ...o, everyMs: o.idleSweepMs });
  const ready: Promise<void>[] = [];
  const loops = instances.map((inst) => {
    let markReady!: () => void;
    ready.push(new Promise<void>((r) => (markReady = r)));
    return consume(o, inst, dispatcher, { signal: controller.signal, held, leases, ready: () => markReady() });
  });
  // Consuming (lease held, switches on) or known to be consumed elsewhere: only then is `msgflow start` started.
  await Promise.all(ready);
  let receiver: WebhookReceiver | undefined;
  const hooked = instances.filter((i) => i.mode === 'webhook');
  if (hooked.length > 0) {
    // The webhook token is a secret like an instance token: scrubbed from anything this process prints or answers.
    o.redactor?.add({ apiTokenInstance: o.config.webhook!.token });
    const byId = new Map(hooked.map((i) => [idInstanceOf(o.config, i.name), i.name]));
    receiver = await startWebhookReceiver({
      config: o.config.webhook!,
      logger: o.logger,
      instanceOf: (n) => webhookInstance(n, byId, hooked, held),
      handle: (name, n) => dispatcher.dispatch(name, n),
    });
  }
  return {
    instances,
    ...(receiver ? { webhookUrl: receiver.url } : {}),
    async stop() {
      controller.abort();
      dispatcher.stop();
      clearInterval(timer);
      await idle.stop();
      for (const ev of events) o.bus.off(ev, pendingTick);
      await receiver?.close();
      await Promise.all(loops);
      await Promise.all(leases.map((l) => l.release()));
    },
  };
}

function webhookInstance(
  n: Notification,
  byId: Map<string | undefined, string>,
  hooked: ConsumedInstance[],
  held: Set<string>,
): string | undefined {
  const name = n.idInstance === undefined ? (hooked.length === 1 ? hooked[0]!.name : undefined) : byId.get(n.idInstance);
  // Another process holds this instance's lease: it is not ours to record (the service delivers it again).
  return name !== undefined && held.has(name) ? name : undefined;
}

/** Claims the instance's lease (waiting while another process holds it), records the consumer, then polls (poll mode). */
interface ConsumeState {
  signal: AbortSignal;
  /** Instances whose lease this process holds. */
  held: Set<string>;
  leases: LeaseOwner[];
  /** Called once the instance is being consumed, by this process or (as far as we know) another. */
  ready(): void;
}

async function consume(o: ConsumersOptions, inst: ConsumedInstance, d: NotificationDispatcher, st: ConsumeState): Promise<void> {
  try {
    await consumeOwned(o, inst, d, st);
  } finally {
    st.ready();
  }
}

async function consumeOwned(o: ConsumersOptions, inst: ConsumedInstance, d: NotificationDispatcher, st: ConsumeState): Promise<void> {
  const { signal, held, leases } = st;
  const identity = o.identityFor(inst.name);
  const ttlMs = defaultLeaseTtlMs();
  const owner = new LeaseOwner(
    { store: o.store, hostId: defaultHostId(), ttlMs },
    { label: `msgflow start (notifications of ${inst.name})` },
  );
  leases.push(owner);
  let warned = false;
  while (!signal.aborted) {
    const claim = await owner.claim(`notifications:${identity}`).catch((e: unknown) => ({ ok: false as const, error: e }));
    if (claim.ok) break;
    if (!warned && 'holder' in claim)
      o.logger.info(`notifications of ${inst.name} are consumed by ${describeHolder(claim.holder)}; taking over when it stops`);
    warned = true;
    st.ready();
    await o.clock.sleep(ttlMs / 3, signal).catch(() => undefined);
  }
  if (signal.aborted) return;
  owner.onLost = (reason) => {
    held.delete(inst.name);
    o.logger.error(`notifications of ${inst.name}: lease lost (${reason}); restart msgflow start to consume them again`);
  };
  owner.startHeartbeat();
  const consumers = sharedState(o.store, CONSUMERS_NS);
  if (!(await consumers.get<ConsumerRecord>(identity)))
    await consumers.set(identity, { instance: inst.name, mode: inst.mode, since: o.clock.now() } satisfies ConsumerRecord);
  const types = o.flows.flatMap((f) =>
    f.on.notification?.instance === inst.name && isNotificationType(f.on.notification.type) ? [f.on.notification.type] : [],
  );
  // Handover: the operator's messages from the phone must be produced.
  if (o.config.conversations.handover) types.push('outgoingMessageReceived');
  const kinds = o.flows.flatMap((f) => (f.on.notification?.instance === inst.name ? [f.on.notification.typeMessage ?? []].flat() : []));
  await ensureSwitches(o.clientFor(inst.name), inst.name, inst.mode, types, o.logger, kinds);
  held.add(inst.name);
  st.ready();
  o.logger.debug(`notifications of ${inst.name}: ${inst.mode === 'poll' ? 'polling receiveNotification' : 'receiving webhooks'}`);
  if (inst.mode !== 'poll') return;
  const lost = new AbortController();
  owner.onLost = (reason) => {
    held.delete(inst.name);
    lost.abort();
    o.logger.error(`notifications of ${inst.name}: lease lost (${reason}); polling stopped`);
  };
  await pollNotifications({
    instance: inst.name,
    client: o.clientFor(inst.name),
    handle: (name, n) => d.dispatch(name, n),
    signal: AbortSignal.any([signal, lost.signal]),
    clock: o.clock,
    logger: o.logger,
    receiveTimeout: o.receiveTimeout,
  });
}
