/**
 * Turns a consumed notification into runs, exactly once per notification and
 * flow, even when the notification is delivered again after a crash between
 * receiving and acknowledging it (deleteNotification, or a webhook's 2xx).
 *
 * Each run's id is derived from the instance identity, the notification's
 * key and the flow, and an intent record (`notification-runs`, keyed by that
 * id) is written before the run is started: a redelivered notification finds
 * the run or the intent and starts nothing. A run whose concurrency slot is
 * busy (a writing flow runs one at a time by default) stays an intent and is
 * started by `startPending()` once a slot frees, so a long run never blocks
 * the channel nor loses a notification.
 */
import { createHash } from 'node:crypto';
import type { EngineStore } from '../../store/types.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../action.js';
import type { EngineBus } from '../events.js';
import type { Flow } from '../flow/types.js';
import type { Engine } from '../run/types.js';
import { eventOf, notificationKey, type Notification } from './body.js';
import { flowsFor } from './match.js';
import { recordNotification } from './records.js';
import { startDecidedRun } from '../run/decided-runs.js';

/** runId -> {@link PendingRun}: runs decided but not started yet. */
export const NOTIFICATION_RUNS_NS = 'notification-runs';

export interface PendingRun {
  flow: string;
  /** Config name of the instance the notification came from. */
  instance: string;
  event: Record<string, unknown>;
  /** When it was decided, ms. */
  at: number;
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

  constructor(private readonly o: DispatcherOptions) {
    this.byName = new Map(o.flows.map((f) => [f.name, f]));
  }

  /**
   * Records the notification (statuses, incoming messages) and decides its
   * runs. Resolves once all of that is durable: only then may the caller
   * acknowledge the notification. Resolves with the number of runs started
   * or queued for a slot (0 for a notification delivered again).
   */
  dispatch(instanceName: string, n: Notification): Promise<number> {
    return this.serial(() => this.dispatchNow(instanceName, n));
  }

  /** Starts the runs left waiting for a concurrency slot (or by a crash between intent and start). */
  startPending(): Promise<void> {
    return this.serial(async () => {
      for (const [runId, p] of await this.o.store.kv(NOTIFICATION_RUNS_NS).entries<PendingRun>()) await this.tryStart(runId, p);
    });
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
    const key = notificationKey(n);
    const at = n.timestampMs ?? now;
    const pending = store.kv(NOTIFICATION_RUNS_NS);
    let decided = 0;
    for (const flow of flowsFor(this.o.flows, instanceName, n)) {
      const runId = notificationRunId(flow.name, identity, key);
      if ((await store.getRun(runId)) || (await pending.get(runId))) continue; // delivered again: already decided
      decided++;
      const p: PendingRun = { flow: flow.name, instance: instanceName, event: eventOf(n, instanceName), at: now };
      await pending.set(runId, p);
      await this.tryStart(runId, p);
    }
    this.o.bus.emit('notification:received', {
      instance: instanceName,
      type: n.typeWebhook,
      lagMs: Math.max(0, now - at),
      flowsStarted: decided,
    });
    return decided;
  }

  private tryStart(runId: string, p: PendingRun): Promise<void> {
    const deps = { ...this.o, flow: (name: string) => this.byName.get(name) };
    return startDecidedRun(deps, NOTIFICATION_RUNS_NS, runId, p, 'notification');
  }
}
