/**
 * Durable per-recipient records of `files.broadcast`, and the two loops that
 * read the service: reconciliation (did a send whose answer was lost reach
 * the service?) and status following. Both decide per recipient from what the
 * service says about that recipient's message (its idMessage, or its chat's
 * history), never from a time window: a message that cannot be found yet is
 * `unknown`, and is never sent again.
 */
import type { Message } from '../api/types.js';
import type { ActionContext, DurableState } from '../engine/action.js';

export type RecipientPhase = 'intent' | 'sent' | 'failed' | 'unknown';
export type DeliveryStatus = 'sent' | 'delivered' | 'read';

/** Stored under `r:<chatId>` before and after each send (one key per recipient). */
export interface RecipientRecord {
  chatId: string;
  where: string;
  caption?: string;
  phase: RecipientPhase;
  /** The run that made the attempt (tells "sent by an earlier run of the campaign" apart). */
  runId?: string;
  /** Unique per attempt; lets logs and reports tell attempts apart. */
  attemptKey: string;
  /** When the intent was recorded (ms): a matching message cannot be older. */
  intentAt: number;
  idMessage?: string;
  sentAt?: number;
  status?: DeliveryStatus;
  deliveredAt?: number;
  readAt?: number;
  /** True when idMessage was found by reconciliation rather than from the answer. */
  reconciled?: boolean;
  /** The message was seen sent by the service (in its history, or by getMessage). */
  observed?: boolean;
  error?: string;
  /** A failure after which sending again cannot duplicate (the request was refused). */
  retryable?: boolean;
}

export interface ReconcileOptions {
  fileName: string;
  /** The instance's send-queue interval, ms. */
  sendIntervalMs: number;
  /** Extra time a queued message may take to show up, ms. */
  graceMs: number;
  /** Tolerated difference between msgflow's clock and the service's timestamps, ms. */
  clockSkewMs: number;
}

const RANK: Record<DeliveryStatus, number> = { sent: 0, delivered: 1, read: 2 };

export function statusOf(m: Message): DeliveryStatus {
  return m.statusMessage === 'read' || m.statusMessage === 'delivered' ? m.statusMessage : 'sent';
}

/**
 * Moves a record's status forward (never back) from an observed message; true
 * when it changed. A `pending` message is still in the service's send queue:
 * not yet sent, so not observed.
 */
export function applyStatus(r: RecipientRecord, m: Message, now: number): boolean {
  if (m.statusMessage === 'pending') return false;
  const s = statusOf(m);
  const cur = r.status ?? 'sent';
  const firstSeen = !r.observed;
  r.observed = true;
  if (RANK[s] <= RANK[cur]) return firstSeen;
  r.status = s;
  if (RANK[s] >= 1) r.deliveredAt ??= now;
  if (s === 'read') r.readAt ??= now;
  return true;
}

function matches(m: Message, r: RecipientRecord, o: ReconcileOptions, claimed: ReadonlySet<string>): boolean {
  return (
    m.type === 'outgoing' &&
    m.chatId === r.chatId &&
    !claimed.has(m.idMessage) &&
    (m.fileName ?? '') === o.fileName &&
    (m.caption ?? '') === (r.caption ?? '') &&
    m.timestamp * 1000 >= r.intentAt - o.clockSkewMs
  );
}

/**
 * How long messages queued ahead of ours may still take: one send interval
 * per message of ours the service has not sent yet, plus the grace, counted
 * from the last time one of them left the queue.
 */
export function queueAllowance(unobservedAhead: number, o: Pick<ReconcileOptions, 'sendIntervalMs' | 'graceMs'>): number {
  return (unobservedAhead + 1) * o.sendIntervalMs + o.graceMs;
}

/**
 * Resolves records left in `intent` (the send may or may not have reached the
 * service): each recipient's chat history is read until a message of ours
 * (same file and caption, not older than the intent, not claimed by another
 * record) shows up: then it is `sent` (reconciled). While messages of ours
 * are still queued ahead, the wait goes on; once the queue allowance passes
 * with nothing found, the record is `unknown`: reported, never sent again.
 */
export async function reconcile(
  ctx: ActionContext,
  store: DurableState,
  open: RecipientRecord[],
  claimed: Set<string>,
  queuedAhead: () => Promise<number>,
  o: ReconcileOptions,
): Promise<{ found: number; unknown: number }> {
  const pending = new Set(open);
  let found = 0;
  let ahead = await queuedAhead();
  let lastMove = ctx.clock.now();
  const poll = Math.max(250, Math.min(o.sendIntervalMs, 5000));
  for (;;) {
    for (const r of [...pending]) {
      const hist = await ctx.client.getChatHistory({ chatId: r.chatId, count: 100 }, { signal: ctx.signal }).catch(() => [] as Message[]);
      const m = hist.find((x) => matches(x, r, o, claimed));
      if (!m) continue;
      claimed.add(m.idMessage);
      Object.assign(r, { phase: 'sent', idMessage: m.idMessage, sentAt: m.timestamp * 1000, status: 'sent', reconciled: true });
      applyStatus(r, m, ctx.clock.now());
      await store.set(`r:${r.chatId}`, r);
      pending.delete(r);
      found++;
      ctx.logger.info(`files.broadcast: ${r.chatId} was already sent before the interruption (${m.idMessage}); not sending again`);
    }
    if (pending.size === 0) break;
    const left = await queuedAhead();
    const now = ctx.clock.now();
    if (left < ahead) lastMove = now; // the queue moved: wait for the rest of it
    ahead = left;
    const deadline = lastMove + queueAllowance(ahead, o);
    if (now >= deadline) break;
    await ctx.clock.sleep(Math.min(poll, deadline - now), ctx.signal);
  }
  for (const r of pending) {
    Object.assign(r, { phase: 'unknown', error: 'the send may have reached the service but its message was not found; not sent again' });
    await store.set(`r:${r.chatId}`, r);
  }
  return { found, unknown: pending.size };
}

export interface FollowOptions {
  until: DeliveryStatus;
  /** Follow at least until then. */
  deadline: number;
  pollMs: number;
  sendIntervalMs: number;
  graceMs: number;
}

/**
 * Polls statuses of sent records until each reached `until`. The deadline
 * extends while messages of ours are still leaving the queue (one interval
 * each, from the last time one did); a message accepted (idMessage) but never
 * seen sent by then is `unknown`, not failed: it may be late, or the service
 * could not send it; either way it is not sent again.
 */
export async function followStatuses(ctx: ActionContext, store: DurableState, records: RecipientRecord[], o: FollowOptions): Promise<void> {
  const target = RANK[o.until];
  let lastMove = ctx.clock.now();
  for (;;) {
    const open = records.filter((r) => r.phase === 'sent' && (!r.observed || RANK[r.status ?? 'sent'] < target));
    if (open.length === 0) return;
    const now = ctx.clock.now();
    const since = Math.min(...open.map((r) => r.sentAt ?? now)) - 60_000;
    const minutes = Math.max(1, Math.ceil((now - since) / 60_000) + 1);
    const msgs = await ctx.client.lastOutgoingMessages({ minutes }, { signal: ctx.signal });
    const byId = new Map(msgs.map((m) => [m.idMessage, m]));
    let looked = 0;
    for (const r of open) {
      let m = byId.get(r.idMessage!);
      if (!m && looked++ < 5)
        m = await ctx.client.getMessage({ chatId: r.chatId, idMessage: r.idMessage! }, { signal: ctx.signal }).catch(() => undefined);
      // `pending`: accepted, still queued: not seen sent yet.
      if (!m || m.statusMessage === 'pending') continue;
      const first = !r.observed;
      if (applyStatus(r, m, now)) await store.set(`r:${r.chatId}`, r);
      if (first) lastMove = now;
    }
    const unobserved = records.filter((r) => r.phase === 'sent' && !r.observed).length;
    const giveUpAt = Math.max(o.deadline, lastMove + queueAllowance(unobserved, o));
    const after = ctx.clock.now();
    if (after >= giveUpAt) return markUnknown(store, records, after);
    await ctx.clock.sleep(Math.min(o.pollMs, Math.max(1, giveUpAt - after)), ctx.signal);
  }
}

async function markUnknown(store: DurableState, records: RecipientRecord[], now: number): Promise<void> {
  for (const r of records) {
    if (r.phase !== 'sent' || r.observed) continue;
    const after = Math.round((now - (r.sentAt ?? now)) / 1000);
    Object.assign(r, {
      phase: 'unknown',
      error: `accepted as ${r.idMessage} but not seen sent ${after}s later (still queued, or the service could not send it, e.g. the file could not be fetched); not sent again`,
    });
    await store.set(`r:${r.chatId}`, r);
  }
}
