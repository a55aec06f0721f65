/**
 * `outgoing.audit`: a periodic look at what went out. Each audit reads
 * lastOutgoingMessages for a window, counts by status, type and origin, lists
 * the messages still not delivered / not read after a threshold, is stored
 * per instance so the next one reports the trend, and emits
 * `audit.threshold` when a watched count crosses its limit.
 */
import { z } from 'zod';
import type { Message } from '../api/types.js';
import { defineAction, outputFile } from '../engine/action.js';
import { auditNs } from '../engine/shared.js';
import { formatDuration } from '../util/duration.js';
import { duration } from './duration.js';
import { REPORT_EXTENSIONS, reportFormat, writeReport } from './kit/report.js';

export const OUTGOING_AUDIT = 'outgoing.audit';

/** Columns of the CSV report, fixed. */
export const AUDIT_REPORT_COLUMNS = ['lag', 'idMessage', 'chatId', 'typeMessage', 'statusMessage', 'sentAt', 'ageMs'] as const;

export const OutgoingAuditInput = z
  .strictObject({
    minutes: z
      .number()
      .int()
      .min(1)
      .default(60)
      .describe('Window: messages sent in the last N minutes (lastOutgoingMessages `minutes`). Match it to the schedule. @default 60'),
    notDeliveredAfter: duration('A message still only `sent` this long after it was sent counts as not delivered. @default 10m').default(
      600_000,
    ),
    notReadAfter: duration('A message not `read` this long after it was sent counts as not read. @default 1h').default(3_600_000),
    thresholds: z
      .strictObject({
        notDelivered: z.number().int().min(0).optional().describe('Emit audit.threshold when the not-delivered count reaches this.'),
        notRead: z.number().int().min(0).optional().describe('Emit audit.threshold when the not-read count reaches this.'),
        notDeliveredRatio: z.number().min(0).max(1).optional().describe("...or when this share of the window's messages is not delivered."),
      })
      .default({})
      .describe('Limits watched by the audit; crossing one (either way) emits `audit.threshold`.'),
    listLimit: z
      .number()
      .int()
      .min(0)
      .default(50)
      .describe('At most this many not-delivered / not-read messages listed in the output. @default 50'),
    keep: z.number().int().min(1).default(100).describe('Audits kept per instance for the trend. @default 100'),
    report: outputFile(
      z.string().min(1).optional().describe('Also write the audit to this file (.json, or .csv listing the lagging messages).'),
      {
        extensions: REPORT_EXTENSIONS,
      },
    ),
  })
  .describe('Audits the outgoing messages of a time window and reports the trend against the previous audit.');

export type OutgoingAuditInput = z.output<typeof OutgoingAuditInput>;

/**
 * The statuses an audit counts: the sending ones, and those the service's journals give a message that
 * will never be delivered (no account on the number, not a member of the group, sending suspended).
 */
export const AUDIT_STATUSES = ['sent', 'delivered', 'read', 'noAccount', 'notInGroup', 'yellowCard'] as const;
export type AuditStatus = (typeof AUDIT_STATUSES)[number];
/** Statuses of a message that will not be delivered: counted as such, never as lagging. */
const UNDELIVERABLE: ReadonlySet<AuditStatus> = new Set<AuditStatus>(['noAccount', 'notInGroup', 'yellowCard']);

export interface LaggingMessage {
  idMessage: string;
  chatId: string;
  typeMessage: string;
  statusMessage: string;
  sentAt: string;
  ageMs: number;
}

/** What is stored per audit (no message lists: they are in the step output and report). */
export interface AuditRecord {
  at: number;
  /** `<runId>/<step>` of the audit. */
  runId: string;
  windowMinutes: number;
  total: number;
  byStatus: Record<AuditStatus, number>;
  byType: Record<string, number>;
  byOrigin: { api: number; device: number };
  uniqueRecipients: number;
  notDelivered: number;
  notRead: number;
}

export interface AuditTrend {
  previousAt: string;
  total: number;
  byStatus: Record<AuditStatus, number>;
  uniqueRecipients: number;
  notDelivered: number;
  notRead: number;
}

export interface ThresholdCrossing {
  metric: 'notDelivered' | 'notRead' | 'notDeliveredRatio';
  value: number;
  threshold: number;
  /** `above`: reached the limit since the last audit; `below`: back under it. */
  direction: 'above' | 'below';
}

export interface OutgoingAuditResult extends AuditRecord {
  notDeliveredMessages: LaggingMessage[];
  notReadMessages: LaggingMessage[];
  /** Difference to the previous audit of this instance (this minus previous); null for the first. */
  trend: AuditTrend | null;
  thresholdsCrossed: ThresholdCrossing[];
  report?: string;
}

function statusOf(m: Message): AuditStatus {
  return (AUDIT_STATUSES as readonly string[]).includes(m.statusMessage ?? '') ? (m.statusMessage as AuditStatus) : 'sent';
}

export function computeAudit(messages: readonly Message[], now: number, input: OutgoingAuditInput, runId: string) {
  const byStatus = Object.fromEntries(AUDIT_STATUSES.map((s) => [s, 0])) as Record<AuditStatus, number>;
  const byType: Record<string, number> = {};
  const byOrigin = { api: 0, device: 0 };
  const recipients = new Set<string>();
  const notDelivered: LaggingMessage[] = [];
  const notRead: LaggingMessage[] = [];
  const seen = new Set<string>();
  for (const m of messages) {
    // `pending`: still in the send queue, not sent yet: neither counted nor lagging.
    if (m.type !== 'outgoing' || m.statusMessage === 'pending' || seen.has(m.idMessage)) continue;
    seen.add(m.idMessage);
    const status = statusOf(m);
    byStatus[status]++;
    byType[m.typeMessage] = (byType[m.typeMessage] ?? 0) + 1;
    if (m.sendByApi) byOrigin.api++;
    else byOrigin.device++;
    recipients.add(m.chatId);
    const sentMs = m.timestamp * 1000;
    const ageMs = Math.max(0, now - sentMs);
    const lag = (): LaggingMessage => ({
      idMessage: m.idMessage,
      chatId: m.chatId,
      typeMessage: m.typeMessage,
      statusMessage: status,
      sentAt: new Date(sentMs).toISOString(),
      ageMs,
    });
    if (UNDELIVERABLE.has(status)) continue;
    if (status === 'sent' && ageMs >= input.notDeliveredAfter) notDelivered.push(lag());
    // Not read includes messages never delivered: neither has been seen by the recipient.
    if (status !== 'read' && ageMs >= input.notReadAfter) notRead.push(lag());
  }
  const oldestFirst = (a: LaggingMessage, b: LaggingMessage) => b.ageMs - a.ageMs;
  notDelivered.sort(oldestFirst);
  notRead.sort(oldestFirst);
  const record: AuditRecord = {
    at: now,
    runId,
    windowMinutes: input.minutes,
    total: seen.size,
    byStatus,
    byType,
    byOrigin,
    uniqueRecipients: recipients.size,
    notDelivered: notDelivered.length,
    notRead: notRead.length,
  };
  return { record, notDelivered, notRead };
}

function trendOf(cur: AuditRecord, prev: AuditRecord | undefined): AuditTrend | null {
  if (!prev) return null;
  return {
    previousAt: new Date(prev.at).toISOString(),
    total: cur.total - prev.total,
    // An audit stored before a status was counted has no key for it: 0.
    byStatus: Object.fromEntries(AUDIT_STATUSES.map((s) => [s, (cur.byStatus[s] ?? 0) - (prev.byStatus[s] ?? 0)])) as Record<
      AuditStatus,
      number
    >,
    uniqueRecipients: cur.uniqueRecipients - prev.uniqueRecipients,
    notDelivered: cur.notDelivered - prev.notDelivered,
    notRead: cur.notRead - prev.notRead,
  };
}

function crossings(cur: AuditRecord, prev: AuditRecord | undefined, t: OutgoingAuditInput['thresholds']): ThresholdCrossing[] {
  const out: ThresholdCrossing[] = [];
  const ratio = (r: AuditRecord) => (r.total === 0 ? 0 : r.notDelivered / r.total);
  const check = (metric: ThresholdCrossing['metric'], limit: number | undefined, value: (r: AuditRecord) => number) => {
    if (limit === undefined) return;
    const now = value(cur) >= limit;
    // The first audit has nothing before it: being over the limit counts as crossing it.
    const before = prev ? value(prev) >= limit : false;
    if (now !== before) out.push({ metric, value: value(cur), threshold: limit, direction: now ? 'above' : 'below' });
  };
  check('notDelivered', t.notDelivered, (r) => r.notDelivered);
  check('notRead', t.notRead, (r) => r.notRead);
  check('notDeliveredRatio', t.notDeliveredRatio, ratio);
  return out;
}

/** Keys sort by time: `a:<13-digit ms>:<runId>`. */
const auditKey = (r: AuditRecord) => `a:${String(r.at).padStart(15, '0')}:${r.runId}`;

export const outgoingAudit = defineAction({
  name: OUTGOING_AUDIT,
  description:
    'Audits outgoing messages of a window: counts by status, type and origin (API/device), unique recipients, messages not delivered / not read after thresholds; stores each audit for the trend and emits audit.threshold on a crossing.',
  input: OutgoingAuditInput,
  // Reads only; a dry run computes the audit and stores nothing.
  dryRun: true,
  output: {
    description:
      '{ at, windowMinutes, total, byStatus {sent, delivered, read, noAccount, notInGroup, yellowCard}, byType, byOrigin {api, device}, uniqueRecipients, notDelivered, notRead, notDeliveredMessages[], notReadMessages[], trend (vs the previous audit, or null), thresholdsCrossed[] }',
  },
  async run(ctx, input): Promise<OutgoingAuditResult> {
    if (input.report) reportFormat(OUTGOING_AUDIT, input.report);
    // A step re-run after a crash gives the audit it already stored, so the
    // trend is never computed against itself.
    const done = await ctx.state.get<OutgoingAuditResult>('result');
    if (done) return done;

    const messages = await ctx.client.lastOutgoingMessages({ minutes: input.minutes }, { signal: ctx.signal });
    const now = ctx.clock.now();
    const runKey = `${ctx.run.id}/${ctx.run.step}`;
    const { record, notDelivered, notRead } = computeAudit(messages, now, input, runKey);
    const store = ctx.shared(auditNs(ctx.instance.identity));
    const history = (await store.entries<AuditRecord>('a:')).sort(([a], [b]) => (a < b ? -1 : 1));
    const mine = history.filter(([, r]) => r.runId === runKey);
    const others = history.filter(([, r]) => r.runId !== runKey);
    const prev = others.at(-1)?.[1];
    const result: OutgoingAuditResult = {
      ...record,
      notDeliveredMessages: notDelivered.slice(0, input.listLimit),
      notReadMessages: notRead.slice(0, input.listLimit),
      trend: trendOf(record, prev),
      thresholdsCrossed: crossings(record, prev, input.thresholds),
      report: input.report,
    };
    if (ctx.run.dryRun) return result;

    for (const [key] of mine) await store.delete(key);
    await store.set(auditKey(record), record);
    for (const [key] of others.slice(0, Math.max(0, others.length + 1 - input.keep))) await store.delete(key);
    for (const c of result.thresholdsCrossed) {
      ctx.logger.warn(
        `${OUTGOING_AUDIT}: ${c.metric} ${c.direction === 'above' ? 'reached' : 'is back under'} ${c.threshold} (now ${c.value})`,
      );
      ctx.emit('audit.threshold', { instance: ctx.instance.name, identity: ctx.instance.identity, ...c, at: now });
    }
    if (input.report) {
      await writeReport(ctx.resolvePath(input.report), {
        action: OUTGOING_AUDIT,
        runId: ctx.run.id,
        generatedAt: now,
        summary: { ...record, trend: result.trend, thresholdsCrossed: result.thresholdsCrossed },
        columns: AUDIT_REPORT_COLUMNS,
        rows: [...notDelivered.map((m) => ({ lag: 'notDelivered', ...m })), ...notRead.map((m) => ({ lag: 'notRead', ...m }))],
      });
    }
    await ctx.state.set('result', result);
    ctx.logger.info(
      `${OUTGOING_AUDIT}: ${record.total} messages in ${formatDuration(input.minutes * 60_000)} (sent ${record.byStatus.sent}, delivered ${record.byStatus.delivered}, read ${record.byStatus.read}); ${record.notDelivered} not delivered, ${record.notRead} not read`,
    );
    return result;
  },
});
