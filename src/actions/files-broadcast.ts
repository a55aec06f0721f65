/**
 * `files.broadcast`: one file to many chats through the instance's send
 * queue, exactly once per recipient.
 *
 * Before each sendFileByUrl the intent is recorded durably (one key per
 * recipient); the idMessage is recorded after. A recipient found with an
 * intent but no idMessage (the process died, or the answer was lost) is
 * reconciled from the send queue and its chat's history before anything
 * else: found, it is sent; in neither once the journal lag has passed, it
 * never reached the service and is sent again, once, with the reason in the
 * report's `resent` column; undecidable, it is `unknown` and never sent again
 * (see broadcast-records.ts). A closed send window waits durably for the next
 * opening.
 *
 * Like the other jobs it streams its input (readRows, engine/flow/data-file.ts) and holds no list of
 * recipients: a first pass counts the rows and gathers the interrupted sends,
 * a second sends, a last one writes the report from each recipient's durable
 * record. Only the records this run sent are held, to follow their statuses.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { ValidationError } from '../api/errors.js';
import { classify, mayHaveBeenProcessed } from '../api/failure.js';
import { isChatId, personalChatId } from '../api/chat-id.js';
import { TYPING_TYPES } from '../api/schemas.js';
import { validateRequest } from '../api/validate.js';
import { FlowError } from '../api/errors.js';
import { defineAction, type ActionContext, type DurableState, type StartWait } from '../engine/action.js';
import { broadcastCampaignNs } from '../engine/shared.js';
import { hasTemplate } from '../engine/expr/template.js';
import { duration } from './duration.js';
import { normalisePhone } from './phone.js';
import { PaceSchema, pause } from './pace.js';
import { nextOpening, WindowSchema } from './window.js';
import { zoneOf } from '../util/clock.js';
import { applyStatus, followStatuses, reconcile, type RecipientRecord } from './broadcast-records.js';
import { followNotified, notificationsOn } from './broadcast-notified.js';
import { optOutKey, optOutList } from './opt-out.js';
// The job kit, by concern: with: fields, rows in, report out, progress and failures.
import { fileField, itemsField, maxConsecutiveFailuresField, reportField } from './kit/inputs.js';
import { pickField, readRows, type SourcedRow } from '../engine/flow/data-file.js';
import { defaultReport, openReport, reportFormat } from './kit/report.js';
import { FailureGuard } from './kit/guard.js';
import { JobCounters } from './kit/counters.js';

export const FILES_BROADCAST = 'files.broadcast';

export const FilesBroadcastInput = z
  .strictObject({
    file: fileField('recipients'),
    recipients: itemsField('recipients: phone numbers, chat IDs, or records with phone or chatId plus any fields the caption uses'),
    urlFile: z.string().describe('Link to the file (http:// or https://), fetched by the service.'),
    fileName: z.string().describe('File name with extension; the extension decides the file type.'),
    caption: z
      .string()
      .optional()
      .describe(
        'Caption template, evaluated per recipient: `${{ item.<field> }}` reads the recipient record. At most 1024 characters after evaluation.',
      ),
    typingTime: z.number().int().optional().describe('Typing notification before sending, ms (1000 to 20000).'),
    typingType: z.enum(TYPING_TYPES).optional().describe('Activity shown to the recipient. @default text (service default)'),
    window: WindowSchema.optional(),
    follow: z
      .strictObject({
        deadline: duration(
          'Follow statuses at least this long after the last send (longer while messages of ours are still queued); 0: do not follow. @default 10m',
        ).default(600_000),
        poll: duration('Time between two status polls. @default 15s').default(15_000),
        until: z
          .enum(['delivered', 'read'])
          .default('read')
          .describe('Stop following a message once it reached this status. @default read'),
      })
      .default({ deadline: 600_000, poll: 15_000, until: 'read' })
      .describe('Status following after sending: { deadline, poll, until }.'),
    reconcile: z
      .strictObject({
        sendInterval: duration("The instance's send-queue interval (the local service's sendIntervalMs). @default 3s").default(3000),
        grace: duration(
          'Extra time a queued message may take to show up in the journals (the service documents up to 2 minutes before a sent message appears). @default 2m',
        ).default(120_000),
        clockSkew: duration("Tolerated difference between msgflow's clock and the service's timestamps. @default 10s").default(10_000),
        journalLag: duration(
          'How long a message the service sent may take to appear in the chat history (the service documents up to 2 minutes). An interrupted send found in neither the send queue nor the history this long after is sent again, once. @default 2m',
        ).default(120_000),
      })
      .default({ sendInterval: 3000, grace: 120_000, clockSkew: 10_000, journalLag: 120_000 })
      .describe('How long an interrupted or unseen send is looked for: { sendInterval, grace, clockSkew, journalLag }.'),
    pace: PaceSchema.default({ delay: 0, jitter: 0 }),
    campaign: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,100}$/, { error: 'letters, digits, _ . - only' })
      .optional()
      .describe(
        'Keep per-recipient records across runs under this name: a later run sends only to recipients not sent yet (e.g. the rest after a window closed).',
      ),
    maxConsecutiveFailures: maxConsecutiveFailuresField('sends'),
    report: reportField(),
  })
  .refine((v) => v.file !== undefined || v.recipients !== undefined, { error: 'give file or recipients' })
  .describe('Sends one file to many chats through the send queue, exactly once per recipient, and follows the statuses.');

export type FilesBroadcastInput = z.output<typeof FilesBroadcastInput>;

export interface FilesBroadcastSummary {
  total: number;
  recipients: number;
  duplicates: number;
  invalid: number;
  /** Accepted and seen sent by the service (includes delivered and read), this run or an earlier one. */
  sent: number;
  delivered: number;
  read: number;
  failed: number;
  /** The send may have reached the service but its message was not seen: never sent again. */
  unknown: number;
  /** Not attempted: an absolute window is over. */
  notSent: number;
  /** Not sent: the chat is on the instance's opt-out list (optOut.add). */
  optedOut: number;
  /** Dry run: recipients that would be sent to. */
  wouldSend?: number;
  /** Sends found by reconciliation after an interruption (not sent again). */
  reconciled: number;
  /** Recipients sent again because an interrupted send never reached the service (report column `resent` says why). */
  resent: number;
  /** Sent by an earlier run of the same campaign. */
  earlier: number;
  report: string;
}

export const BROADCAST_REPORT_COLUMNS = [
  'chatId',
  'where',
  'outcome',
  'idMessage',
  'status',
  'sentAt',
  'deliveredAt',
  'readAt',
  'reconciled',
  'resent',
  'caption',
  'error',
] as const;

/**
 * A row of the input as a pass meets it: a recipient (with its durable
 * record), a row that is not one (invalid, opted out), or a duplicate of an
 * earlier recipient. Every pass streams the input again: no list of
 * recipients is held; what a recipient has become lives in its record.
 */
type Met =
  | { kind: 'recipient'; chatId: string; where: string; caption?: string; rec?: RecipientRecord }
  | { kind: 'invalid'; chatId?: string; where: string; error: string }
  | { kind: 'optedOut'; chatId: string; where: string; caption?: string }
  | { kind: 'duplicate' };

interface Job {
  reportPath: string;
  store: DurableState;
  counters: JobCounters;
  guard: FailureGuard;
  /** idMessages of our records, so reconciliation never claims one twice. */
  claimed: Set<string>;
  /** Our records accepted but not seen sent yet: the send queue ahead of a lost send. */
  unobserved: RecipientRecord[];
  /** Records this run sent (or found sent after its interruption): the ones it follows. */
  mine: RecipientRecord[];
  reconciled: number;
  windowOver: boolean;
}

const iso = (t: number | undefined) => (t === undefined ? undefined : new Date(t).toISOString());

// ---- load ---------------------------------------------------------------------

function recipientOf(row: SourcedRow): { chatId: string; rec: Record<string, unknown> } | string {
  const { value } = row;
  let raw: unknown;
  let rec: Record<string, unknown> = {};
  if (typeof value === 'string' || typeof value === 'number') raw = value;
  else if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
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
  // `item` is the recipient's row, not a forEach item; the rest is the run's scope.
  const v = ctx.render(template, { item, index });
  return v === undefined || v === null ? '' : String(v);
}

/** The recipient's caption, or why the row is invalid; a bad urlFile/fileName/typing stops the job (not a row's fault). */
function checkRecipient(
  ctx: ActionContext,
  input: FilesBroadcastInput,
  chatId: string,
  rec: Record<string, unknown>,
  index: number,
): { caption?: string } | string {
  try {
    const caption = captionFor(ctx, input.caption, rec, index);
    validateRequest('sendFileByUrl', {
      chatId,
      urlFile: input.urlFile,
      fileName: input.fileName,
      caption,
      typingTime: input.typingTime,
      typingType: input.typingType,
    });
    return { caption };
  } catch (e) {
    const msg = e instanceof ValidationError ? e.details : (e as Error).message;
    if (e instanceof ValidationError && !['caption', 'chatId'].includes(e.field ?? 'caption'))
      throw new FlowError('ACTION_INPUT_INVALID', { action: FILES_BROADCAST, field: e.field ?? 'with', reason: msg }, { cause: e });
    return msg;
  }
}

/** Streams the input as recipients, invalid, opted-out and duplicate rows (the first valid row of a chat wins). */
async function* meet(ctx: ActionContext, input: FilesBroadcastInput, store: DurableState): AsyncGenerator<Met> {
  const seen = new Set<string>();
  const optedOut = optOutList(ctx);
  for await (const row of readRows(ctx, FILES_BROADCAST, { file: input.file, items: input.recipients })) {
    const r = recipientOf(row);
    if (typeof r !== 'string' && seen.has(r.chatId)) {
      yield { kind: 'duplicate' };
      continue;
    }
    const checked = typeof r === 'string' ? r : checkRecipient(ctx, input, r.chatId, r.rec, row.index);
    if (typeof r === 'string' || typeof checked === 'string') {
      yield { kind: 'invalid', chatId: typeof r === 'string' ? undefined : r.chatId, where: row.where, error: checked as string };
      continue;
    }
    seen.add(r.chatId);
    // One key per recipient: the cost does not depend on how many records the campaign holds.
    const rec = await store.get<RecipientRecord>(`r:${r.chatId}`);
    // Opted out: never sent again (a message that already went out keeps its own outcome).
    if (!settled(rec) && (await optedOut.get(optOutKey(ctx.instance.identity, r.chatId))) !== undefined) {
      yield { kind: 'optedOut', chatId: r.chatId, where: row.where, caption: checked.caption };
      continue;
    }
    yield { kind: 'recipient', chatId: r.chatId, where: row.where, caption: checked.caption, rec };
  }
}

/** The first pass: counts the rows, and gathers the records a send or reconciliation needs (interrupted, unseen, ours). */
async function load(ctx: ActionContext, input: FilesBroadcastInput): Promise<{ job: Job; interrupted: RecipientRecord[] }> {
  const reportPath = input.report ?? defaultReport(ctx, 'csv');
  reportFormat(FILES_BROADCAST, reportPath);
  const store = input.campaign ? ctx.shared(broadcastCampaignNs(ctx.instance.identity, input.campaign)) : ctx.state;
  const job: Job = {
    reportPath,
    store,
    counters: new JobCounters(ctx, 1),
    guard: new FailureGuard(FILES_BROADCAST, ctx.instance.name, input.maxConsecutiveFailures),
    claimed: new Set(),
    unobserved: [],
    mine: [],
    reconciled: (await ctx.state.get<number>('reconciled')) ?? 0,
    windowOver: false,
  };
  const interrupted: RecipientRecord[] = [];
  const c = job.counters;
  let total = 0;
  for await (const m of meet(ctx, input, store)) {
    total++;
    if (m.kind === 'duplicate') c.duplicate++;
    else if (m.kind === 'invalid') c.invalid++;
    else if (m.kind === 'optedOut') c.skipped++;
    else if (m.rec) {
      const rec = m.rec;
      if (rec.idMessage) job.claimed.add(rec.idMessage);
      if (rec.phase === 'intent') interrupted.push(rec);
      else count(job, rec, ctx.run.id);
    }
  }
  c.total = total;
  // The first count, with the number of rows: the step's start line says it (countsRecords).
  c.flush();
  return { job, interrupted };
}

/** Counts a record as it stands, and keeps it where reconciliation and following look. */
function count(job: Job, rec: RecipientRecord, runId: string): void {
  const c = counterOf(rec.phase);
  if (c) job.counters[c]++;
  if (rec.phase !== 'sent') return;
  if (!rec.observed) job.unobserved.push(rec);
  if (rec.runId === runId) job.mine.push(rec);
}

/** A record this run has just sent (or found sent): followed after the last send. */
function track(job: Job, rec: RecipientRecord): void {
  if (!rec.observed) job.unobserved.push(rec);
  job.mine.push(rec);
}

// ---- reconcile ------------------------------------------------------------------

/**
 * Ours accepted but not seen sent yet (they are ahead of anything sent after
 * them), after looking them up in the service's outgoing messages.
 */
const queuedAhead = (ctx: ActionContext, job: Job) => async (): Promise<number> => {
  const unseen = job.unobserved.filter((r) => r.phase === 'sent' && !r.observed);
  if (unseen.length === 0) return 0;
  const now = ctx.clock.now();
  const since = Math.min(...unseen.map((r) => r.sentAt ?? now)) - 60_000;
  const msgs = await ctx.client
    .lastOutgoingMessages({ minutes: Math.max(1, Math.ceil((now - since) / 60_000) + 1) }, { signal: ctx.signal })
    .catch(() => []);
  const byId = new Map(msgs.map((m) => [m.idMessage, m]));
  let left = 0;
  for (const r of unseen) {
    const m = byId.get(r.idMessage!);
    if (m && applyStatus(r, m, now)) await job.store.set(`r:${r.chatId}`, r);
    // Listed `pending`: still in the service's queue, ahead of what follows.
    if (!m || m.statusMessage === 'pending') left++;
  }
  return left;
};

async function settle(ctx: ActionContext, input: FilesBroadcastInput, job: Job, open: RecipientRecord[]): Promise<void> {
  const opts = {
    fileName: input.fileName,
    sendIntervalMs: input.reconcile.sendInterval,
    graceMs: input.reconcile.grace,
    clockSkewMs: input.reconcile.clockSkew,
    journalLagMs: input.reconcile.journalLag,
  };
  const { found, unknown, resend } = await reconcile(ctx, job.store, open, job.claimed, queuedAhead(ctx, job), opts);
  job.reconciled += found;
  await ctx.state.set('reconciled', job.reconciled);
  if (found + unknown + resend > 0)
    ctx.logger.info(
      `${FILES_BROADCAST}: reconciled ${found + unknown + resend} interrupted send(s): ${found} had gone out, ${resend} never reached the service (sent again), ${unknown} unknown (not sent again)`,
    );
}

// ---- execute ----------------------------------------------------------------------

/** Waits durably until the window is open; false when an absolute window is over for good. */
async function windowOpen(ctx: ActionContext, input: FilesBroadcastInput, job: Job): Promise<boolean> {
  for (;;) {
    const now = ctx.clock.now();
    const next = nextOpening(input.window, now, zoneOf(ctx.clock));
    if (!next) return false;
    if (next.at <= now) return true;
    await job.counters.waitingFor(() =>
      ctx.wait({ until: next.at, reason: `send window opens at ${iso(next.at)}`, key: `window-${next.at}` }),
    );
  }
}

/** A `window:` as written that is closed at `now`: until when (see ActionDefinition.firstWait); undefined when open, absent or a template. */
function windowWait(written: unknown, now: number, zone: string): StartWait | undefined {
  const parsed = WindowSchema.optional().safeParse(written);
  if (!parsed.success || !parsed.data) return undefined;
  const w = parsed.data;
  const shown = `send window ${w.start ?? '…'}–${w.stop ?? '…'}${w.timezone ? ` (${w.timezone})` : ''}`;
  const next = nextOpening(w, now, zone);
  if (!next) return { reason: `${shown} is over: nothing will be sent` };
  return next.at > now ? { until: next.at, reason: `${shown} is closed` } : undefined;
}

type Recipient = Extract<Met, { kind: 'recipient' }>;

async function sendOne(ctx: ActionContext, input: FilesBroadcastInput, job: Job, rcp: Recipient): Promise<void> {
  const rec: RecipientRecord = {
    chatId: rcp.chatId,
    where: rcp.where,
    caption: rcp.caption,
    phase: 'intent',
    runId: ctx.run.id,
    attemptKey: randomUUID(),
    intentAt: ctx.clock.now(),
    // A send again after an interrupted one that never reached the service keeps why (and is never sent a third time).
    ...(rcp.rec?.resent ? { resent: rcp.rec.resent } : {}),
  };
  await job.store.set(`r:${rec.chatId}`, rec);
  rcp.rec = rec;
  try {
    const body = {
      chatId: rcp.chatId,
      urlFile: input.urlFile,
      fileName: input.fileName,
      caption: rcp.caption,
      typingTime: input.typingTime,
      typingType: input.typingType,
    };
    const res = await ctx.client.sendFileByUrl(body, { signal: ctx.signal });
    Object.assign(rec, { phase: 'sent', idMessage: res.idMessage, sentAt: ctx.clock.now(), status: 'sent' });
    job.claimed.add(res.idMessage);
    track(job, rec);
    await job.store.set(`r:${rec.chatId}`, rec);
    job.guard.ok();
  } catch (e) {
    if (ctx.signal.aborted) throw ctx.signal.reason ?? e;
    // Only a lost answer (reset, timeout) or a 5xx may hide an accepted send: look before anything else.
    if (mayHaveBeenProcessed(e)) await settle(ctx, input, job, [rec]);
    if (rec.phase === 'sent') {
      track(job, rec);
      job.guard.ok();
      return;
    }
    if (rec.phase === 'intent') {
      // Refused (never accepted): sending again later cannot duplicate, unless the answer was definite.
      const retryable = classify(e) !== 'definite';
      Object.assign(rec, { phase: 'failed', error: e instanceof Error ? e.message : String(e), retryable: retryable || undefined });
      await job.store.set(`r:${rec.chatId}`, rec);
    }
    job.guard.fail(e, `${job.counters.done} recipients are sent and keep their record; run again once fixed (nobody is sent twice)`);
  }
}

/** Done: sent, unknown, or a definite failure; a refused send (retryable) is tried again by a later run, one to send again by this one. */
const settled = (r: RecipientRecord | undefined) =>
  r !== undefined && r.phase !== 'intent' && r.phase !== 'resend' && !(r.phase === 'failed' && r.retryable);

/** The second pass: sends to each recipient not settled yet, in the input's order. */
async function sendAll(ctx: ActionContext, input: FilesBroadcastInput, job: Job): Promise<void> {
  let sends = 0;
  for await (const rcp of meet(ctx, input, job.store)) {
    if (rcp.kind !== 'recipient' || settled(rcp.rec)) continue;
    ctx.signal.throwIfAborted();
    if (!(await windowOpen(ctx, input, job))) {
      job.windowOver = true;
      ctx.logger.warn(`${FILES_BROADCAST}: the send window is over; the remaining recipients are not sent`);
      return;
    }
    if (sends++ > 0) await pause(ctx.clock, input.pace, ctx.signal);
    const before = rcp.rec?.phase;
    try {
      await sendOne(ctx, input, job, rcp);
    } finally {
      countChange(job, before, rcp.rec?.phase);
    }
  }
}

const counterOf = (phase: string | undefined) =>
  phase === 'sent' ? 'done' : phase === 'failed' || phase === 'unknown' ? 'failed' : undefined;

/** Moves one recipient between counters (a retried failure leaves `failed`). */
function countChange(job: Job, before: string | undefined, after: string | undefined): void {
  const from = counterOf(before);
  const to = counterOf(after);
  if (from) job.counters[from]--;
  if (to) job.counters[to]++;
  job.counters.flush();
}

async function follow(ctx: ActionContext, input: FilesBroadcastInput, job: Job): Promise<void> {
  const mine = job.mine.filter((r) => r.phase === 'sent');
  if (input.follow.deadline <= 0 || mine.length === 0) return;
  let followUntil = await ctx.state.get<number>('followUntil');
  if (followUntil === undefined) {
    followUntil = ctx.clock.now() + input.follow.deadline;
    await ctx.state.set('followUntil', followUntil);
  }
  if (await notificationsOn(ctx, Math.min(...mine.map((r) => r.intentAt)))) {
    const onFailed = () => countChange(job, 'sent', 'failed');
    return followNotified(ctx, job.store, mine, { until: input.follow.until, deadline: followUntil, pollMs: input.follow.poll, onFailed });
  }
  await followStatuses(ctx, job.store, mine, {
    until: input.follow.until,
    deadline: followUntil,
    pollMs: input.follow.poll,
    sendIntervalMs: input.reconcile.sendInterval,
    graceMs: input.reconcile.grace,
    onFailed: () => countChange(job, 'sent', 'failed'),
  });
}

// ---- report -------------------------------------------------------------------------

function outcomeOf(ctx: ActionContext, r: RecipientRecord | undefined, windowOver: boolean): string {
  if (ctx.run.dryRun && !settled(r)) return 'wouldSend';
  if (!r || r.phase === 'intent' || r.phase === 'resend' || (r.phase === 'failed' && r.retryable && windowOver)) return 'notSent';
  if (r.phase === 'sent') return r.runId !== undefined && r.runId !== ctx.run.id ? 'sentEarlier' : 'sent';
  return r.phase;
}

/** The report line of a recipient, from its record; `outcome` counted in `n`. */
function recipientLine(ctx: ActionContext, job: Job, rcp: Recipient, n: Record<string, number>): Record<string, unknown> {
  const r = rcp.rec;
  const outcome = outcomeOf(ctx, r, job.windowOver);
  n[outcome] = (n[outcome] ?? 0) + 1;
  if (outcome === 'sent' || outcome === 'sentEarlier') {
    if (r!.status === 'delivered' || r!.status === 'read') n.delivered = (n.delivered ?? 0) + 1;
    if (r!.status === 'read') n.read = (n.read ?? 0) + 1;
  }
  if (r?.resent !== undefined) n.resent = (n.resent ?? 0) + 1;
  const error = outcome === 'notSent' ? (job.windowOver ? 'send window closed' : 'not attempted: the job stopped') : r?.error;
  return {
    chatId: rcp.chatId,
    where: rcp.where,
    outcome,
    idMessage: r?.idMessage,
    status: r?.status,
    sentAt: iso(r?.sentAt),
    deliveredAt: iso(r?.deliveredAt),
    readAt: iso(r?.readAt),
    reconciled: r?.reconciled,
    resent: r?.resent,
    // The caption an attempt sent, as its record keeps it (a template is evaluated again by each pass).
    caption: r?.caption ?? rcp.caption,
    error,
  };
}

/**
 * The last pass: one report line per row (a duplicate has none), from the
 * recipients' records: the recipients in the input's order, then the opted-out
 * rows, then the invalid ones (only those lines wait for the end of the pass).
 */
async function report(ctx: ActionContext, input: FilesBroadcastInput, job: Job): Promise<FilesBroadcastSummary> {
  const writer = await openReport({
    action: FILES_BROADCAST,
    runId: ctx.run.id,
    path: ctx.resolvePath(job.reportPath),
    columns: BROADCAST_REPORT_COLUMNS,
  });
  const n: Record<string, number> = {};
  const optedOut: Record<string, unknown>[] = [];
  const invalid: Record<string, unknown>[] = [];
  try {
    for await (const m of meet(ctx, input, job.store)) {
      n[m.kind] = (n[m.kind] ?? 0) + 1;
      if (m.kind === 'recipient') await writer.write(recipientLine(ctx, job, m, n));
      else if (m.kind === 'invalid') invalid.push({ chatId: m.chatId, where: m.where, outcome: 'invalid', error: m.error });
      else if (m.kind === 'optedOut') optedOut.push({ chatId: m.chatId, where: m.where, outcome: 'optedOut', caption: m.caption });
    }
    for (const line of [...optedOut, ...invalid]) await writer.write(line);
  } catch (e) {
    await writer.abort();
    throw e;
  }
  const summary = summarise(ctx, job, n);
  await writer.close({ ...summary });
  Object.assign(job.counters, {
    done: summary.sent,
    failed: summary.failed + summary.unknown,
    invalid: summary.invalid,
    duplicate: summary.duplicates,
    skipped: summary.optedOut + summary.notSent + (summary.wouldSend ?? 0),
  });
  job.counters.flush();
  ctx.logger.info(
    `${FILES_BROADCAST}: ${summary.sent} sent (${summary.delivered} delivered, ${summary.read} read), ${summary.failed} failed, ${summary.unknown} unknown, ${summary.notSent} not sent, ${summary.optedOut} opted out, ${summary.invalid} invalid; report ${job.reportPath}`,
  );
  return summary;
}

function summarise(ctx: ActionContext, job: Job, n: Record<string, number>): FilesBroadcastSummary {
  const of = (k: string) => n[k] ?? 0;
  return {
    total: of('recipient') + of('invalid') + of('optedOut') + of('duplicate'),
    recipients: of('recipient'),
    duplicates: of('duplicate'),
    invalid: of('invalid'),
    sent: of('sent') + of('sentEarlier'),
    delivered: of('delivered'),
    read: of('read'),
    failed: of('failed'),
    unknown: of('unknown'),
    notSent: of('notSent'),
    optedOut: of('optedOut'),
    ...(ctx.run.dryRun ? { wouldSend: of('wouldSend') } : {}),
    reconciled: job.reconciled,
    resent: of('resent'),
    earlier: of('sentEarlier'),
    report: job.reportPath,
  };
}

export const filesBroadcast = defineAction({
  name: FILES_BROADCAST,
  description:
    'Sends one file (sendFileByUrl) to many chats through the send queue, exactly once per recipient even across crashes, within a start/stop window (waiting durably for it to open), with a caption per recipient; follows each message to delivered/read and writes a report.',
  input: FilesBroadcastInput,
  // The caption is a per-recipient template (`item` is each recipient), evaluated here.
  rawInputs: ['caption'],
  dryRun: true,
  countsRecords: true,
  writes: true,
  output: {
    description:
      'Summary { total, recipients, duplicates, invalid, sent, delivered, read, failed, unknown, notSent, optedOut, reconciled, resent, earlier, report } (+ wouldSend on a dry run); per-recipient idMessage and status in the report file.',
  },
  firstWait: (withBlock, now, zone) => windowWait(withBlock.window, now, zone),
  async run(ctx, input): Promise<FilesBroadcastSummary> {
    const { job, interrupted } = await load(ctx, input);
    if (!ctx.run.dryRun) {
      try {
        if (interrupted.length > 0) await settle(ctx, input, job, interrupted);
        for (const rec of interrupted) count(job, rec, ctx.run.id);
        job.counters.flush();
        await sendAll(ctx, input, job);
        await follow(ctx, input, job);
      } catch (e) {
        // A stopped job (JOB_STOPPED) still reports who got the file; a cancel or shutdown does not.
        if (!ctx.signal.aborted) await report(ctx, input, job).catch(() => undefined);
        throw e;
      }
    }
    return report(ctx, input, job);
  },
});
