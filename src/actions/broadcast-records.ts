/**
 * Durable per-recipient records of a broadcast (messages.broadcast and its
 * files.broadcast preset), and the two loops that
 * read the service: reconciliation (did a send whose answer was lost reach
 * the service?) and status following. Both decide per recipient from what the
 * service says about that recipient's message (its idMessage, its chat's
 * history, the send queue), never from a time window alone. An interrupted
 * send found in neither the send queue nor the chat history once the
 * journal lag has passed never reached the service: it is sent again, once,
 * and the record says why (`resent`). One that cannot be decided (the queue
 * cannot be read, or it was sent again already) is `unknown`, never sent again.
 */
import type { Message } from '../api/types.js';
import { contentKey, lookForSend } from '../client/send-lookup.js';
import type { ActionContext, DurableState } from '../engine/action.js';
import { FAILED_STATUSES } from '../engine/notify/records.js';

/** `resend`: an interrupted send that never reached the service, to be sent again (see {@link reconcile}). */
export type RecipientPhase = 'intent' | 'sent' | 'failed' | 'unknown' | 'resend';
export type DeliveryStatus = 'sent' | 'delivered' | 'read';

/**
 * Stored under `r:<chatId>` before and after each send (one key per
 * recipient). A campaign's store holds one per recipient, so a record keeps
 * only what a later pass reads: where the row is comes from the input again,
 * and what the message carries (`content`) only while it is an intent.
 */
export interface RecipientRecord {
  chatId: string;
  /** The row, in records written before the report read it from the input (no longer written). */
  where?: string;
  /** What the report shows of the message: a file's caption, a text, a poll's question. */
  caption?: string;
  /**
   * What the message carries, as the service's journals and queue show it
   * (client/send-lookup.ts contentKey): what reconciliation looks for; kept
   * while the record is an intent, dropped once its message is known.
   * @default the file `ReconcileOptions.fileName` with `caption` (records of files.broadcast before messages.broadcast)
   */
  content?: string;
  /** The instance that sent it (its identity; a pool's member), and its config name for the report. */
  sender?: string;
  senderName?: string;
  /** messages.broadcast: the A/B variant the recipient got (chosen once, kept for every later attempt and run). */
  variant?: string;
  phase: RecipientPhase;
  /** The run that made the attempt (tells "sent by an earlier run of the campaign" apart). */
  runId?: string;
  /** In records written before: an id per attempt, which nothing read (no longer written). */
  attemptKey?: string;
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
  /** When an interrupted send was first found missing from the send queue (and the chat history), ms. */
  absentSince?: number;
  /** Why the recipient was sent again: an interrupted send that never reached the service. Kept by the new attempt. */
  resent?: string;
}

export interface ReconcileOptions {
  /** The job's name, for its log lines. */
  action: string;
  /** The file of a record without `content` (see {@link RecipientRecord.content}). */
  fileName?: string;
  /** The instance's send-queue interval, ms. */
  sendIntervalMs: number;
  /** Extra time a queued message may take to show up, ms. */
  graceMs: number;
  /** Tolerated difference between msgflow's clock and the service's timestamps, ms. */
  clockSkewMs: number;
  /** How long a message the service sent may take to appear in the chat history (its journal), ms. */
  journalLagMs: number;
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

/**
 * How long messages queued ahead of ours may still take: one send interval
 * per message of ours the service has not sent yet, plus the grace, counted
 * from the last time one of them left the queue.
 */
export function queueAllowance(unobservedAhead: number, o: Pick<ReconcileOptions, 'sendIntervalMs' | 'graceMs'>): number {
  return (unobservedAhead + 1) * o.sendIntervalMs + o.graceMs;
}

/** A record that may be sent again once its message stayed missing for the journal lag: never twice. */
const mayResend = (r: RecipientRecord) => r.resent === undefined;

/**
 * Resolves records left in `intent` (the send may or may not have reached the
 * service). Each round reads the send queue, then each recipient's chat
 * history: a message of ours (same file and caption, not older than the
 * intent, not claimed by another record) in either is its message: `sent`
 * (reconciled). One missing from both is noted (`absentSince`): had the
 * service accepted it, it would be queued, or sent and in the history within
 * the journal lag; once that lag has passed and it is still missing, it never
 * reached the service and is marked `resend` (the caller sends it again, once).
 * Without a readable queue, or for a record sent again already, the wait is
 * the queue allowance and then `unknown`: reported, never sent again.
 */
export async function reconcile(
  ctx: ActionContext,
  store: DurableState,
  open: RecipientRecord[],
  queuedAhead: () => Promise<number>,
  o: ReconcileOptions,
): Promise<{ found: number; unknown: number; resend: number }> {
  const pending = new Set(open);
  // The messages found here, never taken for another record. Those of records sent before need no
  // list: each record is its chat's only one, and a lookup looks only at its own chat's messages.
  const claimed = new Set<string>();
  const n = { found: 0, resend: 0 };
  let ahead = await queuedAhead();
  let lastMove = ctx.clock.now();
  const poll = Math.max(250, Math.min(o.sendIntervalMs, 5000));
  /** When each record's last lookup began: only one begun after its lag has passed can decide to send again. */
  const lookedAt = new Map<RecipientRecord, number>();
  // A record that may be sent again is decided by a lookup begun once its lag has passed, however long
  // the lookups take (a slow service, a rate-limited history): never given up on by the clock alone.
  const undecided = (r: RecipientRecord) =>
    mayResend(r) && (r.absentSince === undefined || (lookedAt.get(r) ?? -Infinity) < r.absentSince + o.journalLagMs);
  for (;;) {
    for (const r of [...pending]) {
      lookedAt.set(r, ctx.clock.now());
      const outcome = await reconcileOne(ctx, store, r, claimed, o);
      if (outcome === 'open') continue;
      pending.delete(r);
      n[outcome]++;
    }
    if (pending.size === 0) break;
    const left = await queuedAhead();
    const now = ctx.clock.now();
    if (left < ahead) lastMove = now; // the queue moved: wait for the rest of it
    ahead = left;
    const deadline = Math.max(
      lastMove + queueAllowance(ahead, o),
      ...[...pending].map((r) => (undecided(r) ? Math.max(now + 1, (r.absentSince ?? now) + o.journalLagMs) : 0)),
    );
    if (now >= deadline) break;
    await ctx.clock.sleep(Math.min(poll, deadline - now), ctx.signal);
  }
  for (const r of pending) {
    Object.assign(r, { phase: 'unknown', error: 'the send may have reached the service but its message was not found; not sent again' });
    await store.set(`r:${r.chatId}`, r);
  }
  return { ...n, unknown: pending.size };
}

/** One round for one record: found, to be sent again, or still open. */
async function reconcileOne(
  ctx: ActionContext,
  store: DurableState,
  r: RecipientRecord,
  claimed: Set<string>,
  o: ReconcileOptions,
): Promise<'found' | 'resend' | 'open'> {
  const checkedAt = ctx.clock.now();
  const content = r.content ?? contentKey('sendFileByUrl', { fileName: o.fileName ?? '', caption: r.caption ?? '' })!;
  const shape = { chatId: r.chatId, content, since: r.intentAt };
  const seen = await lookForSend(ctx.client, shape, { clockSkewMs: o.clockSkewMs, claimed, signal: ctx.signal });
  if ('found' in seen) {
    const hit = seen.found;
    claimed.add(hit.idMessage);
    Object.assign(r, { phase: 'sent', idMessage: hit.idMessage, sentAt: hit.sentAt, status: 'sent', reconciled: true });
    delete r.absentSince;
    delete r.content; // only an intent is looked for
    if (hit.message) applyStatus(r, hit.message, ctx.clock.now());
    await store.set(`r:${r.chatId}`, r);
    ctx.logger.info(`${o.action}: ${r.chatId} was already sent before the interruption (${hit.idMessage}); not sending again`);
    return 'found';
  }
  if ('unknown' in seen || !mayResend(r)) return 'open';
  if (r.absentSince === undefined) {
    // After the lookup: the queue was read before this moment, so the lag counts from a time it was not there.
    r.absentSince = ctx.clock.now();
    await store.set(`r:${r.chatId}`, r);
    return 'open';
  }
  if (checkedAt < r.absentSince + o.journalLagMs) return 'open';
  const lag = Math.round(o.journalLagMs / 1000);
  Object.assign(r, {
    phase: 'resend',
    resent: `an interrupted send was in neither the send queue nor the chat history ${lag}s after: it never reached the service; sent again`,
  });
  await store.set(`r:${r.chatId}`, r);
  ctx.logger.info(`${o.action}: ${r.chatId}: ${r.resent}`);
  return 'resend';
}

export interface FollowOptions {
  until: DeliveryStatus;
  /** Follow at least until then. */
  deadline: number;
  pollMs: number;
  sendIntervalMs: number;
  graceMs: number;
  /** A record moved from sent to failed (the caller moves its counters). */
  onFailed?(r: RecipientRecord): void;
}

/**
 * A journal status that says the message went nowhere (noAccount, notInGroup, yellowCard, failed):
 * the record fails with it, as the notified path does with the same status.
 */
async function failFromJournal(store: DurableState, r: RecipientRecord, m: Message, o: FollowOptions): Promise<boolean> {
  if (!FAILED_STATUSES.includes(m.statusMessage ?? '')) return false;
  Object.assign(r, { phase: 'failed', observed: true, error: `${m.statusMessage}: the service's journal says the message went nowhere` });
  delete r.status;
  o.onFailed?.(r);
  await store.set(`r:${r.chatId}`, r);
  return true;
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
      if (await failFromJournal(store, r, m, o)) continue;
      const first = !r.observed;
      if (applyStatus(r, m, now)) await store.set(`r:${r.chatId}`, r);
      if (first) lastMove = now;
    }
    const unobserved = records.filter((r) => r.phase === 'sent' && !r.observed).length;
    const giveUpAt = Math.max(o.deadline, lastMove + queueAllowance(unobserved, o));
    const after = ctx.clock.now();
    if (after >= giveUpAt) return markUnknown(store, records, after, await stateIfNotSending(ctx, records));
    await ctx.clock.sleep(Math.min(o.pollMs, Math.max(1, giveUpAt - after)), ctx.signal);
  }
}

/**
 * The instance's state when messages of ours were never seen sent and it is not `authorized`
 * (yellowCard: sending suspended; notAuthorized, blocked...): why they wait in the queue.
 */
async function stateIfNotSending(ctx: ActionContext, records: RecipientRecord[]): Promise<string | undefined> {
  if (!records.some((r) => r.phase === 'sent' && !r.observed)) return undefined;
  const state = await ctx.client
    .getStateInstance({}, { signal: ctx.signal })
    .then((s) => s.stateInstance)
    .catch(() => undefined);
  return state === 'authorized' ? undefined : state;
}

async function markUnknown(store: DurableState, records: RecipientRecord[], now: number, state?: string): Promise<void> {
  for (const r of records) {
    if (r.phase !== 'sent' || r.observed) continue;
    const after = Math.round((now - (r.sentAt ?? now)) / 1000);
    const why =
      state === undefined
        ? 'still queued, or the service could not send it, e.g. the file could not be fetched'
        : `the instance is ${state}${state === 'yellowCard' ? ': sending is suspended' : ''}, so it waits in the send queue (up to 24 h)`;
    Object.assign(r, {
      phase: 'unknown',
      error: `accepted as ${r.idMessage} but not seen sent ${after}s later (${why}); not sent again`,
    });
    await store.set(`r:${r.chatId}`, r);
  }
}
