/**
 * Turns alert occurrences (intents, see records.ts) into alert states and
 * into runs of the flows that trigger on them (`on.alert`, and `on.failure`
 * for a failed run), exactly once per occurrence and flow: each run's id is
 * derived from the occurrence and the flow, written as an intent before it
 * is started (engine/run/decided-runs.ts), and the occurrence's intent is
 * deleted last.
 */
import { RESUMABLE_STATUSES, type EngineStore } from '../../store/types.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../action.js';
import type { EngineBus } from '../events.js';
import type { Flow } from '../flow/types.js';
import { startDecidedRun, type DecidedRun } from '../run/decided-runs.js';
import type { Engine } from '../run/types.js';
import {
  ALERT_INTENTS_NS,
  ALERT_RUNS_NS,
  ALERTS_NS,
  alertId,
  alertRunId,
  type AlertIntent,
  type AlertKind,
  type AlertRecord,
} from './records.js';
import { pausedKeyOf } from './campaign.js';

export interface AlertDispatcherOptions {
  engine: Pick<Engine, 'start'>;
  store: EngineStore;
  bus: EngineBus;
  clock: Clock;
  logger: Logger;
  /** The flows loaded now (a reload changes them). */
  flows(): readonly Flow[];
}

/** Whether `flow` starts on the occurrence. */
export function triggersOn(flow: Flow, a: AlertIntent): boolean {
  // A run an alert started does not start alert flows when it fails: a failing alert flow would start itself forever.
  if (a.kind === 'run-failed' && a.trigger === 'alert') return false;
  if (flow.on.alert?.kinds.includes(a.kind)) return true;
  const failure = flow.on.failure;
  if (a.kind !== 'run-failed' || !failure || a.flow === undefined) return false;
  return failure.flows.includes(a.flow) || (failure.flows.includes('*') && a.flow !== flow.name);
}

export class AlertDispatcher {
  /** Passes one at a time: two passes never decide one occurrence twice. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: AlertDispatcherOptions) {}

  /** Handles every occurrence written so far, then starts the runs left waiting for a slot. */
  drain(): Promise<void> {
    return this.serial(async () => {
      for (const [, intent] of await this.o.store.kv(ALERT_INTENTS_NS).entries<AlertIntent>()) await this.handle(intent);
      for (const [runId, p] of await this.o.store.kv(ALERT_RUNS_NS).entries<DecidedRun>()) await this.start(runId, p);
    });
  }

  /** The alert of `kind` about `subject` is over (the flow succeeded again, the lag is gone). */
  resolve(kind: AlertKind, subject: string): Promise<void> {
    return this.serial(() => this.resolved(kind, subject));
  }

  private async resolved(kind: AlertKind, subject: string, lastKey?: string): Promise<void> {
    const alerts = this.o.store.kv(ALERTS_NS);
    const id = alertId(kind, subject);
    const rec = await alerts.get<AlertRecord>(id);
    if (!rec || rec.state === 'resolved' || (lastKey !== undefined && rec.lastKey !== lastKey)) return;
    const now = this.o.clock.now();
    await alerts.set(id, { ...rec, state: 'resolved', resolvedAt: now, updatedAt: now } satisfies AlertRecord);
    this.o.logger.info(`alert resolved: ${kind} ${subject}`);
  }

  /** campaign-resumed: the campaign-paused alert of that same pause is resolved (not one a later pause raised). */
  private resolveOccurrence(a: AlertIntent): Promise<void> {
    return this.resolved('campaign-paused', a.subject, pausedKeyOf(a));
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async handle(a: AlertIntent): Promise<void> {
    const { store } = this.o;
    const intents = store.kv(ALERT_INTENTS_NS);
    if (a.kind === 'run-failed' && a.runId !== undefined) {
      // Written before the run's record says failed: until it does (or if it resumed), nothing is decided.
      const run = await store.getRun(a.runId);
      if (run && RESUMABLE_STATUSES.includes(run.status)) return;
      if (!run || run.status !== 'failed') return void (await intents.delete(a.key));
    }
    // A campaign's resume is no alert of its own: it resolves its pause's (the flows naming it still start).
    if (a.kind === 'campaign-resumed') await this.resolveOccurrence(a);
    else await this.raise(a);
    const pending = store.kv(ALERT_RUNS_NS);
    for (const flow of this.o.flows().filter((f) => triggersOn(f, a))) {
      const runId = alertRunId(flow.name, a.key);
      if ((await store.getRun(runId)) || (await pending.get(runId))) continue; // decided before a crash
      const p: DecidedRun = { flow: flow.name, event: { ...a }, at: this.o.clock.now() };
      await pending.set(runId, p);
      await this.start(runId, p);
    }
    await intents.delete(a.key);
  }

  /** The alert's state: raised, with this occurrence counted once. */
  private async raise(a: AlertIntent): Promise<void> {
    const alerts = this.o.store.kv(ALERTS_NS);
    const id = alertId(a.kind, a.subject);
    const prev = await alerts.get<AlertRecord>(id);
    if (prev?.lastKey === a.key) return;
    const now = this.o.clock.now();
    const fresh = !prev || prev.state === 'resolved';
    const { key, at: _at, counts: _c, trigger: _t, ...about } = a;
    const rec: AlertRecord = {
      ...about,
      id,
      state: 'raised',
      raisedAt: fresh ? now : prev.raisedAt,
      updatedAt: now,
      occurrences: fresh ? 1 : prev.occurrences + 1,
      lastKey: key,
    };
    await alerts.set(id, rec);
    this.o.logger.warn(`alert: ${a.kind} ${a.subject}: ${a.message}`, { alert: id });
  }

  private start(runId: string, p: DecidedRun): Promise<void> {
    const deps = { ...this.o, flow: (name: string) => this.o.flows().find((f) => f.name === name) };
    return startDecidedRun(deps, ALERT_RUNS_NS, runId, p, 'alert');
  }
}
