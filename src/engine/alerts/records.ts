/**
 * Alerts: what an operator must hear about (a run failed or crashed, a step
 * over its timeout, a flow over its SLA, a schedule missed while the daemon
 * was down, an instance-wide pause raised, a notification consumer lagging).
 *
 * Each occurrence is first written as an intent (`alert-intents`, keyed by
 * an id the same occurrence always gets), by whoever sees it (the engine as
 * a run ends, the daemon's monitor): the dispatcher then records the alert's
 * state (`alerts`, one record per kind and subject: raised or resolved) and
 * decides the runs of the flows that trigger on it, and only then deletes
 * the intent. A crash anywhere in between leaves the intent, and the next
 * pass finds what was done already: every occurrence starts each flow once.
 */
import { createHash } from 'node:crypto';
import type { EngineStore, ItemCounts, RunTrigger } from '../../store/types.js';
import type { ALERT_KINDS } from '../flow/schema.js';
import type { PauseRecord } from '../run/pauses.js';

export type AlertKind = (typeof ALERT_KINDS)[number];

/** Occurrences not handled yet: key -> {@link AlertIntent}. */
export const ALERT_INTENTS_NS = 'alert-intents';
/** Alert states: `${kind}:${subject}` -> {@link AlertRecord}. */
export const ALERTS_NS = 'alerts';
/** Runs decided for an alert, not started yet (engine/run/decided-runs.ts). */
export const ALERT_RUNS_NS = 'alert-runs';

/** One occurrence of an alert, as its flows see it (`event`). */
export interface AlertIntent {
  /** The occurrence: the same occurrence always gets the same key (`run-failed:<runId>`). */
  key: string;
  kind: AlertKind;
  /** What the alert's state is about: a flow name, `<instance>:<scope>` for a pause, an instance for lag. */
  subject: string;
  /** For people: what happened. */
  message: string;
  /** When it happened, ms. */
  at: number;
  flow?: string;
  runId?: string;
  step?: string;
  /** The error code (run-failed, step-timeout). */
  code?: string;
  /** Config name of the instance (instance-paused, notification-lag). */
  instance?: string;
  /** The failed run's counts. */
  counts?: ItemCounts;
  /** The failed run's trigger: a run an alert started starts no alert flow when it fails (no loop). */
  trigger?: RunTrigger;
  /** instance-paused, campaign-paused: when the pause ends (it resolves then). */
  until?: number;
  /** campaign-paused, campaign-resumed: the pause's scope (`campaign:<name>`), the campaign's name, why it paused. */
  scope?: string;
  campaign?: string;
  reason?: string;
  /** campaign-resumed: `lifted` (msgflow pauses lift, the dashboard) or `ended` (its time passed). */
  how?: 'lifted' | 'ended';
  /** campaign-paused: the pause record it is about (`<identity>:<scope>`) and when it was raised. */
  pause?: string;
  since?: number;
}

/** An alert's state, listed by `msgflow alerts` and the dashboard. */
export interface AlertRecord {
  /** `${kind}:${subject}`. */
  id: string;
  kind: AlertKind;
  subject: string;
  state: 'raised' | 'resolved';
  /** The latest occurrence's message. */
  message: string;
  /** When it was (last) raised, ms. */
  raisedAt: number;
  updatedAt: number;
  resolvedAt?: number;
  /** Occurrences since it was first raised. */
  occurrences: number;
  /** The latest occurrence's key (a redelivered occurrence is not counted twice). */
  lastKey: string;
  flow?: string;
  runId?: string;
  step?: string;
  code?: string;
  instance?: string;
  until?: number;
  scope?: string;
  campaign?: string;
  reason?: string;
  pause?: string;
  since?: number;
}

export const alertId = (kind: AlertKind, subject: string): string => `${kind}:${subject}`;

/** Writes an occurrence for the dispatcher: durable when it resolves. */
export async function recordAlertIntent(store: Pick<EngineStore, 'kv'>, intent: AlertIntent): Promise<void> {
  await store.kv(ALERT_INTENTS_NS).set(intent.key, intent);
}

/** The run `flow` gets for an occurrence: always the same id for the same occurrence. */
export function alertRunId(flow: string, key: string): string {
  const name = flow.replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 64) || 'flow';
  return `${name}-a${createHash('sha256').update(`${key}\n${flow}`).digest('hex').slice(0, 20)}`;
}

/** Every alert's state, the latest first. */
export async function listAlerts(store: EngineStore): Promise<AlertRecord[]> {
  const all = (await store.kv(ALERTS_NS).entries<AlertRecord>()).map(([, r]) => r);
  return all.sort((a, b) => b.updatedAt - a.updatedAt);
}

/** The sla-missed occurrence of a run that took (or has been going for) `took` ms, over `max`. */
export function slaAlert(flow: string, runId: string, took: number, max: number, now: number): AlertIntent {
  return {
    key: `sla-missed:${runId}`,
    kind: 'sla-missed',
    subject: flow,
    message: `run ${runId} of ${flow} has taken ${Math.round(took / 1000)} s, more than its sla.maxDuration of ${Math.round(max / 1000)} s`,
    at: now,
    flow,
    runId,
  };
}

/** The instance-paused occurrence of a pause raised (or extended: a new `until` is a new occurrence). */
export function pauseAlert(p: PauseRecord, now: number): AlertIntent {
  return {
    key: `instance-paused:${p.identity}:${p.scope}:${p.until}`,
    kind: 'instance-paused',
    subject: `${p.instance}:${p.scope}`,
    message: `${p.scope} of instance '${p.instance}' paused until ${new Date(p.until).toISOString()}: ${p.reason}`,
    at: now,
    instance: p.instance,
    until: p.until,
  };
}
