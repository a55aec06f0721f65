/**
 * Status following of `files.broadcast` from the instance's notifications:
 * when `msgflow start` consumes them (a consumer record exists from before
 * the first send), each message's outcome is the service's own
 * outgoingMessageStatus, exact: `failed` (with the service's reason, e.g. the
 * file could not be fetched) and `noAccount` are failures, not `unknown`
 * after a time window; no polling of the service at all.
 */
import type { ActionContext, DurableState } from '../engine/action.js';
import { FAILED_STATUSES, type ConsumerRecord, type OutgoingStatusRecord } from '../engine/notify/records.js';
import { CONSUMERS_NS, OUTGOING_STATUS_NS } from '../engine/shared.js';
import type { DeliveryStatus, RecipientRecord } from './broadcast-records.js';

/** The service keeps an unsent message queued this long; no status can come after it. */
export const QUEUE_RETENTION_MS = 24 * 3600_000;

const RANK: Record<DeliveryStatus, number> = { sent: 0, delivered: 1, read: 2 };

/** Whether statuses of messages sent since `firstSentAt` are recorded by a consumer. */
export async function notificationsOn(ctx: ActionContext, firstSentAt: number): Promise<boolean> {
  const c = await ctx.shared(CONSUMERS_NS).get<ConsumerRecord>(ctx.instance.identity);
  return c !== undefined && c.since <= firstSentAt;
}

export interface NotifiedFollowOptions {
  until: DeliveryStatus;
  /** Follow delivered/read at least until then; a message with no status at all is waited for as long as the service may keep it queued. */
  deadline: number;
  pollMs: number;
  /** A record moved from sent to failed (the caller moves its counters). */
  onFailed(r: RecipientRecord): void;
}

/** Applies one status record; true when the recipient record changed. */
function apply(r: RecipientRecord, s: OutgoingStatusRecord, o: NotifiedFollowOptions): boolean {
  if (FAILED_STATUSES.includes(s.status)) {
    // The service's status (noAccount, failed…) leads the error; `status` no longer reads `sent`.
    Object.assign(r, { phase: 'failed', observed: true, error: `${s.status}${s.description ? `: ${s.description}` : ''}` });
    delete r.status;
    o.onFailed(r);
    return true;
  }
  const st = s.status as DeliveryStatus;
  if (!(st in RANK)) return false;
  const first = !r.observed;
  r.observed = true;
  if (RANK[st] <= RANK[r.status ?? 'sent']) return first;
  r.status = st;
  if (RANK[st] >= 1) r.deliveredAt ??= s.at;
  if (st === 'read') r.readAt ??= s.at;
  return true;
}

async function markUnknown(store: DurableState, r: RecipientRecord): Promise<void> {
  Object.assign(r, {
    phase: 'unknown',
    error: `accepted as ${r.idMessage} but the service sent no status for it within 24h; not sent again`,
  });
  await store.set(`r:${r.chatId}`, r);
}

/** Follows `records` from the recorded statuses until each reached `until`, failed, or can get no further. */
export async function followNotified(
  ctx: ActionContext,
  store: DurableState,
  records: RecipientRecord[],
  o: NotifiedFollowOptions,
): Promise<void> {
  const statuses = ctx.shared(OUTGOING_STATUS_NS);
  const target = RANK[o.until];
  for (;;) {
    const open = records.filter((r) => r.phase === 'sent' && (!r.observed || RANK[r.status ?? 'sent'] < target));
    if (open.length === 0) return;
    for (const r of open) {
      const s = await statuses.get<OutgoingStatusRecord>(`${ctx.instance.identity}:${r.idMessage}`);
      if (s && apply(r, s, o)) await store.set(`r:${r.chatId}`, r);
    }
    const now = ctx.clock.now();
    const unseen = records.filter((r) => r.phase === 'sent' && !r.observed);
    const unseenUntil = Math.max(0, ...unseen.map((r) => (r.sentAt ?? now) + QUEUE_RETENTION_MS));
    if (now >= o.deadline && now >= unseenUntil) {
      for (const r of unseen) await markUnknown(store, r);
      return;
    }
    // Past the deadline only messages without any status are still waited for.
    if (now >= o.deadline && unseen.length === 0) return;
    const wake = now >= o.deadline ? unseenUntil : o.deadline;
    await ctx.clock.sleep(Math.max(1, Math.min(o.pollMs, wake - now)), ctx.signal);
  }
}
