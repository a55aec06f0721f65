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
    const sentAt = r.sentAt;
    const chat = await this.ctx.shared(INCOMING_NS).get<IncomingChatRecord>(`${identity}:${r.chatId}`);
    const reply = chat?.messages.find((m) => m.at >= sentAt - SECOND && m.at <= sentAt + this.replyWindowMs);
    if (reply) this.add(variant, 'replied');
    const out = await optOutList(this.ctx).get<OptOutRecord>(optOutKey(this.ctx.instance.identity, r.chatId));
    if (out && out.at >= sentAt - SECOND) this.add(variant, 'optedOut');
    return reply?.at;
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
