/**
 * A campaign's pauses as alerts. A pause a campaign's health guard raised
 * (its record carries `campaign`: actions/broadcast-pool.ts) is the
 * occurrence `campaign-paused`; its lift, or its end, is `campaign-resumed`,
 * which resolves it. Flows start on either (`on: { alert: { kinds:
 * [campaign-paused] } }`) with the pause as `event`.
 *
 * Each occurrence is keyed by its pause (instance, scope and when it was
 * raised), so whoever sees it first writes the same intent: the daemon's
 * monitor scanning the pause records (a pause is written before the run
 * goes on, so a crash right after it loses nothing), at once on the run's
 * `campaign.paused` event, and on each pass for a pause that was lifted or
 * ended; a lift (`msgflow pauses lift`, the dashboard) before it deletes the
 * record. The dispatcher then starts each flow once per occurrence.
 */
import type { EngineStore } from '../../store/types.js';
import { liftPauses, pauseKey, pauseRecords, type PauseRecord } from '../run/pauses.js';
import { alertId, recordAlertIntent, type AlertIntent, type AlertRecord } from './records.js';

type CampaignPauseRecord = PauseRecord & { campaign: NonNullable<PauseRecord['campaign']> };

/** What identifies one pause: its instance, scope and when it was raised. */
const pauseOccurrence = (p: { identity: string; scope: string; since: number }) => `${p.identity}:${p.scope}:${p.since}`;

/** The campaign-paused occurrence of a campaign's pause: the same pause always gets the same key. */
export function campaignPausedAlert(p: CampaignPauseRecord, now: number): AlertIntent {
  const c = p.campaign;
  return {
    key: `campaign-paused:${pauseOccurrence(p)}`,
    kind: 'campaign-paused',
    subject: `${p.instance}:${p.scope}`,
    message: `campaign ${c.name} paused on instance '${p.instance}' until ${new Date(p.until).toISOString()}: ${p.reason}`,
    at: now,
    instance: p.instance,
    until: p.until,
    scope: p.scope,
    campaign: c.name,
    reason: p.reason,
    flow: c.flow,
    step: c.step,
    runId: c.runId,
    pause: pauseKey(p.identity, p.scope),
    since: p.since,
  };
}

/** What a campaign-resumed occurrence is made from: the pause (its record, or the alert that tells of it). */
interface PauseOfCampaign {
  identity: string;
  scope: string;
  since: number;
  instance: string;
  reason: string;
  campaign?: string;
}

/** The campaign-resumed occurrence of a campaign's pause: lifted or ended, one per pause either way (the same key). */
export function campaignResumedAlert(p: PauseOfCampaign, how: 'lifted' | 'ended', now: number): AlertIntent {
  return {
    key: `campaign-resumed:${pauseOccurrence(p)}`,
    kind: 'campaign-resumed',
    subject: `${p.instance}:${p.scope}`,
    message: `campaign ${p.campaign ?? p.scope} resumes on instance '${p.instance}': its pause ${how === 'lifted' ? 'was lifted' : 'ended'} (paused by ${p.reason})`,
    at: now,
    instance: p.instance,
    scope: p.scope,
    ...(p.campaign === undefined ? {} : { campaign: p.campaign }),
    reason: p.reason,
    how,
    since: p.since,
  };
}

/** The key of the campaign-paused occurrence a campaign-resumed one ends. */
export const pausedKeyOf = (resumed: Pick<AlertIntent, 'key'>): string => resumed.key.replace(/^campaign-resumed:/, 'campaign-paused:');

const isCampaign = (p: Partial<PauseRecord>): p is CampaignPauseRecord =>
  p.campaign !== undefined && typeof p.identity === 'string' && typeof p.instance === 'string' && typeof p.since === 'number';

/**
 * The occurrences a pass of the monitor writes: each campaign's pause in
 * force that no alert tells of yet, and each raised campaign-paused alert
 * whose pause was lifted (its record is gone) or ended.
 */
export async function campaignIntents(store: Pick<EngineStore, 'kv'>, alerts: readonly AlertRecord[], now: number): Promise<AlertIntent[]> {
  const out: AlertIntent[] = [];
  const byId = new Map(alerts.map((a) => [a.id, a]));
  const records = new Map(await pauseRecords(store).entries());
  for (const p of records.values()) {
    if (!isCampaign(p) || p.until <= now) continue;
    const intent = campaignPausedAlert(p, now);
    if (byId.get(alertId('campaign-paused', intent.subject))?.lastKey !== intent.key) out.push(intent);
  }
  for (const a of alerts) {
    if (a.kind !== 'campaign-paused' || a.state !== 'raised' || a.pause === undefined || a.scope === undefined || a.since === undefined)
      continue;
    const p = records.get(a.pause);
    // A newer pause of the campaign on the instance is an occurrence of its own; this one has not ended.
    if (p && p.since !== a.since) continue;
    if (p && p.until > now) continue;
    const identity = a.pause.slice(0, a.pause.length - a.scope.length - 1);
    const pause = {
      identity,
      scope: a.scope,
      since: a.since,
      instance: a.instance ?? '',
      reason: a.reason ?? a.message,
      campaign: a.campaign,
    };
    out.push(campaignResumedAlert(pause, p ? 'ended' : 'lifted', now));
  }
  return out;
}

/**
 * Lifts an instance's pauses (engine/run/pauses.ts liftPauses), each
 * campaign's among them written as its campaign-resumed occurrence first.
 */
export function liftWithAlerts(
  store: Pick<EngineStore, 'kv'>,
  target: { name?: string; identity?: string },
  now: number,
): ReturnType<typeof liftPauses> {
  return liftPauses(store, target, async (hits) => {
    for (const [, p] of hits) {
      if (!isCampaign(p)) continue;
      // Lifted before any monitor saw it: its pause is an occurrence all the same (one the dispatcher handled is not started again).
      await recordAlertIntent(store, campaignPausedAlert(p, now));
      await recordAlertIntent(store, campaignResumedAlert({ ...p, campaign: p.campaign.name }, 'lifted', now));
    }
  });
}
