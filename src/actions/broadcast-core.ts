/**
 * The broadcast job shared by `messages.broadcast` and its `files.broadcast`
 * preset: one message per recipient through the instance's send queue,
 * exactly once per recipient. What is sent (the method, the request, what
 * reconciliation looks for) comes from the job's {@link BroadcastSpec}; the
 * rest (durable records, reconciliation, windows, following, the report) is
 * here, once.
 *
 * Before each send the intent is recorded durably (one key per recipient);
 * the idMessage is recorded after. A recipient found with an intent but no
 * idMessage (the process died, or the answer was lost) is reconciled from the
 * send queue and its chat's history before anything else: found, it is sent;
 * in neither once the journal lag has passed, it never reached the service
 * and is sent again, once, with the reason in the report's `resent` column;
 * undecidable, it is `unknown` and never sent again (see broadcast-records.ts).
 * A closed send window waits durably for the next opening; a recipient
 * outside its own hours (recipient-time.ts) waits for its next opening while
 * the others are sent.
 *
 * Like the other jobs it streams its input (readRows, engine/flow/data-file.ts) and holds no list of
 * recipients: a first pass counts the rows and gathers the interrupted sends,
 * the next ones send, a last one writes the report from each recipient's durable
 * record. Only the records this run sent are held, to follow their statuses.
 */
import { isAbsolute, relative } from 'node:path';
import { z } from 'zod';
import { classify, mayHaveBeenProcessed } from '../api/failure.js';
import { isChatId, personalChatId } from '../api/chat-id.js';
import type { ActionContext, DurableState, StartWait } from '../engine/action.js';
import { BROADCAST_PLANS_NS, broadcastCampaignNs } from '../engine/shared.js';
import { duration } from './duration.js';
import { normalisePhone } from './phone.js';
import { PaceSchema, pause, type Pace } from './pace.js';
import { nextOpening, WindowSchema, type SendWindow } from './window.js';
import { zoneOf } from '../util/clock.js';
import { withFields } from '../util/with-fields.js';
import { applyStatus, followStatuses, reconcile, type RecipientRecord } from './broadcast-records.js';
import { followNotified, notificationsOn } from './broadcast-notified.js';
import { optOutKey, optOutList } from './opt-out.js';
import { recipientOpening, type RecipientTime } from './recipient-time.js';
import { pickOrder, Senders, type Guard, type Pool, type Sender } from './broadcast-pool.js';
import { readAhead } from '../util/read-ahead.js';
import { Funnel, type FunnelCounts } from './broadcast-funnel.js';
import { sendingAlone } from './broadcast-claim.js';
import { UnobservedSends } from './broadcast-unobserved.js';
import type { PauseRecord } from '../engine/run/pauses.js';
// The job kit, by concern: with: fields, rows in, report out, progress and failures.
import { maxConsecutiveFailuresField, reportField } from './kit/inputs.js';
import { pickField, readRows, type SourcedRow } from '../engine/flow/data-file.js';
import { defaultReport, openReport, reportFormat } from './kit/report.js';
import { FailureGuard } from './kit/guard.js';
import { MsgflowError, FlowError } from '../api/errors.js';
import {
  changedSince,
  fileHash,
  hashOf,
  loadPlan,
  openPlanDiff,
  OptOutHash,
  planDiffPath,
  type AppliedPlan,
  type PlanDiffCounts,
  type PlanFingerprint,
  type PlanSummary,
  type ReportedLine,
} from './broadcast-plan.js';
import { writePlan, type PlanRow } from './broadcast-planner.js';
import { JobCounters } from './kit/counters.js';

/** The `with:` fields of every broadcast after what it sends (the same for messages.broadcast and files.broadcast). */
export const broadcastFields = {
  window: WindowSchema.optional(),
  follow: z
    .strictObject({
      deadline: duration(
        'Follow statuses at least this long after the last send (longer while messages of ours are still queued); 0: do not follow. @default 10m',
      ).default(600_000),
      poll: duration('Time between two status polls. @default 15s').default(15_000),
      until: z.enum(['delivered', 'read']).default('read').describe('Stop following a message once it reached this status. @default read'),
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
};

/** What the shared part of a broadcast reads of its input. */
export interface BroadcastInput {
  file?: string;
  recipients?: unknown[];
  window?: SendWindow;
  follow: { deadline: number; poll: number; until: 'delivered' | 'read' };
  reconcile: { sendInterval: number; grace: number; clockSkew: number; journalLag: number };
  pace: Pace;
  campaign?: string;
  maxConsecutiveFailures: number;
  report?: string;
  recipientTime?: RecipientTime;
  pool?: Pool;
  guard?: Guard;
}

/** The sending methods a broadcast calls (each answers an idMessage). */
export type BroadcastMethod = 'sendMessage' | 'sendFileByUrl' | 'sendPoll' | 'sendLocation' | 'sendContact' | 'sendInteractiveButtons';

/** What one recipient is sent. */
export interface Prepared {
  method: BroadcastMethod;
  /** The request without chatId. */
  body: Record<string, unknown>;
  /** What reconciliation looks for (client/send-lookup.ts contentKey of the request). */
  content: string;
  /** What the report shows of it: a caption, a text, a poll's question. */
  caption?: string;
  /** The A/B variant, when the job has several. */
  variant?: string;
  /** text, file, poll, location, contact or buttons. */
  kind: string;
}

/** The part of a broadcast that decides what is sent. */
export interface BroadcastSpec<I extends BroadcastInput> {
  action: string;
  columns: readonly string[];
  /**
   * What `chatId` is sent (`row`: its record, with chatId and phone), or why
   * its row is invalid; throws a FlowError when the flow, not the row, is at
   * fault. `rec`: the recipient's record from an earlier attempt (its variant
   * is kept).
   */
  prepare(
    ctx: ActionContext,
    input: I,
    chatId: string,
    row: Record<string, unknown>,
    index: number,
    rec?: Pick<RecipientRecord, 'variant'>,
  ): Prepared | string;
  /** The file of records written before records had `content` (files.broadcast). */
  legacyFileName?(input: I): string;
  /** Count the funnel per variant (replied: within this long after the send), in the summary and beside the report. @default no funnel */
  funnel?: { replyWindowMs: number };
}

export interface BroadcastSummary {
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
  /** messages.broadcast: per variant (`all` without variants), queued → sent → delivered → read → replied, opted out, failed, unknown. */
  funnel?: Record<string, FunnelCounts>;
  /** Where the funnel's CSV is. */
  funnelReport?: string;
  /** `msgflow run --plan`: what the plan holds (nothing else is done). */
  planned?: PlanSummary;
  /** `msgflow apply`: how the outcomes differ from the plan, and the CSV listing each recipient that differs. */
  planDiff?: PlanDiffCounts;
}

/**
 * A row of the input as a pass meets it: a recipient (with its durable
 * record), a row that is not one (invalid, opted out), or a duplicate of an
 * earlier recipient. Every pass streams the input again: no list of
 * recipients is held; what a recipient has become lives in its record.
 */
type Met =
  | {
      kind: 'recipient';
      chatId: string;
      where: string;
      row: Record<string, unknown>;
      prepared: Prepared;
      rec?: RecipientRecord;
      /** Its sticky sender, when the pass read it (planning). */
      sticky?: { sender: Sender | undefined } | undefined;
    }
  | { kind: 'invalid'; chatId?: string; where: string; error: string }
  | { kind: 'optedOut'; chatId: string; where: string; prepared: Prepared }
  | { kind: 'duplicate'; chatId: string; where: string };

type Recipient = Extract<Met, { kind: 'recipient' }>;

interface Job<I extends BroadcastInput> {
  ctx: ActionContext;
  input: I;
  spec: BroadcastSpec<I>;
  reportPath: string;
  store: DurableState;
  counters: JobCounters;
  guard: FailureGuard;
  /** Our sends accepted but not seen sent yet: the send queue ahead of a lost send (compact: no object per send). */
  unobserved: UnobservedSends<Sender>;
  /** The chats this run sent to (or found sent after its interruption): the ones it follows, their records read again then (none held when it does not follow). */
  mine: string[];
  reconciled: number;
  windowOver: boolean;
  /**
   * The rows (their indexes) that repeat an earlier recipient, once a pass met
   * them all: the passes after it hold no set of every chat met (a new one,
   * of new strings, each pass).
   */
  duplicates?: Set<number>;
  /** The flow's instance, or the pool's. */
  senders: Senders;
  /** The plan this run applies (msgflow apply): only its recipients are sent, each from its planned instance, with its variant. */
  plan?: AppliedPlan;
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
    return isChatId(raw.trim()) ? { chatId: raw.trim(), rec: withFields(rec, { chatId: raw.trim() }) } : `'${raw}' is not a chat ID`;
  }
  const p = normalisePhone(raw);
  if (!p.ok) return p.reason;
  const chatId = personalChatId(p.digits);
  return { chatId, rec: withFields(rec, { chatId, phone: rec.phone ?? p.digits }) };
}

/** What a pass reads per recipient; `sticky` only when planning asks for it. */
type Reads = [rec: RecipientRecord | undefined, optOut: unknown, sticky?: { sender: Sender | undefined }];

/**
 * Rows read ahead by the passes that only read (counting, planning, the
 * report): their store reads overlap (one round trip at a time made
 * planning 100,000 recipients on Redis take 30 s). The send pass reads each
 * recipient's record as it reaches it.
 */
const READ_AHEAD = 64;

/**
 * Streams the input as recipients, invalid, opted-out and duplicate rows (the first valid row of a chat wins).
 * `o.ahead`: rows whose reads start before their turn (read-only passes); `o.sticky`: also read each
 * recipient's sticky sender (planning).
 */
async function* meet<I extends BroadcastInput>(job: Job<I>, o: { ahead?: number; sticky?: boolean } = {}): AsyncGenerator<Met> {
  const { ctx, input, spec, store } = job;
  // The chats met, on the first pass only: the ones after know the duplicates by their rows.
  const known = job.duplicates;
  const seen = known ? undefined : new Set<string>();
  const duplicates = new Set<number>();
  const optedOut = optOutList(ctx);
  // One key per recipient: the cost does not depend on how many records the campaign holds. Its
  // opt-out is read at the same time (one round trip to a remote store instead of two).
  const reads = (chatId: string): Promise<Reads> =>
    Promise.all([
      store.get<RecipientRecord>(`r:${chatId}`),
      optedOut.get(optOutKey(ctx.instance.identity, chatId)),
      ...(o.sticky ? [job.senders.stickyOf(chatId).then((sender) => ({ sender }))] : []),
    ]) as Promise<Reads>;
  const rows = metRows(readRows(ctx, spec.action, { file: input.file, items: input.recipients }));
  const ahead = o.ahead ?? 0;
  const paired = ahead > 0 ? readAhead(rows, ahead, (m) => (typeof m.r === 'string' ? NOTHING : reads(m.r.chatId))) : lazily(rows);
  for await (const [{ row, r }, early] of paired) {
    if (typeof r !== 'string' && (known ? known.has(row.index) : seen!.has(r.chatId))) {
      duplicates.add(row.index);
      yield { kind: 'duplicate', chatId: r.chatId, where: row.where };
      continue;
    }
    if (typeof r === 'string') {
      yield { kind: 'invalid', where: row.where, error: r };
      continue;
    }
    const [rec, optOut, sticky] = await (early ?? reads(r.chatId));
    // Applying a plan: the variant it planned, unless an attempt already kept one.
    const prepared = spec.prepare(ctx, input, r.chatId, r.rec, row.index, rec ?? job.plan?.sends.get(r.chatId));
    if (typeof prepared === 'string') {
      yield { kind: 'invalid', chatId: r.chatId, where: row.where, error: prepared };
      continue;
    }
    seen?.add(r.chatId);
    // Opted out: never sent again (a message that already went out keeps its own outcome).
    if (!settled(rec) && optOut !== undefined) {
      yield { kind: 'optedOut', chatId: r.chatId, where: row.where, prepared };
      continue;
    }
    yield { kind: 'recipient', chatId: r.chatId, where: row.where, row: r.rec, prepared, rec, sticky };
  }
  // Only a pass that met every row knows them all.
  job.duplicates ??= duplicates;
}

const NOTHING = Promise.resolve([undefined, undefined] as Reads);

async function* metRows(rows: AsyncIterable<SourcedRow>): AsyncGenerator<{ row: SourcedRow; r: ReturnType<typeof recipientOf> }> {
  for await (const row of rows) yield { row, r: recipientOf(row) };
}

/** Rows with no read begun: the send pass reads a recipient when it reaches it. */
async function* lazily<T>(rows: AsyncIterable<T>): AsyncGenerator<[T, undefined]> {
  for await (const row of rows) yield [row, undefined];
}

/** The job of a broadcast, before any pass. */
async function newJob<I extends BroadcastInput>(ctx: ActionContext, input: I, spec: BroadcastSpec<I>): Promise<Job<I>> {
  const reportPath = input.report ?? defaultReport(ctx, 'csv');
  reportFormat(spec.action, reportPath);
  const store = input.campaign ? ctx.shared(broadcastCampaignNs(ctx.instance.identity, input.campaign)) : ctx.state;
  const job: Job<I> = {
    ctx,
    input,
    spec,
    reportPath,
    store,
    counters: new JobCounters(ctx, 1),
    guard: new FailureGuard(spec.action, ctx.instance.name, input.maxConsecutiveFailures),
    unobserved: new UnobservedSends(),
    mine: [],
    reconciled: (await ctx.state.get<number>('reconciled')) ?? 0,
    windowOver: false,
    senders: new Senders(ctx, input.pool, input.guard, input.campaign),
  };
  return job;
}

/** The first pass: counts the rows, and gathers the records a send or reconciliation needs (interrupted, unseen, ours). */
async function load<I extends BroadcastInput>(job: Job<I>): Promise<RecipientRecord[]> {
  const interrupted: RecipientRecord[] = [];
  const c = job.counters;
  let total = 0;
  for await (const m of meet(job, { ahead: READ_AHEAD })) {
    total++;
    if (m.kind === 'duplicate') c.duplicate++;
    else if (m.kind === 'invalid') c.invalid++;
    else if (m.kind === 'optedOut') c.skipped++;
    else if (m.rec) {
      const rec = m.rec;
      if (rec.phase === 'intent') interrupted.push(rec);
      else count(job, rec);
    }
  }
  c.total = total;
  // The first count, with the number of rows: the step's start line says it (countsRecords).
  c.flush();
  return interrupted;
}

/** Counts a record as it stands, and keeps it where reconciliation and following look. */
function count(job: Job<BroadcastInput>, rec: RecipientRecord): void {
  const c = counterOf(rec.phase);
  if (c) job.counters[c]++;
  if (rec.phase !== 'sent') return;
  if (!rec.observed) unobserved(job, rec);
  if (rec.runId === job.ctx.run.id && follows(job)) job.mine.push(rec.chatId);
}

/** A record this run has just sent (or found sent): followed after the last send. */
function track(job: Job<BroadcastInput>, rec: RecipientRecord): void {
  if (!rec.observed) unobserved(job, rec);
  if (follows(job)) job.mine.push(rec.chatId);
}

/** A sent record not seen sent yet: one of the sends queued ahead of a later one. */
function unobserved(job: Job<BroadcastInput>, rec: RecipientRecord): void {
  job.unobserved.add(senderOf(job, rec), rec.idMessage!, rec.sentAt ?? rec.intentAt);
}

/** Whether the job follows statuses after its last send (else it keeps no list of the chats it sent to). */
const follows = (job: Job<BroadcastInput>) => job.input.follow.deadline > 0;

// ---- reconcile ------------------------------------------------------------------

/**
 * Ours accepted but not seen sent yet (they are ahead of anything sent after
 * them), after looking them up in the service's outgoing messages.
 */
const queuedAhead = (job: Job<BroadcastInput>, s: Sender) => async (): Promise<number> => {
  const { ctx } = s;
  // A copy: the lookups below wait, and the list is the job's.
  const { ids, oldest } = job.unobserved.of(s);
  const unseen = [...ids];
  if (unseen.length === 0) return 0;
  const now = ctx.clock.now();
  const since = Math.min(now, oldest ?? now) - 60_000;
  const msgs = await ctx.client
    .lastOutgoingMessages({ minutes: Math.max(1, Math.ceil((now - since) / 60_000) + 1) }, { signal: ctx.signal })
    .catch(() => []);
  const byId = new Map(msgs.map((m) => [m.idMessage, m]));
  let left = 0;
  const seen = new Set<string>();
  for (const id of unseen) {
    const m = byId.get(id);
    // Listed `pending`: still in the service's queue, ahead of what follows.
    if (!m || m.statusMessage === 'pending') left++;
    if (!m) continue;
    // The message names its chat: the record is that chat's.
    const r = await job.store.get<RecipientRecord>(`r:${m.chatId}`);
    if (r?.idMessage !== id || r.phase !== 'sent') seen.add(id);
    else if (applyStatus(r, m, now)) await job.store.set(`r:${r.chatId}`, r);
    if (r?.observed) seen.add(id);
  }
  job.unobserved.drop(s, seen);
  return left;
};

/** The sender of a record (or of a send the job keeps): the one that made its attempt (records of before pools: the flow's instance). */
function senderOf(job: Job<BroadcastInput>, r: { sender?: string }): Sender {
  return job.senders.byIdentity(r.sender) ?? job.senders.list[0]!;
}

/** The records by their senders. */
function bySender(job: Job<BroadcastInput>, records: RecipientRecord[]): Map<Sender, RecipientRecord[]> {
  const groups = new Map<Sender, RecipientRecord[]>();
  for (const r of records) {
    const s = senderOf(job, r);
    groups.set(s, [...(groups.get(s) ?? []), r]);
  }
  return groups;
}

/** Reconciles interrupted sends, each at the service of the instance that made it. */
async function settle<I extends BroadcastInput>(job: Job<I>, open: RecipientRecord[]): Promise<void> {
  const { ctx, input, spec } = job;
  const j = job as unknown as Job<BroadcastInput>;
  const opts = {
    action: spec.action,
    fileName: spec.legacyFileName?.(input),
    sendIntervalMs: input.reconcile.sendInterval,
    graceMs: input.reconcile.grace,
    clockSkewMs: input.reconcile.clockSkew,
    journalLagMs: input.reconcile.journalLag,
  };
  let found = 0;
  let unknown = 0;
  let resend = 0;
  for (const [s, records] of bySender(j, open)) {
    const n = await reconcile(s.ctx, job.store, records, queuedAhead(j, s), opts);
    found += n.found;
    unknown += n.unknown;
    resend += n.resend;
  }
  job.reconciled += found;
  await ctx.state.set('reconciled', job.reconciled);
  if (found + unknown + resend > 0)
    ctx.logger.info(
      `${spec.action}: reconciled ${found + unknown + resend} interrupted send(s): ${found} had gone out, ${resend} never reached the service (sent again), ${unknown} unknown (not sent again)`,
    );
}

// ---- execute ----------------------------------------------------------------------

/** Waits durably until the step's window is open; false when an absolute window is over for good. */
async function windowOpen(job: Job<BroadcastInput>, zone: string): Promise<boolean> {
  const { ctx, input } = job;
  // No window: open (without asking the machine's zone for every recipient, which costs more than a send).
  if (!input.window) return true;
  for (;;) {
    const now = ctx.clock.now();
    const next = nextOpening(input.window, now, zone);
    if (!next) return false;
    if (next.at <= now) return true;
    await job.counters.waitingFor(() =>
      ctx.wait({ until: next.at, reason: `send window opens at ${iso(next.at)}`, key: `window-${next.at}` }),
    );
  }
}

/** A `window:` as written that is closed at `now`: until when (see ActionDefinition.firstWait); undefined when open, absent or a template. */
export function windowWait(written: unknown, now: number, zone: string): StartWait | undefined {
  const parsed = WindowSchema.optional().safeParse(written);
  if (!parsed.success || !parsed.data) return undefined;
  const w = parsed.data;
  const shown = `send window ${w.start ?? '…'}–${w.stop ?? '…'}${w.timezone ? ` (${w.timezone})` : ''}`;
  const next = nextOpening(w, now, zone);
  if (!next) return { reason: `${shown} is over: nothing will be sent` };
  return next.at > now ? { until: next.at, reason: `${shown} is closed` } : undefined;
}

type SendCall = (body: Record<string, unknown>, o: { signal: AbortSignal }) => Promise<{ idMessage: string }>;

/** What a failed send means: the sender turned unhealthy (its reason), or a failure of the recipient's. */
async function sendFailed(job: Job<BroadcastInput>, s: Sender, rec: RecipientRecord, e: unknown): Promise<string | undefined> {
  // Only a lost answer (reset, timeout) or a 5xx may hide an accepted send: look before anything else.
  if (mayHaveBeenProcessed(e)) await settle(job, [rec]);
  if (rec.phase === 'sent') {
    track(job, rec);
    await job.senders.sent(s, rec.chatId, rec.idMessage!, rec.sentAt ?? job.ctx.clock.now());
    job.guard.ok();
    return undefined;
  }
  const unhealthy = job.senders.unhealthyBy(e);
  if (rec.phase === 'intent') {
    // Refused (never accepted): sending again later cannot duplicate, unless the answer was definite.
    const retryable = unhealthy !== undefined || classify(e) !== 'definite';
    Object.assign(rec, { phase: 'failed', error: e instanceof Error ? e.message : String(e), retryable: retryable || undefined });
    await job.store.set(`r:${rec.chatId}`, rec);
  }
  if (unhealthy !== undefined) {
    // The guard's business, not the job's: the campaign pauses on the instance (the others go on, or it waits for the lift).
    await job.senders.trip(s, unhealthy);
    return unhealthy;
  }
  job.guard.fail(e, `${job.counters.done} recipients are sent and keep their record; run again once fixed (nobody is sent twice)`);
  return undefined;
}

/** Sends one recipient's message from `s`; the reason when the sender turned unhealthy on it. */
async function sendOne(job: Job<BroadcastInput>, rcp: Recipient, s: Sender): Promise<string | undefined> {
  const { ctx } = job;
  const p = rcp.prepared;
  const rec: RecipientRecord = {
    chatId: rcp.chatId,
    caption: p.caption,
    content: p.content,
    ...(p.variant === undefined ? {} : { variant: p.variant }),
    ...(job.senders.pooled ? { sender: s.instance.identity, senderName: s.name } : {}),
    phase: 'intent',
    runId: ctx.run.id,
    intentAt: ctx.clock.now(),
    // A send again after an interrupted one that never reached the service keeps why (and is never sent a third time).
    ...(rcp.rec?.resent ? { resent: rcp.rec.resent } : {}),
  };
  rcp.rec = rec;
  // The intent, the sticky sender (the recipient's from the intent on: where a send may have gone is
  // where it is looked for) and the day's count, all durable before the send; written at once, as
  // none depends on another (a sticky sender without an intent only says where a later send goes).
  await Promise.all([job.store.set(`r:${rec.chatId}`, rec), job.senders.stick(rcp.chatId, s), job.senders.count(s)]);
  try {
    const send = s.client[p.method] as unknown as SendCall;
    const res = await send.call(s.client, { chatId: rcp.chatId, ...p.body }, { signal: ctx.signal });
    Object.assign(rec, { phase: 'sent', idMessage: res.idMessage, sentAt: ctx.clock.now(), status: 'sent' });
    delete rec.content; // only an intent is looked for
    track(job, rec);
    await job.store.set(`r:${rec.chatId}`, rec);
    await job.senders.sent(s, rec.chatId, res.idMessage, rec.sentAt!);
    job.guard.ok();
    return undefined;
  } catch (e) {
    if (ctx.signal.aborted) throw ctx.signal.reason ?? e;
    return sendFailed(job, s, rec, e);
  }
}

/** Done: sent, unknown, or a definite failure; a refused send (retryable) is tried again by a later run, one to send again by this one. */
export const settled = (r: RecipientRecord | undefined) =>
  r !== undefined && r.phase !== 'intent' && r.phase !== 'resend' && !(r.phase === 'failed' && r.retryable);

/** Who sends to a recipient now, or until when it waits: for the caps (`at`), or for a pause's lift. */
type Choice = { sender: Sender } | { at: number } | { paused: PauseRecord[] };

/**
 * The recipient's sender: the one it keeps (its record's, else its sticky
 * one), unless that one is paused and the pool moves its recipients; a new
 * recipient gets the healthy sender with room today that is ready first.
 */
async function choose(job: Job<BroadcastInput>, rcp: Recipient): Promise<Choice> {
  const S = job.senders;
  // Applying a plan, its instance stands for the sticky one (an attempt's sender still comes first).
  const planned = S.list.find((s) => s.name === job.plan?.sends.get(rcp.chatId)?.instance);
  const own = S.byIdentity(rcp.rec?.sender) ?? planned;
  // Read at once: one round trip to a remote store instead of one per sender.
  const [sticky, pauses] = await Promise.all([own ? undefined : S.stickyOf(rcp.chatId), Promise.all(S.list.map((s) => S.pauseOf(s)))]);
  const kept = own ?? sticky;
  const healthy: Sender[] = [];
  const paused: PauseRecord[] = [];
  let keptPause: PauseRecord | undefined;
  for (const [i, s] of S.list.entries()) {
    const p = pauses[i];
    if (!p) healthy.push(s);
    else {
      paused.push(p);
      if (s === kept) keptPause = p;
    }
  }
  if (keptPause && S.waitsWhenUnhealthy) return { paused: [keptPause] };
  const candidates = kept && !keptPause ? [kept] : healthy;
  if (candidates.length === 0) return { paused };
  const room = await Promise.all(candidates.map(async (s) => ({ s, left: await S.capacity(s) })));
  const open = room.filter((r) => r.left > 0).sort(pickOrder);
  return open.length > 0 ? { sender: open[0]!.s } : { at: S.tomorrow() };
}

/** What a pass leaves: the earliest time a deferred recipient may be sent, and the pauses some wait for. */
interface PassEnd {
  earliest?: number;
  paused: PauseRecord[];
}

/** Sends to one recipient whose hours are open: its sender chosen, paced and checked; what it waits for otherwise. */
async function sendTo(job: Job<BroadcastInput>, rcp: Recipient, sends: { n: number }, end: PassEnd): Promise<void> {
  const { ctx, input } = job;
  const choice = await choose(job, rcp);
  if ('paused' in choice) return void end.paused.push(...choice.paused);
  if ('at' in choice) return void (end.earliest = Math.min(end.earliest ?? choice.at, choice.at));
  const s = choice.sender;
  const unhealthy = await job.senders.checkState(s);
  if (unhealthy) {
    await job.senders.trip(s, unhealthy);
    end.earliest = ctx.clock.now(); // another pass: the recipient moves, or waits for the lift
    return;
  }
  if (sends.n > 0) await pause(ctx.clock, input.pace, ctx.signal);
  await job.senders.paced(s);
  sends.n++;
  const before = rcp.rec?.phase;
  try {
    if ((await sendOne(job, rcp, s)) !== undefined) end.earliest = ctx.clock.now();
  } finally {
    countChange(job, before, rcp.rec?.phase);
  }
}

/**
 * One pass over the recipients not settled yet, in the input's order: sends
 * to those whose own hours are open and whose sender may send; what the
 * others wait for. `sends` counts across passes (the pace).
 */
async function sendPass(job: Job<BroadcastInput>, sends: { n: number }): Promise<PassEnd> {
  const { ctx, input } = job;
  const end: PassEnd = { paused: [] };
  // Once a pass: the machine's zone is asked of a new Intl formatter each time.
  const zone = zoneOf(ctx.clock);
  for await (const rcp of meet(job)) {
    if (rcp.kind !== 'recipient' || settled(rcp.rec) || (job.plan && !job.plan.sends.has(rcp.chatId))) continue;
    ctx.signal.throwIfAborted();
    if (!(await windowOpen(job, zone))) {
      job.windowOver = true;
      ctx.logger.warn(`${job.spec.action}: the send window is over; the remaining recipients are not sent`);
      return { paused: [] };
    }
    const opens = input.recipientTime ? recipientOpening(input.recipientTime, rcp.chatId, rcp.row, ctx.clock.now(), zone) : ctx.clock.now();
    if (opens > ctx.clock.now()) end.earliest = Math.min(end.earliest ?? opens, opens);
    else await sendTo(job, rcp, sends, end);
  }
  return end;
}

/**
 * Sends to each recipient not settled yet. Recipients outside their hours or
 * past their sender's cap are sent by a later pass once that time comes, and
 * those held by a pause once it is lifted (durable waits).
 */
async function sendAll(job: Job<BroadcastInput>): Promise<void> {
  const { ctx } = job;
  const sends = { n: 0 };
  for (;;) {
    const { earliest, paused } = await sendPass(job, sends);
    if (job.windowOver || (earliest === undefined && paused.length === 0)) return;
    const firstPause = Math.min(...paused.map((p) => p.until));
    if (earliest !== undefined && earliest <= ctx.clock.now()) continue;
    await job.counters.waitingFor(() =>
      earliest !== undefined && earliest < firstPause
        ? ctx.wait({ until: earliest, reason: `recipients wait until ${iso(earliest)}`, key: `recipients-${earliest}` })
        : job.senders.waitForLift(paused),
    );
  }
}

/** Why a recipient was not sent. */
function notSentWhy(job: Job<BroadcastInput>, chatId: string): string {
  if (job.plan && !job.plan.sends.has(chatId)) return 'not in the plan';
  return job.windowOver ? 'send window closed' : 'not attempted: the job stopped';
}

const counterOf = (phase: string | undefined) =>
  phase === 'sent' ? 'done' : phase === 'failed' || phase === 'unknown' ? 'failed' : undefined;

/**
 * Moves one recipient between counters (a retried failure leaves `failed`),
 * reported every hundred changes or half a second as any job's counts are,
 * not once per send (each report goes to the run's progress and bus).
 */
function countChange(job: Job<BroadcastInput>, before: string | undefined, after: string | undefined): void {
  const from = counterOf(before);
  const to = counterOf(after);
  if (from !== to) job.counters.move(from, to);
}

/** Follows the statuses of what this run sent, at each sender's service at once. */
async function follow(job: Job<BroadcastInput>): Promise<void> {
  const { ctx, input } = job;
  if (!follows(job) || job.mine.length === 0) return;
  const mine: RecipientRecord[] = [];
  for (const chatId of job.mine) {
    const r = await job.store.get<RecipientRecord>(`r:${chatId}`);
    if (r?.phase === 'sent') mine.push(r);
  }
  if (mine.length === 0) return;
  let followUntil = await ctx.state.get<number>('followUntil');
  if (followUntil === undefined) {
    followUntil = ctx.clock.now() + input.follow.deadline;
    await ctx.state.set('followUntil', followUntil);
  }
  const deadline = followUntil;
  const onFailed = () => countChange(job, 'sent', 'failed');
  const one = async (s: Sender, records: RecipientRecord[]) => {
    if (await notificationsOn(s.ctx, Math.min(...records.map((r) => r.intentAt)))) {
      return followNotified(s.ctx, job.store, records, { until: input.follow.until, deadline, pollMs: input.follow.poll, onFailed });
    }
    await followStatuses(s.ctx, job.store, records, {
      until: input.follow.until,
      deadline,
      pollMs: input.follow.poll,
      sendIntervalMs: input.reconcile.sendInterval,
      graceMs: input.reconcile.grace,
      onFailed,
    });
  };
  await Promise.all([...bySender(job, mine)].map(([s, records]) => one(s, records)));
}

// ---- report -------------------------------------------------------------------------

function outcomeOf(ctx: ActionContext, r: RecipientRecord | undefined, windowOver: boolean): string {
  if (ctx.run.dryRun && !settled(r)) return 'wouldSend';
  if (!r || r.phase === 'intent' || r.phase === 'resend' || (r.phase === 'failed' && r.retryable && windowOver)) return 'notSent';
  if (r.phase === 'sent') return r.runId !== undefined && r.runId !== ctx.run.id ? 'sentEarlier' : 'sent';
  return r.phase;
}

/** The report line of a recipient, from its record; `outcome` counted in `n`. Every column of either job: each writes its own. */
async function recipientLine(
  job: Job<BroadcastInput>,
  rcp: Recipient,
  n: Record<string, number>,
  funnel?: Funnel,
): Promise<Record<string, unknown>> {
  const r = rcp.rec;
  const outcome = outcomeOf(job.ctx, r, job.windowOver);
  const repliedAt = await funnel?.recipient(r?.variant ?? rcp.prepared.variant, outcome, r, r ? senderOf(job, r).instance.identity : '');
  n[outcome] = (n[outcome] ?? 0) + 1;
  if (outcome === 'sent' || outcome === 'sentEarlier') {
    if (r!.status === 'delivered' || r!.status === 'read') n.delivered = (n.delivered ?? 0) + 1;
    if (r!.status === 'read') n.read = (n.read ?? 0) + 1;
  }
  if (r?.resent !== undefined) n.resent = (n.resent ?? 0) + 1;
  const error = outcome === 'notSent' ? notSentWhy(job, rcp.chatId) : r?.error;
  // The caption an attempt sent, as its record keeps it (a template is evaluated again by each pass).
  const caption = r?.caption ?? rcp.prepared.caption;
  return {
    chatId: rcp.chatId,
    where: rcp.where,
    variant: r?.variant ?? rcp.prepared.variant,
    kind: rcp.prepared.kind,
    outcome,
    idMessage: r?.idMessage,
    status: r?.status,
    sentAt: iso(r?.sentAt),
    deliveredAt: iso(r?.deliveredAt),
    readAt: iso(r?.readAt),
    repliedAt: iso(repliedAt),
    instance: r?.senderName,
    reconciled: r?.reconciled,
    resent: r?.resent,
    caption,
    text: caption,
    error,
  };
}

/**
 * The last pass: one report line per row (a duplicate has none), from the
 * recipients' records: the recipients in the input's order, then the opted-out
 * rows, then the invalid ones (only those lines wait for the end of the pass).
 */
async function report(job: Job<BroadcastInput>): Promise<BroadcastSummary> {
  const { ctx, spec } = job;
  const writer = await openReport({ action: spec.action, runId: ctx.run.id, path: ctx.resolvePath(job.reportPath), columns: spec.columns });
  const n: Record<string, number> = {};
  const tail: Record<string, unknown>[] = [];
  const invalid: Record<string, unknown>[] = [];
  const funnel = spec.funnel ? new Funnel(ctx, spec.funnel.replyWindowMs) : undefined;
  const diff = await planDiff(job);
  // Each line also goes to the plan's diff, when the run applies a plan.
  const out = async (line: Record<string, unknown>) => {
    await writer.write(line);
    if (diff && typeof line.chatId === 'string') await diff.line(line as unknown as ReportedLine);
  };
  try {
    for await (const m of meet(job, { ahead: READ_AHEAD })) {
      n[m.kind] = (n[m.kind] ?? 0) + 1;
      if (m.kind === 'recipient') await out(await recipientLine(job, m, n, funnel));
      else if (m.kind === 'invalid') invalid.push({ chatId: m.chatId, where: m.where, outcome: 'invalid', error: m.error });
      else if (m.kind === 'optedOut') {
        const { caption, variant, kind } = m.prepared;
        funnel?.optedOutRow(variant);
        tail.push({ chatId: m.chatId, where: m.where, outcome: 'optedOut', caption, text: caption, variant, kind });
      }
    }
    for (const line of [...tail, ...invalid]) await out(line);
  } catch (e) {
    await writer.abort();
    await diff?.abort();
    throw e;
  }
  const summary = summarise(job, n);
  if (diff) summary.planDiff = await diff.close();
  if (funnel) {
    summary.funnelReport = Funnel.pathFor(job.reportPath);
    summary.funnel = funnel.byVariant;
    await funnel.write(ctx.resolvePath(summary.funnelReport));
  }
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
    `${spec.action}: ${summary.sent} sent (${summary.delivered} delivered, ${summary.read} read), ${summary.failed} failed, ${summary.unknown} unknown, ${summary.notSent} not sent, ${summary.optedOut} opted out, ${summary.invalid} invalid; report ${job.reportPath}`,
  );
  const d = summary.planDiff;
  if (d)
    ctx.logger.info(
      `${spec.action}: against the plan: ${d.asPlanned} of ${d.planned} as planned, ${d.notSent} not sent, ${d.otherInstance} from another instance, ${d.late} later than planned, ${d.unplanned} not in the plan; differences in ${d.report}`,
    );
  return summary;
}

// ---- plan, then apply (broadcast-plan.ts) ---------------------------------------------

/** What the plan was made from, as it stands now (`optOut`: OptOutHash of the rows skipped as opted out). */
async function fingerprintOf(job: Job<BroadcastInput>, optOut: string): Promise<PlanFingerprint> {
  const { ctx, input } = job;
  const recipients: Record<string, string> = {};
  if (input.file !== undefined) recipients[input.file] = await fileHash(ctx.resolvePath(input.file)).catch(() => 'unreadable');
  if (input.recipients !== undefined) recipients.items = hashOf(input.recipients);
  const senders = job.senders.list.map((s) => [s.name, s.instance.identity]);
  const { pool, pace, window, recipientTime, campaign } = input;
  return { flow: ctx.run.plan!.flowHash, recipients, config: hashOf({ pool, senders, pace, window, recipientTime, campaign }), optOut };
}

/** `msgflow run --plan`: plans the broadcast (a dry run: nothing sent, nothing recorded) and writes the plan file. */
async function plan(job: Job<BroadcastInput>): Promise<BroadcastSummary> {
  const { ctx, spec, input } = job;
  if (!ctx.run.dryRun)
    throw new FlowError('ACTION_INPUT_INVALID', { action: spec.action, field: 'plan', reason: 'a plan is made by a dry run' });
  const path = ctx.run.plan!.path;
  const shown = planShown(ctx);
  const planned = await writePlan({
    ctx,
    action: spec.action,
    input,
    senders: job.senders,
    rows: () => planRows(job),
    path,
    shown,
    fingerprint: (optOut) => fingerprintOf(job, optOut),
  });
  ctx.logger.info(`${spec.action}: planned ${planned.recipients} recipients; plan ${shown}`);
  return { ...summarise(job, {}), report: shown, planned };
}

/** The run's plan file as messages name it: from the project's folder when it lies there. */
function planShown(ctx: ActionContext): string {
  const path = ctx.run.plan!.path;
  const fromProject = relative(ctx.resolvePath('.'), path);
  return fromProject.startsWith('..') || isAbsolute(fromProject) ? path : fromProject;
}

/** The rows as the planner meets them. */
async function* planRows(job: Job<BroadcastInput>): AsyncGenerator<PlanRow> {
  for await (const m of meet(job, { ahead: READ_AHEAD, sticky: true })) {
    if (m.kind === 'invalid')
      yield { kind: 'skip', where: m.where, reason: 'invalid', detail: m.error, ...(m.chatId ? { chatId: m.chatId } : {}) };
    else if (m.kind !== 'recipient') yield { kind: 'skip', chatId: m.chatId, where: m.where, reason: m.kind };
    else if (settled(m.rec)) yield { kind: 'skip', chatId: m.chatId, where: m.where, reason: 'sentEarlier' };
    else {
      const p = m.prepared;
      const summary = (p.caption ?? '').slice(0, 80);
      yield {
        kind: 'recipient',
        chatId: m.chatId,
        where: m.where,
        row: m.row,
        variant: p.variant,
        messageKind: p.kind,
        summary,
        kept: m.rec?.sender,
        sticky: m.sticky,
      };
    }
  }
}

/**
 * The plan this run applies, read; its fingerprint checked once, when the run
 * first gets here (a resumed run goes on with what it verified).
 * @throws MsgflowError PLAN_OUTDATED naming what changed, PLAN_INVALID
 */
async function applying(job: Job<BroadcastInput>): Promise<AppliedPlan> {
  const { ctx } = job;
  const file = planShown(ctx);
  const applied = await loadPlan(ctx.run.plan!.path, file);
  const { head } = applied;
  if (head.flow !== ctx.run.flow || head.step !== ctx.run.step)
    throw new MsgflowError('PLAN_INVALID', {
      file,
      field: 'step',
      reason: `a plan of ${head.flow} step ${head.step}, not of ${ctx.run.flow} step ${ctx.run.step}`,
    });
  if ((await ctx.state.get<number>('planAppliedAt')) !== undefined) return applied;
  const optOut = new OptOutHash();
  for await (const m of meet(job, { ahead: READ_AHEAD })) if (m.kind === 'optedOut') optOut.add(m.chatId);
  const changed = changedSince(head.fingerprint, await fingerprintOf(job, optOut.digest()));
  if (changed.length > 0)
    throw new MsgflowError('PLAN_OUTDATED', {
      file,
      changed: changed.join(', '),
      createdAt: head.createdAt,
      flow: head.flow,
    });
  await appliedOnce(job, applied, file);
  await ctx.state.set('planAppliedAt', ctx.clock.now());
  return applied;
}

/**
 * A plan of a broadcast without a campaign name keeps its records in its run:
 * a second run applying it would send everyone again, so it is applied once
 * (a campaign's records say who was sent: applying its plan again sends nobody twice).
 */
async function appliedOnce(job: Job<BroadcastInput>, applied: AppliedPlan, file: string): Promise<void> {
  const { ctx } = job;
  if (job.input.campaign !== undefined) return;
  const { head } = applied;
  const plans = ctx.shared(BROADCAST_PLANS_NS);
  const key = `${head.flow}|${head.step}|${head.createdAt}`;
  const by = await plans.get<{ runId: string; at: number }>(key);
  if (by && by.runId !== ctx.run.id)
    throw new MsgflowError('PLAN_INVALID', {
      file,
      field: 'createdAt',
      reason: `applied already by run ${by.runId} (${iso(by.at)}), and its step has no campaign name to tell who was sent; make a new one with 'msgflow run ${head.flow} --plan ${file}'`,
    });
  await plans.set(key, { runId: ctx.run.id, at: ctx.clock.now() });
}

/** The diff of the report against the plan applied, if the run applies one. */
async function planDiff(job: Job<BroadcastInput>) {
  const { ctx, plan } = job;
  if (!plan) return undefined;
  const shown = planDiffPath(job.reportPath);
  const appliedAt = (await ctx.state.get<number>('planAppliedAt')) ?? ctx.clock.now();
  const shiftMs = Math.max(0, appliedAt - Date.parse(plan.head.createdAt));
  return openPlanDiff({ action: job.spec.action, runId: ctx.run.id, path: ctx.resolvePath(shown), shown, plan, shiftMs });
}

function summarise(job: Job<BroadcastInput>, n: Record<string, number>): BroadcastSummary {
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
    ...(job.ctx.run.dryRun ? { wouldSend: of('wouldSend') } : {}),
    reconciled: job.reconciled,
    resent: of('resent'),
    earlier: of('sentEarlier'),
    report: job.reportPath,
  };
}

/** Runs a broadcast: reconciles what an interruption left open, sends, follows, reports; one run of a campaign at a time. */
export function runBroadcast<I extends BroadcastInput>(ctx: ActionContext, input: I, spec: BroadcastSpec<I>): Promise<BroadcastSummary> {
  return sendingAlone(ctx, input.campaign, () => broadcast(ctx, input, spec));
}

async function broadcast<I extends BroadcastInput>(ctx: ActionContext, input: I, spec: BroadcastSpec<I>): Promise<BroadcastSummary> {
  const job = await newJob(ctx, input, spec);
  const j = job as unknown as Job<BroadcastInput>;
  if (ctx.run.plan?.mode === 'write') return plan(j);
  if (ctx.run.plan?.mode === 'apply') j.plan = await applying(j);
  const interrupted = await load(job);
  if (!ctx.run.dryRun) {
    try {
      if (interrupted.length > 0) await settle(j, interrupted);
      for (const rec of interrupted) count(j, rec);
      job.counters.flush();
      await sendAll(j);
      await follow(j);
    } catch (e) {
      // A stopped job (JOB_STOPPED) still reports who got the message; a cancel or shutdown does not.
      if (!ctx.signal.aborted) await report(j).catch(() => undefined);
      throw e;
    }
  }
  return report(j);
}
