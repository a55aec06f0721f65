/**
 * `files.broadcast`: one file to many chats through the instance's send
 * queue, exactly once per recipient.
 *
 * Before each sendFileByUrl the intent is recorded durably; the idMessage is
 * recorded after. A recipient found with an intent but no idMessage (the
 * process died, or the answer was lost, between the call and the record) is
 * reconciled against the service's outgoing messages before anything is sent
 * again; see broadcast-records.ts for the queue reasoning and the guarantee.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { ApiError, FlowError, NetworkError, RateLimitError, ValidationError, isMsgflowError } from '../api/errors.js';
import { isChatId, personalChatId } from '../api/chat-id.js';
import { TYPING_TYPES } from '../api/schemas.js';
import { validateRequest } from '../api/validate.js';
import { defineAction, type ActionContext, type DurableState } from '../engine/action.js';
import { evaluateTemplate, hasTemplate, type ExprScope } from '../engine/expr/index.js';
import { duration } from './duration.js';
import { normalisePhone } from './phone.js';
import { loadRows, pickField, type SourcedRow } from './rows.js';
import { PaceSchema, pause } from './pace.js';
import { defaultReport, reportFormat, writeReport } from './report.js';
import { resolveWindow, WindowSchema } from './window.js';
import { followStatuses, reconcile, type RecipientRecord } from './broadcast-records.js';

export const FILES_BROADCAST = 'files.broadcast';

export const FilesBroadcastInput = z
  .strictObject({
    file: z.string().min(1).optional().describe('Data file of recipients (CSV with a header line, JSON or YAML list), relative to the project.'),
    recipients: z
      .array(z.unknown())
      .optional()
      .describe('Inline recipients: phone numbers, chat IDs, or records with phone or chatId plus any fields the caption uses.'),
    urlFile: z.string().describe('Link to the file (http:// or https://), fetched by the service.'),
    fileName: z.string().describe('File name with extension; the extension decides the file type.'),
    caption: z
      .string()
      .optional()
      .describe('Caption template, evaluated per recipient: `${{ item.<field> }}` reads the recipient record. At most 1024 characters after evaluation.'),
    typingTime: z.number().int().optional().describe('Typing notification before sending, ms (1000 to 20000).'),
    typingType: z.enum(TYPING_TYPES).optional().describe('Activity shown to the recipient. @default text (service default)'),
    window: WindowSchema.optional(),
    follow: z
      .strictObject({
        deadline: duration('Follow statuses for this long after the last send; 0: do not follow. @default 10m').default(600_000),
        poll: duration('Time between two status polls. @default 15s').default(15_000),
        until: z.enum(['delivered', 'read']).default('read').describe('Stop following a message once it reached this status. @default read'),
      })
      .default({ deadline: 600_000, poll: 15_000, until: 'read' })
      .describe('Status following after sending: { deadline, poll, until }.'),
    reconcile: z
      .strictObject({
        sendInterval: duration("The instance's send-queue interval (the local service's sendIntervalMs). @default 3s").default(3000),
        grace: duration('Extra time a queued message may take to appear in the outgoing messages. @default 30s').default(30_000),
        clockSkew: duration("Tolerated difference between msgflow's clock and the service's timestamps. @default 10s").default(10_000),
      })
      .default({ sendInterval: 3000, grace: 30_000, clockSkew: 10_000 })
      .describe('How an interrupted send is looked for before sending again: { sendInterval, grace, clockSkew }.'),
    pace: PaceSchema.default({ delay: 0, jitter: 0 }),
    campaign: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,100}$/, { error: 'letters, digits, _ . - only' })
      .optional()
      .describe('Keep per-recipient records across runs under this name: a later run sends only to recipients not sent yet (e.g. the rest after a window closed).'),
    maxConsecutiveFailures: z.number().int().min(1).default(5).describe('Stop after this many sends in a row fail for network/server reasons. @default 5'),
    report: z.string().min(1).optional().describe('Report file, .csv or .json, relative to the project. @default reports/<flow>-<step>-<runId>.csv'),
  })
  .refine((v) => v.file !== undefined || v.recipients !== undefined, { error: 'give file or recipients' })
  .describe('Sends one file to many chats through the send queue, exactly once per recipient, and follows the statuses.');

export type FilesBroadcastInput = z.output<typeof FilesBroadcastInput>;

export interface FilesBroadcastSummary {
  total: number;
  recipients: number;
  duplicates: number;
  invalid: number;
  /** Accepted by the service (includes delivered and read). */
  sent: number;
  delivered: number;
  read: number;
  failed: number;
  /** Not attempted: the window closed, or the run was a dry run. */
  notSent: number;
  /** Sends found by reconciliation after an interruption (not sent again). */
  reconciled: number;
  /** Sent by an earlier run of the same campaign. */
  earlier: number;
  report: string;
}

interface Recipient {
  chatId: string;
  where: string;
  row: Record<string, unknown>;
  caption?: string;
}

interface ReportRow {
  chatId?: string;
  where: string;
  outcome: string;
  idMessage?: string;
  status?: string;
  sentAt?: string;
  deliveredAt?: string;
  readAt?: string;
  reconciled?: boolean;
  caption?: string;
  error?: string;
}

function recipientOf(row: SourcedRow): { chatId: string; rec: Record<string, unknown> } | string {
  const { value } = row;
  let raw: unknown;
  let rec: Record<string, unknown>;
  if (typeof value === 'string' || typeof value === 'number') {
    raw = value;
    rec = {};
  } else if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    rec = value as Record<string, unknown>;
    raw = pickField(rec, ['chatId']) ?? pickField(rec, ['phone', 'phoneNumber', 'number', 'mobile']);
    if (raw === undefined) return 'no phone or chatId';
  } else return 'expected a phone number, a chat ID or a record';
  if (typeof raw === 'string' && raw.includes('@')) {
    return isChatId(raw.trim()) ? { chatId: raw.trim(), rec: { ...rec, chatId: raw.trim() } } : `'${raw}' is not a chat ID`;
  }
  const p = normalisePhone(raw);
  if (!p.ok) return p.reason;
  const chatId = personalChatId(p.digits);
  return { chatId, rec: { ...rec, chatId, phone: rec.phone ?? p.digits } };
}

function captionFor(ctx: ActionContext, template: string | undefined, item: Record<string, unknown>, index: number): string | undefined {
  if (template === undefined) return undefined;
  if (!hasTemplate(template)) return template;
  const scope: ExprScope = {
    inputs: { ...ctx.run.inputs },
    env: {},
    steps: {},
    item,
    index,
    run: { id: ctx.run.id, flow: ctx.run.flow, startedAt: 0 },
  };
  const v = evaluateTemplate(template, scope);
  return v === undefined || v === null ? '' : String(v);
}

const iso = (t: number | undefined) => (t === undefined ? undefined : new Date(t).toISOString());

export const filesBroadcast = defineAction({
  name: FILES_BROADCAST,
  description:
    'Sends one file (sendFileByUrl) to many chats through the send queue, exactly once per recipient even across crashes, within a start/stop window, with a caption per recipient; follows each message to delivered/read and writes a report.',
  input: FilesBroadcastInput,
  // The caption is a per-recipient template (`item` is each recipient), evaluated here.
  rawInputs: ['caption'],
  output: {
    description:
      'Summary { total, recipients, duplicates, invalid, sent, delivered, read, failed, notSent, reconciled, earlier, report }; per-recipient idMessage and status in the report file.',
  },
  async run(ctx, input): Promise<FilesBroadcastSummary> {
    const action = FILES_BROADCAST;
    const reportPath = input.report ?? defaultReport(ctx, 'csv');
    reportFormat(action, reportPath);
    const store: DurableState = input.campaign ? ctx.shared(`broadcast:${ctx.instanceName}:${input.campaign}`) : ctx.state;
    const rows = await loadRows(ctx, action, { file: input.file, items: input.recipients });

    // ---- recipients: normalise, de-duplicate, caption, validate ------------
    const reportRows: ReportRow[] = [];
    const recipients: Recipient[] = [];
    const seen = new Set<string>();
    let duplicates = 0;
    rows.forEach((row, index) => {
      const r = recipientOf(row);
      if (typeof r === 'string') return void reportRows.push({ where: row.where, outcome: 'invalid', error: r });
      if (seen.has(r.chatId)) return void duplicates++;
      seen.add(r.chatId);
      let caption: string | undefined;
      try {
        caption = captionFor(ctx, input.caption, r.rec, index);
        validateRequest('sendFileByUrl', {
          chatId: r.chatId,
          urlFile: input.urlFile,
          fileName: input.fileName,
          caption,
          typingTime: input.typingTime,
          typingType: input.typingType,
        });
      } catch (e) {
        const msg = e instanceof ValidationError ? e.details : (e as Error).message;
        if (e instanceof ValidationError && !['caption', 'chatId'].includes(e.field ?? 'caption'))
          throw new FlowError('ACTION_INPUT_INVALID', { action, field: e.field ?? 'with', reason: msg }, { cause: e });
        return void reportRows.push({ chatId: r.chatId, where: row.where, outcome: 'invalid', error: msg });
      }
      recipients.push({ chatId: r.chatId, where: row.where, row: r.rec, caption });
    });
    const invalid = reportRows.length;
    const total = recipients.length;

    // ---- load records; reconcile interrupted sends --------------------------
    const records = new Map<string, RecipientRecord>();
    for (const [, rec] of await store.entries<RecipientRecord>('r:')) records.set(rec.chatId, rec);
    const earlierRun = input.campaign ? new Set([...records.values()].filter((r) => r.phase === 'sent').map((r) => r.chatId)) : new Set<string>();
    const reconcileOpts = {
      fileName: input.fileName,
      sendIntervalMs: input.reconcile.sendInterval,
      graceMs: input.reconcile.grace,
      clockSkewMs: input.reconcile.clockSkew,
    };
    let reconciledCount = (await ctx.state.get<number>('reconciled')) ?? 0;
    const settle = async (open: RecipientRecord[]) => {
      const known = [...records.values()].filter((r) => r.idMessage);
      const { found, notSent } = await reconcile(ctx, store, open, known, reconcileOpts);
      for (const r of open) if (r.phase !== 'sent') records.delete(r.chatId);
      reconciledCount += found;
      await ctx.state.set('reconciled', reconciledCount);
      if (found + notSent > 0) ctx.logger.info(`${action}: reconciled ${found + notSent} interrupted send(s): ${found} had gone out, ${notSent} had not`);
    };
    const inTarget = (r: RecipientRecord) => seen.has(r.chatId);
    const interrupted = [...records.values()].filter((r) => r.phase === 'intent' && inTarget(r));
    if (interrupted.length > 0 && !ctx.run.dryRun) await settle(interrupted);

    const isDone = (chatId: string) => {
      const r = records.get(chatId);
      return r !== undefined && (r.phase === 'sent' || (r.phase === 'failed' && !r.retryable));
    };
    const counts = () => {
      const rs = recipients.map((x) => records.get(x.chatId));
      // The engine's convention: `done` counts successes only, `failed` the rest.
      return { done: rs.filter((r) => r?.phase === 'sent').length, failed: rs.filter((r) => r?.phase === 'failed').length };
    };
    const progress = () => {
      const c = counts();
      ctx.progress({ done: c.done, total, failed: c.failed });
    };
    progress();

    // ---- send ---------------------------------------------------------------
    let stoppedByWindow = false;
    let consecutiveFailures = 0;
    let sends = 0;
    if (!ctx.run.dryRun) {
      for (const rcp of recipients) {
        if (isDone(rcp.chatId)) continue;
        ctx.signal.throwIfAborted();
        const win = resolveWindow(input.window, ctx.clock.now());
        if (win.stopAt !== undefined && ctx.clock.now() >= win.stopAt) {
          stoppedByWindow = true;
          ctx.logger.warn(`${action}: send window closed at ${iso(win.stopAt)}; the remaining recipients are not sent`);
          break;
        }
        if (win.startAt !== undefined && ctx.clock.now() < win.startAt) {
          await ctx.wait({ until: win.startAt, reason: `${action}: waiting for the send window to open at ${iso(win.startAt)}`, key: `window-${win.startAt}` });
          if (win.stopAt !== undefined && ctx.clock.now() >= win.stopAt) {
            stoppedByWindow = true;
            break;
          }
        }
        if (sends > 0) await pause(ctx.clock, input.pace, ctx.signal);
        const rec: RecipientRecord = { chatId: rcp.chatId, where: rcp.where, caption: rcp.caption, phase: 'intent', attemptKey: randomUUID(), intentAt: ctx.clock.now() };
        await store.set(`r:${rec.chatId}`, rec);
        records.set(rec.chatId, rec);
        sends++;
        try {
          const body = { chatId: rcp.chatId, urlFile: input.urlFile, fileName: input.fileName, caption: rcp.caption, typingTime: input.typingTime, typingType: input.typingType };
          let res: { idMessage: string } | undefined;
          for (let attempt = 1; res === undefined; attempt++) {
            try {
              res = await ctx.client.sendFileByUrl(body, { signal: ctx.signal });
            } catch (e) {
              // 429: certainly not accepted, so waiting and sending again cannot duplicate.
              if (!(e instanceof RateLimitError) || attempt >= 3 || ctx.signal.aborted) throw e;
              await ctx.clock.sleep(Math.max(e.retryAfterMs, 1000), ctx.signal);
            }
          }
          Object.assign(rec, { phase: 'sent', idMessage: res.idMessage, sentAt: ctx.clock.now(), status: 'sent' });
          await store.set(`r:${rec.chatId}`, rec);
          consecutiveFailures = 0;
        } catch (e) {
          if (ctx.signal.aborted) throw ctx.signal.reason ?? e;
          const refused =
            (e instanceof NetworkError && !e.mayHaveReachedServer) || e instanceof RateLimitError || (e instanceof ApiError && e.status < 500) || e instanceof ValidationError;
          if (!refused) {
            // The request may have been accepted: look before sending again.
            await settle([rec]);
            if (records.get(rec.chatId)?.phase === 'sent') continue;
          }
          const retryable = !(e instanceof ApiError && e.status < 500 && !(e instanceof RateLimitError)) && !(e instanceof ValidationError);
          Object.assign(rec, { phase: 'failed', error: isMsgflowError(e) ? e.message : String(e), retryable: retryable || undefined });
          await store.set(`r:${rec.chatId}`, rec);
          records.set(rec.chatId, rec);
          if (retryable) consecutiveFailures++;
          if (consecutiveFailures >= input.maxConsecutiveFailures) {
            throw new FlowError('JOB_STOPPED', { action, reason: `${consecutiveFailures} sends in a row failed (last: ${rec.error}); recipients already sent keep their record and are not sent again` });
          }
        }
        progress();
      }
    }

    // ---- follow statuses ----------------------------------------------------
    const mine = recipients.map((r) => records.get(r.chatId)).filter((r): r is RecipientRecord => r?.phase === 'sent');
    if (!ctx.run.dryRun && input.follow.deadline > 0 && mine.length > 0) {
      let followUntil = await ctx.state.get<number>('followUntil');
      if (followUntil === undefined) {
        followUntil = ctx.clock.now() + input.follow.deadline;
        await ctx.state.set('followUntil', followUntil);
      }
      // The queue releases one message per interval: ours have all left it by
      // the last send + one interval each + grace, or they were never sent.
      const lastSent = Math.max(...mine.map((r) => r.sentAt ?? 0));
      const giveUpUnobservedAt = lastSent + input.reconcile.sendInterval * mine.length + input.reconcile.grace;
      await followStatuses(ctx, store, mine, {
        until: input.follow.until,
        deadline: followUntil,
        pollMs: input.follow.poll,
        giveUpUnobservedAt,
        onChange: () => undefined,
      });
    }

    // ---- report -------------------------------------------------------------
    for (const rcp of recipients) {
      const r = records.get(rcp.chatId);
      if (!r || r.phase === 'intent') {
        reportRows.push({ chatId: rcp.chatId, where: rcp.where, outcome: ctx.run.dryRun ? 'wouldSend' : 'notSent', caption: rcp.caption, error: stoppedByWindow ? 'send window closed' : undefined });
        continue;
      }
      reportRows.push({
        chatId: r.chatId,
        where: rcp.where,
        outcome: r.phase === 'sent' ? (earlierRun.has(r.chatId) ? 'sentEarlier' : 'sent') : 'failed',
        idMessage: r.idMessage,
        status: r.status,
        sentAt: iso(r.sentAt),
        deliveredAt: iso(r.deliveredAt),
        readAt: iso(r.readAt),
        reconciled: r.reconciled,
        caption: rcp.caption,
        error: r.error,
      });
    }
    const sentRows = reportRows.filter((r) => r.outcome === 'sent' || r.outcome === 'sentEarlier');
    const summary: FilesBroadcastSummary = {
      total: rows.length,
      recipients: total,
      duplicates,
      invalid,
      sent: sentRows.length,
      delivered: sentRows.filter((r) => r.status === 'delivered' || r.status === 'read').length,
      read: sentRows.filter((r) => r.status === 'read').length,
      failed: reportRows.filter((r) => r.outcome === 'failed').length,
      notSent: reportRows.filter((r) => r.outcome === 'notSent' || r.outcome === 'wouldSend').length,
      reconciled: reconciledCount,
      earlier: reportRows.filter((r) => r.outcome === 'sentEarlier').length,
      report: reportPath,
    };
    await writeReport(ctx.resolvePath(reportPath), {
      action,
      runId: ctx.run.id,
      generatedAt: ctx.clock.now(),
      summary: { ...summary },
      rows: reportRows as unknown as Record<string, unknown>[],
    });
    ctx.logger.info(
      `${action}: ${summary.sent} sent (${summary.delivered} delivered, ${summary.read} read), ${summary.failed} failed, ${summary.notSent} not sent, ${summary.invalid} invalid; report ${reportPath}`,
    );
    return summary;
  },
});
