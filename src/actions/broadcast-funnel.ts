/**
 * The funnel of a campaign, per A/B variant: queued (recipients meant to get
 * it), sent, delivered, read, replied (an incoming message from the
 * recipient within the reply window after the send, as the notification
 * consumer recorded it: INCOMING_NS), opted out (before, or after the send),
 * failed, unknown. Counted in the report's last pass from each recipient's
 * record, and written as CSV beside the report (csvLine, as the
 * reports are).
 */
import { writeFile } from 'node:fs/promises';
import type { ActionContext } from '../engine/action.js';
import type { IncomingChatRecord, OptOutRecord } from '../engine/notify/records.js';
import { INCOMING_NS } from '../engine/shared.js';
import type { RecipientRecord } from './broadcast-records.js';
import { csvLine } from './kit/report.js';
import { optOutKey, optOutList } from './opt-out.js';

export const FUNNEL_STAGES = ['queued', 'sent', 'delivered', 'read', 'replied', 'optedOut', 'failed', 'unknown'] as const;
export type FunnelStage = (typeof FUNNEL_STAGES)[number];
export type FunnelCounts = Record<FunnelStage, number>;

/** The service's message times are whole seconds: a reply in the same second as the send still counts. */
const SECOND = 1000;

/**
 * When the chat first wrote to the instance `identity` within `windowMs` after
 * `sentAt` (the service's seconds: from the second of the send on), as the
 * notification consumer recorded it; undefined when it did not. What the
 * funnel's `replied` and the health guard's reply rate count.
 */
export async function replyAfter(
  ctx: Pick<ActionContext, 'shared'>,
  identity: string,
  chatId: string,
  sentAt: number,
  windowMs: number,
): Promise<number | undefined> {
  const chat = await ctx.shared(INCOMING_NS).get<IncomingChatRecord>(`${identity}:${chatId}`);
  return chat?.messages.find((m) => m.at >= sentAt - SECOND && m.at <= sentAt + windowMs)?.at;
}

/**
 * Whether the chat is on the opt-out list of the instance `identity`, put
 * there after `sentAt` (the same second counts) and within `windowMs` of it.
 * What the funnel's `optedOut` (after the send) and the health guard's
 * opt-out rate count.
 */
export async function optedOutAfter(
  ctx: Pick<ActionContext, 'shared'>,
  identity: string,
  chatId: string,
  sentAt: number,
  windowMs = Infinity,
): Promise<boolean> {
  const out = await optOutList(ctx).get<OptOutRecord>(optOutKey(identity, chatId));
  return out !== undefined && out.at >= sentAt - SECOND && out.at <= sentAt + windowMs;
}

export class Funnel {
  readonly byVariant: Record<string, FunnelCounts> = {};

  constructor(
    private readonly ctx: ActionContext,
    private readonly replyWindowMs: number,
  ) {}

  private add(variant: string | undefined, stage: FunnelStage): void {
    const v = (this.byVariant[variant ?? 'all'] ??= Object.fromEntries(FUNNEL_STAGES.map((s) => [s, 0])) as FunnelCounts);
    v[stage]++;
  }

  /** An opted-out row (never sent). */
  optedOutRow(variant: string | undefined): void {
    this.add(variant, 'queued');
    this.add(variant, 'optedOut');
  }

  /**
   * A recipient with its outcome; `identity` the instance that sent it (its
   * replies are recorded under it). Returns when it replied, if it did.
   */
  async recipient(
    variant: string | undefined,
    outcome: string,
    r: RecipientRecord | undefined,
    identity: string,
  ): Promise<number | undefined> {
    this.add(variant, 'queued');
    if (outcome === 'failed' || outcome === 'unknown') this.add(variant, outcome);
    if (!r || (outcome !== 'sent' && outcome !== 'sentEarlier') || r.sentAt === undefined) return undefined;
    this.add(variant, 'sent');
    if (r.status === 'delivered' || r.status === 'read') this.add(variant, 'delivered');
    if (r.status === 'read') this.add(variant, 'read');
    const reply = await replyAfter(this.ctx, identity, r.chatId, r.sentAt, this.replyWindowMs);
    if (reply !== undefined) this.add(variant, 'replied');
    if (await optedOutAfter(this.ctx, this.ctx.instance.identity, r.chatId, r.sentAt)) this.add(variant, 'optedOut');
    return reply;
  }

  /** `reports/x.csv` → `reports/x.funnel.csv`. */
  static pathFor(report: string): string {
    return report.replace(/(\.[^./]+)?$/, '.funnel.csv');
  }

  /** Writes the funnel's CSV: one line per variant. */
  async write(absPath: string): Promise<void> {
    const lines = [csvLine(['variant', ...FUNNEL_STAGES])];
    for (const [variant, c] of Object.entries(this.byVariant)) lines.push(csvLine([variant, ...FUNNEL_STAGES.map((s) => c[s])]));
    await writeFile(absPath, lines.join(''));
  }
}
