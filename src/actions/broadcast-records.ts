/**
 * Durable per-recipient records of `files.broadcast` and the two loops that
 * read the service's outgoing messages: reconciliation (did a send whose
 * answer was lost actually go out?) and status following.
 */
import type { Message } from '../api/types.js';
import type { ActionContext, DurableState } from '../engine/action.js';

export type RecipientPhase = 'intent' | 'sent' | 'failed';
export type DeliveryStatus = 'sent' | 'delivered' | 'read';

/** Stored under `r:<chatId>` before and after each send. */
export interface RecipientRecord {
  chatId: string;
  where: string;
  caption?: string;
  phase: RecipientPhase;
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
  /**
   * The message was seen in the outgoing messages (it left the service's send
   * queue). An accepted message that never shows up was not sent: its file
   * could not be fetched, for example.
   */
  observed?: boolean;
  error?: string;
  /** A failure after which sending again cannot duplicate (the request was refused). */
  retryable?: boolean;
}

export interface ReconcileOptions {
  fileName: string;
  /** The instance's send-queue interval, ms. */
  sendIntervalMs: number;
  /** How long after the intent a queued message may still take to show up, ms. */
  graceMs: number;
  /** Tolerated difference between msgflow's clock and the service's timestamps, ms. */
  clockSkewMs: number;
}

const RANK: Record<DeliveryStatus, number> = { sent: 0, delivered: 1, read: 2 };

export function statusOf(m: Message): DeliveryStatus {
  return m.statusMessage === 'read' || m.statusMessage === 'delivered' ? m.statusMessage : 'sent';
}

/** Moves a record's status forward (never back) from an observed message. */
export function applyStatus(r: RecipientRecord, m: Message, now: number): boolean {
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

function minutesSince(now: number, since: number): number {
  return Math.max(1, Math.ceil((now - since) / 60_000) + 1);
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
 * Resolves records left in `intent` (the send may or may not have reached
 * the service). FIFO queue reasoning: such a message was queued after every
 * message of ours with a known idMessage, so it is released at most one
 * interval after the last of them. We poll lastOutgoingMessages until it
 * appears, or until all of ours ahead of it are out, one more interval and
 * the grace have passed; then a last look at the chat's history decides.
 * Found: recorded as sent (reconciled). Not found: the intent is dropped,
 * and the recipient is sent to again.
 */
export async function reconcile(
  ctx: ActionContext,
  store: DurableState,
  open: RecipientRecord[],
  known: RecipientRecord[],
  o: ReconcileOptions,
): Promise<{ found: number; notSent: number }> {
  const claimed = new Set(known.map((r) => r.idMessage!).filter(Boolean));
  const pending = new Set(open);
  const since = Math.min(...open.map((r) => r.intentAt)) - o.clockSkewMs;
  const lastIntent = Math.max(...open.map((r) => r.intentAt));
  const recent = known.filter((r) => (r.sentAt ?? 0) >= since);
  let found = 0;
  const poll = Math.max(250, Math.min(o.sendIntervalMs, 5000));
  let deadline: number | undefined;
  for (;;) {
    const now = ctx.clock.now();
    const msgs = await ctx.client.lastOutgoingMessages({ minutes: minutesSince(now, since) }, { signal: ctx.signal });
    const visible = new Set(msgs.map((m) => m.idMessage));
    for (const r of [...pending]) {
      const m = msgs.find((x) => matches(x, r, o, claimed));
      if (!m) continue;
      claimed.add(m.idMessage);
      Object.assign(r, { phase: 'sent', idMessage: m.idMessage, sentAt: m.timestamp * 1000, status: 'sent', reconciled: true, observed: true });
      applyStatus(r, m, now);
      await store.set(`r:${r.chatId}`, r);
      pending.delete(r);
      found++;
      ctx.logger.info(`files.broadcast: ${r.chatId} was already sent before the interruption (${m.idMessage}); not sending again`);
    }
    if (pending.size === 0) break;
    // Fixed at the first look (so a message of ours that never shows up
    // cannot keep it moving): ours still queued then were ahead of the lost one.
    if (deadline === undefined) {
      const queuedAhead = recent.filter((r) => !visible.has(r.idMessage!)).length;
      deadline = Math.max(lastIntent + o.graceMs + o.sendIntervalMs, now + o.sendIntervalMs * (queuedAhead + 1) + o.graceMs * Math.sign(queuedAhead));
    }
    if (now >= deadline) break;
    await ctx.clock.sleep(Math.min(poll, deadline - now), ctx.signal);
  }
  // Last look per chat: history is not bounded by the `minutes` window.
  for (const r of [...pending]) {
    const hist = await ctx.client.getChatHistory({ chatId: r.chatId, count: 100 }, { signal: ctx.signal }).catch(() => [] as Message[]);
    const m = hist.find((x) => matches(x, r, o, claimed));
    if (m) {
      claimed.add(m.idMessage);
      Object.assign(r, { phase: 'sent', idMessage: m.idMessage, sentAt: m.timestamp * 1000, status: 'sent', reconciled: true, observed: true });
      applyStatus(r, m, ctx.clock.now());
      await store.set(`r:${r.chatId}`, r);
      pending.delete(r);
      found++;
    }
  }
  for (const r of pending) await store.delete(`r:${r.chatId}`);
  return { found, notSent: pending.size };
}

/**
 * Polls statuses of sent records until each reached `until` or the deadline
 * passed. Uses lastOutgoingMessages (one call for all), and getMessage for a
 * few messages missing from it (still queued, or out of the window).
 */
export async function followStatuses(
  ctx: ActionContext,
  store: DurableState,
  records: RecipientRecord[],
  o: {
    until: DeliveryStatus;
    deadline: number;
    pollMs: number;
    /** After this time a message never seen in the outgoing messages counts as not sent. */
    giveUpUnobservedAt: number;
    onChange: () => void;
  },
): Promise<void> {
  const target = RANK[o.until];
  const notSent = async (now: number) => {
    for (const r of records) {
      if (r.phase !== 'sent' || r.observed) continue;
      const after = Math.round((now - (r.sentAt ?? now)) / 1000);
      Object.assign(r, {
        phase: 'failed',
        // Not retryable: if it is only late in the queue, sending again would duplicate it.
        retryable: undefined,
        error: `accepted as ${r.idMessage} but never sent: not in the outgoing messages ${after}s later (the service could not send it, e.g. the file could not be fetched)`,
      });
      await store.set(`r:${r.chatId}`, r);
      o.onChange();
    }
  };
  for (;;) {
    const open = records.filter((r) => r.phase === 'sent' && (!r.observed || RANK[r.status ?? 'sent'] < target));
    if (open.length === 0) return;
    const now = ctx.clock.now();
    const since = Math.min(...open.map((r) => r.sentAt ?? now)) - 60_000;
    const msgs = await ctx.client.lastOutgoingMessages({ minutes: minutesSince(now, since) }, { signal: ctx.signal });
    const byId = new Map(msgs.map((m) => [m.idMessage, m]));
    let missing = 0;
    for (const r of open) {
      let m = byId.get(r.idMessage!);
      if (!m && missing < 5) {
        missing++;
        m = await ctx.client.getMessage({ chatId: r.chatId, idMessage: r.idMessage! }, { signal: ctx.signal }).catch(() => undefined);
      }
      if (m && applyStatus(r, m, now)) {
        await store.set(`r:${r.chatId}`, r);
        o.onChange();
      }
    }
    const after = ctx.clock.now();
    if (after >= o.giveUpUnobservedAt || after >= o.deadline) await notSent(after);
    if (after >= o.deadline) return;
    const next = Math.min(o.deadline, records.some((r) => r.phase === 'sent' && !r.observed) ? o.giveUpUnobservedAt : o.deadline);
    await ctx.clock.sleep(Math.min(o.pollMs, Math.max(0, next - after)), ctx.signal);
  }
}
