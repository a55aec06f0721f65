/**
 * The daemon's watch over what raises and resolves alerts beyond a run's own
 * end (which the engine records itself): schedules missed while it was down,
 * a notification consumer lagging, a run going past its flow's SLA while it
 * still runs, a pause that ended, a flow that succeeded again, a campaign's
 * pause raised, lifted or ended (campaign.ts). Each
 * occurrence is written as an intent, then the dispatcher handles every
 * intent written so far, by this process or any other sharing the store.
 */
import type { EngineStore } from '../../store/types.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../action.js';
import type { EngineBus, EngineEventName, EngineEvents } from '../events.js';
import type { Flow } from '../flow/types.js';
import type { Engine } from '../run/types.js';
import { AlertDispatcher } from './dispatcher.js';
import { listAlerts, recordAlertIntent, slaAlert, type AlertIntent } from './records.js';
import { campaignIntents } from './campaign.js';

export interface AlertMonitorOptions {
  engine: Pick<Engine, 'start' | 'activeRuns'>;
  store: EngineStore;
  bus: EngineBus;
  clock: Clock;
  logger: Logger;
  flows(): readonly Flow[];
  /** A notification received this long after it was sent raises notification-lag. @default 600000 (10 min) */
  notificationLagMs?: number;
  /** How often (real time) intents of other processes, running SLAs and pauses are looked at. @default 5000 */
  checkEveryMs?: number;
}

export interface AlertMonitor {
  readonly dispatcher: AlertDispatcher;
  /** One pass now: SLAs of running runs, ended pauses, every intent written so far. */
  check(): Promise<void>;
  stop(): void;
}

export function startAlertMonitor(o: AlertMonitorOptions): AlertMonitor {
  const dispatcher = new AlertDispatcher(o);
  const lagMs = o.notificationLagMs ?? 600_000;
  const fail = (e: unknown) => o.logger.warn(`alerts: ${e instanceof Error ? e.message : String(e)}`);
  const raise = (a: AlertIntent) =>
    void recordAlertIntent(o.store, a)
      .then(() => dispatcher.drain())
      .catch(fail);
  const listeners = {
    'run:failed': () => void dispatcher.drain().catch(fail),
    'run:finished': (e: { flow: string }) =>
      void dispatcher
        .resolve('run-failed', e.flow)
        .then(() => dispatcher.drain())
        .catch(fail),
    'schedule:missed': (e: EngineEvents['schedule:missed'][0]) =>
      raise({
        key: `schedule-missed:${e.flow}:${e.scheduledAt}`,
        kind: 'schedule-missed',
        subject: e.flow,
        message: `schedule of ${e.flow} at ${new Date(e.scheduledAt).toISOString()} was missed while msgflow was down (missed: ${e.policy}${e.willRun ? ', it runs now' : ''})`,
        at: o.clock.now(),
        flow: e.flow,
      }),
    // A campaign's pause is in the store before its run says so: the pass that follows finds it.
    'action:event': (e: EngineEvents['action:event'][0]) => void (e.name === 'campaign.paused' ? check().catch(fail) : undefined),
    'notification:received': (e: EngineEvents['notification:received'][0]) => {
      if (e.lagMs <= lagMs) return void dispatcher.resolve('notification-lag', e.instance).catch(fail);
      const now = o.clock.now();
      raise({
        // One occurrence per lag window: a backlog of late notifications is one alert, not one per notification.
        key: `notification-lag:${e.instance}:${Math.floor(now / lagMs)}`,
        kind: 'notification-lag',
        subject: e.instance,
        message: `notifications of instance '${e.instance}' arrive ${Math.round(e.lagMs / 60_000)} min late (more than ${Math.round(lagMs / 60_000)} min)`,
        at: now,
        instance: e.instance,
      });
    },
  };
  for (const [name, fn] of Object.entries(listeners)) o.bus.on(name as EngineEventName, fn as never);
  async function check(): Promise<void> {
    const now = o.clock.now();
    for (const r of o.engine.activeRuns()) {
      const max = o.flows().find((f) => f.name === r.flow)?.sla?.maxDuration;
      if (max !== undefined && now - r.startedAt > max)
        await recordAlertIntent(o.store, slaAlert(r.flow, r.id, now - r.startedAt, max, now));
    }
    const alerts = await listAlerts(o.store);
    for (const a of alerts) {
      if (a.kind === 'instance-paused' && a.state === 'raised' && a.until !== undefined && a.until <= now)
        await dispatcher.resolve(a.kind, a.subject);
    }
    for (const a of await campaignIntents(o.store, alerts, now)) await recordAlertIntent(o.store, a);
    await dispatcher.drain();
  }
  const timer = setInterval(() => void check().catch(fail), o.checkEveryMs ?? 5000);
  timer.unref();
  void check().catch(fail);
  return {
    dispatcher,
    check,
    stop() {
      clearInterval(timer);
      for (const [name, fn] of Object.entries(listeners)) o.bus.off(name as EngineEventName, fn as never);
    },
  };
}
