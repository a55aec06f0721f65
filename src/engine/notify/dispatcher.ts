/**
 * Turns a consumed notification into runs, exactly once per notification and
 * flow, even when the notification is delivered again after a crash between
 * receiving and acknowledging it (deleteNotification, or a webhook's 2xx).
 *
 * Each run's id is derived from the instance identity, the notification's
 * key and the flow, and an intent record (`notification-runs`, keyed by that
 * id, see pending.ts) is written before the run is started: a redelivered
 * notification finds the run, the intent, the run it was gathered into
 * (`debounce:`) or why it started none (a chat handed to a human), and
 * starts nothing. A run whose concurrency slot is busy stays an intent and is
 * started by `startPending()` once a slot frees: a long run never blocks the
 * channel nor loses a notification. Intents of one slot set (one chat, by
 * default) start in the order decided, never one overtaking another.
 *
 * Human handover: an `outgoingMessageReceived` (the operator wrote from the
 * phone, not the bot through the API) hands the chat over for the configured
 * quiet time, or ends the handover when it is the resume command; while a
 * chat is handed over, flows that respect handovers start nothing for it.
 */
import { createHash } from 'node:crypto';
import { MsgflowError } from '../../api/errors.js';
import type { EngineStore } from '../../store/types.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../action.js';
import { Handovers, type Handover } from '../conversation/handover.js';
import type { EngineBus } from '../events.js';
import type { Flow } from '../flow/types.js';
import { evaluateConcurrencyKey } from '../run/concurrency.js';
import type { Engine } from '../run/types.js';
import { chatIdOf, eventOf, notificationKey, textOf, type Notification } from './body.js';
import { flowsFor } from './match.js';
import {
  NOTIFICATION_GATHERED_NS,
  NOTIFICATION_RUNS_NS,
  NOTIFICATION_SEQ_NS,
  NOTIFICATION_SKIPPED_NS,
  decisionOrder,
  dueBatches,
  slotOf,
  type PendingRun,
  type SkippedRun,
} from './pending.js';
import { recordNotification } from './records.js';

export { NOTIFICATION_RUNS_NS, type PendingRun } from './pending.js';

/** What an operator writing from the phone does to the chat (config.yaml `conversations.handover`). */
export interface HandoverPolicy {
  /** How long the bot keeps quiet after the operator's last message, ms. */
  quietMs: number;
  /** The operator's message that gives the chat back to the bot at once (a case-insensitive regular expression, trimmed text). */
  resume?: string;
}

export interface DispatcherOptions {
  /** What starts the runs. */
  engine: Pick<Engine, 'start'>;
  store: EngineStore;
  bus: EngineBus;
  clock: Clock;
  /** The loaded flows (those with `on.notification` are considered). */
  flows: readonly Flow[];
  identityFor(instanceName: string): string;
  logger: Logger;
  /** The instance's handover policy; undefined: an operator writing hands nothing over. @default none */
  handoverFor?(instanceName: string): HandoverPolicy | undefined;
}

/**
 * The id of the run `flow` gets for a notification: the same notification
 * always gives the same id, whenever and however often it is delivered (a
 * redelivery may carry another timestamp, or none), so the id holds no time;
 * run lists order by start time, not by id.
 */
export function notificationRunId(flow: string, identity: string, key: string): string {
  const name = flow.replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 64) || 'flow';
  const digest = createHash('sha256').update(`${identity}\n${key}\n${flow}`).digest('hex').slice(0, 20);
  return `${name}-n${digest}`;
}

export class NotificationDispatcher {
  /** Dispatches and pending starts one at a time: two deliveries of one notification never race. */
  private queue: Promise<unknown> = Promise.resolve();
  private readonly byName: Map<string, Flow>;
  private readonly handovers: Handovers;
  /** Slot sets with intents waiting, as last seen: a new intent of one of them waits its turn (startPending). */
  private readonly backlog = new Set<string>();
  private readonly stopped = new AbortController();

  constructor(private readonly o: DispatcherOptions) {
    this.byName = new Map(o.flows.map((f) => [f.name, f]));
    this.handovers = new Handovers({ store: o.store, clock: o.clock, identityFor: o.identityFor });
  }

  /**
   * Records the notification (statuses, incoming messages, an operator's
   * message) and decides its runs. Resolves once all of that is durable:
   * only then may the caller acknowledge the notification. Resolves with the
   * number of runs started or queued (0 for a notification delivered again).
   */
  dispatch(instanceName: string, n: Notification): Promise<number> {
    return this.serial(() => this.dispatchNow(instanceName, n));
  }

  /**
   * Starts the runs left waiting for a concurrency slot (or by a crash
   * between intent and start), and the debounced batches whose window has
   * passed: per slot set in the order decided, stopping at the first that
   * cannot start yet.
   */
  startPending(): Promise<void> {
    return this.serial(() => this.startPendingNow());
  }

  /** Stops the debounce timers. */
  stop(): void {
    this.stopped.abort();
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async dispatchNow(instanceName: string, n: Notification): Promise<number> {
    const { store, clock } = this.o;
    const now = clock.now();
    const identity = this.o.identityFor(instanceName);
    await recordNotification(store, identity, n, now);
    await this.operatorWrote(instanceName, n);
    const key = notificationKey(n);
    let decided = 0;
    let skipped = 0;
    for (const flow of flowsFor(this.o.flows, instanceName, n)) {
      const runId = notificationRunId(flow.name, identity, key);
      if (await this.known(runId)) continue; // delivered again: already decided
      const handover = await this.handoverOf(flow, instanceName, n);
      if (handover) {
        await this.skip(runId, flow, instanceName, n, handover);
        skipped++;
        continue;
      }
      decided++;
      await this.decide(runId, flow, instanceName, identity, n);
    }
    this.o.bus.emit('notification:received', {
      instance: instanceName,
      type: n.typeWebhook,
      lagMs: Math.max(0, now - (n.timestampMs ?? now)),
      flowsStarted: decided,
      ...(skipped ? { flowsSkipped: skipped } : {}),
    });
    return decided;
  }

  /** Whether a run of this id was decided: started, waiting, gathered into another, or skipped. */
  private async known(runId: string): Promise<boolean> {
    const { store } = this.o;
    if (await store.getRun(runId)) return true;
    for (const ns of [NOTIFICATION_RUNS_NS, NOTIFICATION_GATHERED_NS, NOTIFICATION_SKIPPED_NS])
      if ((await store.kv(ns).get(runId)) !== undefined) return true;
    return false;
  }

  /** Writes the intent (its decision number, key, batch), then starts it unless it must wait its turn or its window. */
  private async decide(runId: string, flow: Flow, instance: string, identity: string, n: Notification): Promise<void> {
    const now = this.o.clock.now();
    const event = eventOf(n, instance);
    const chat = chatIdOf(n);
    const seqs = this.o.store.kv(NOTIFICATION_SEQ_NS);
    const seq = ((await seqs.get<number>(identity)) ?? 0) + 1;
    await seqs.set(identity, seq);
    const scope = { event, inputs: {}, run: { id: runId, flow: flow.name, startedAt: now } };
    const key = flow.concurrency?.key === undefined ? chat : evaluateConcurrencyKey(flow, scope);
    const p: PendingRun = { flow: flow.name, instance, event, at: now, seq, ...(key === undefined ? {} : { key }) };
    if (flow.debounce) {
      const d = flow.debounce;
      const by = d.key === undefined ? chat : evaluateConcurrencyKey(flow, scope, d.key, 'debounce.key');
      p.batch = `${flow.name}\n${by ?? ''}`;
      p.notBefore = now + d.windowMs;
      await this.o.store.kv(NOTIFICATION_RUNS_NS).set(runId, p);
      this.wakeAt(p.notBefore);
      return;
    }
    await this.o.store.kv(NOTIFICATION_RUNS_NS).set(runId, p);
    const slot = slotOf(flow, p);
    if (this.backlog.has(slot)) return; // older intents of this chat go first
    if (!(await this.tryStart(runId, p))) this.backlog.add(slot);
  }

  /** startPending once the engine clock reaches `at` (a debounce window's end). */
  private wakeAt(at: number): void {
    const ms = Math.max(0, at - this.o.clock.now());
    this.o.clock.sleep(ms, this.stopped.signal).then(
      () => void this.startPending().catch((e: unknown) => this.o.logger.warn(`notification runs: ${String(e)}`)),
      () => undefined,
    );
  }

  private async startPendingNow(): Promise<void> {
    const pending = this.o.store.kv(NOTIFICATION_RUNS_NS);
    const now = this.o.clock.now();
    await this.gather(decisionOrder(await pending.entries<PendingRun>()), now);
    const blocked = new Set<string>();
    let nextWake: number | undefined;
    const ordered = decisionOrder(await pending.entries<PendingRun>());
    // A batch is due when its latest intent's window has passed.
    const dueAt = new Map<string, number>();
    for (const [, p] of ordered) if (p.batch !== undefined) dueAt.set(p.batch, Math.max(dueAt.get(p.batch) ?? 0, p.notBefore ?? 0));
    for (const [runId, p] of ordered) {
      const flow = this.byName.get(p.flow);
      const slot = flow ? slotOf(flow, p) : `\n${runId}`;
      if (blocked.has(slot)) continue;
      if (p.batch !== undefined && !p.events) {
        // Its window is not over: later intents of its chat wait behind it.
        blocked.add(slot);
        nextWake = Math.min(nextWake ?? Infinity, dueAt.get(p.batch) ?? now);
        continue;
      }
      if (!(await this.tryStart(runId, p))) blocked.add(slot);
    }
    this.backlog.clear();
    for (const s of blocked) this.backlog.add(s);
    // Only a window still running: one that is over was gathered above.
    if (nextWake !== undefined && nextWake > now) this.wakeAt(nextWake);
  }

  /** Gathers each debounced batch whose window has passed into its latest intent (crash-safe: see pending.ts dueBatches). */
  private async gather(ordered: Array<[string, PendingRun]>, now: number): Promise<void> {
    const pending = this.o.store.kv(NOTIFICATION_RUNS_NS);
    const gathered = this.o.store.kv(NOTIFICATION_GATHERED_NS);
    for (const g of dueBatches(ordered, now)) {
      await pending.set(g.runId, g.intent);
      for (const id of g.taken) {
        await gathered.set(id, g.runId);
        await pending.delete(id);
      }
    }
  }

  /** The event a run starts with: a gathered batch's last, with every message in `messages` when the flow asks for all. */
  private eventFor(flow: Flow, p: PendingRun): Record<string, unknown> {
    if (!p.events || flow.debounce?.mode !== 'all') return p.event;
    return { ...p.event, messages: p.events };
  }

  /** Starts the intent's run; false when it must wait (its slot is busy, the engine is stopping, the store is away). */
  private async tryStart(runId: string, p: PendingRun): Promise<boolean> {
    const pending = this.o.store.kv(NOTIFICATION_RUNS_NS);
    const flow = this.byName.get(p.flow);
    if ((await this.o.store.getRun(runId)) || !flow) {
      if (!flow)
        this.o.logger.warn(`notification run ${runId} is dropped: flow '${p.flow}' is not loaded any more`, { runId, flow: p.flow });
      await pending.delete(runId);
      return true;
    }
    try {
      const h = await this.o.engine.start(flow, { trigger: 'notification', event: this.eventFor(flow, p), runId, concurrencyKey: p.key });
      // Its slot is free once it has ended (`done`): the next intent of its chat goes then, not at the next tick.
      void h.done.then(() => (this.backlog.size > 0 ? this.startPending() : undefined)).catch(() => undefined);
    } catch (e) {
      if (e instanceof MsgflowError && (e.code === 'RUN_LIVE' || e.code === 'ENGINE_STOPPED' || e.code === 'STORE_UNAVAILABLE')) {
        this.o.logger.info(`run ${runId} of ${flow.name} (notification) waits: ${e.message}`, { runId, flow: flow.name });
        return false;
      }
      // Started by another process meanwhile (two daemons), or not startable at all (a required input has no value).
      if (!(e instanceof MsgflowError && e.code === 'RUN_FINISHED'))
        this.o.logger.error(`notification run of ${flow.name} cannot start: ${e instanceof Error ? e.message : String(e)}`, {
          runId,
          flow: flow.name,
        });
    }
    await pending.delete(runId);
    return true;
  }

  /** An operator's message from the phone: the resume command ends the chat's handover, anything else begins (extends) it. */
  private async operatorWrote(instance: string, n: Notification): Promise<void> {
    if (n.typeWebhook !== 'outgoingMessageReceived') return;
    const policy = this.o.handoverFor?.(instance);
    const chat = chatIdOf(n);
    if (!policy || chat === undefined) return;
    const text = textOf(n)?.trim();
    if (policy.resume !== undefined && text !== undefined && new RegExp(policy.resume, 'i').test(text)) {
      await this.handovers.end(instance, chat);
      this.o.logger.info(`chat ${chat} on ${instance} is the bot's again: the operator sent the resume command`, {
        instance,
        chatId: chat,
      });
      return;
    }
    await this.handovers.begin(instance, chat, { by: 'operator', reason: 'the operator wrote from the phone', forMs: policy.quietMs });
  }

  /** The handover that keeps the flow from starting for this notification's chat, if any. */
  private async handoverOf(flow: Flow, instance: string, n: Notification): Promise<Handover | undefined> {
    if (flow.on.notification?.handover === 'ignore') return undefined;
    const chat = chatIdOf(n);
    return chat === undefined ? undefined : this.handovers.active(instance, chat);
  }

  /** Records (visibly: the store, the log) that a notification started no run of the flow, and why. */
  private async skip(runId: string, flow: Flow, instance: string, n: Notification, h: Handover): Promise<void> {
    const until = h.until === undefined ? 'until released' : `until ${new Date(h.until).toISOString()}`;
    const reason = `the chat is handed over to a human (${h.by}${h.reason ? `: ${h.reason}` : ''}, ${until})`;
    const chatId = chatIdOf(n);
    const rec: SkippedRun = { flow: flow.name, instance, at: this.o.clock.now(), reason, ...(chatId === undefined ? {} : { chatId }) };
    await this.o.store.kv(NOTIFICATION_SKIPPED_NS).set(runId, rec);
    this.o.logger.info(`no run of ${flow.name} for a message of chat ${chatId ?? '?'}: ${reason}`, { runId, flow: flow.name, instance });
  }
}
