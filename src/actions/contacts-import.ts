/**
 * `contacts.import`: keeps the messenger's contact list in step with a file.
 *
 * The API has no way to read the contact list, so `upsert` adds and, on
 * CONTACT_EXISTS, edits; and a dry run predicts changes from what msgflow
 * itself last wrote for each contact (kept per instance identity in shared
 * state, one key per contact). Numbers not on the messenger are reported,
 * never retried. Rows are streamed, each finished row appends one journal
 * entry (replayed on resume), and the report is written as rows finish.
 */
import { z } from 'zod';
import { ApiError, isMsgflowError } from '../api/errors.js';
import { classify } from '../api/failure.js';
import { isPersonalChatId, personalChatId } from '../api/chat-id.js';
import { defineAction, type ActionContext } from '../engine/action.js';
import { contactsNs } from '../engine/shared.js';
import { normalisePhone } from './phone.js';
import { PaceSchema, pause } from './pace.js';
// The job kit, by concern: with: fields, rows in, report out, progress and failures, the journal.
import { fileField, itemsField, maxConsecutiveFailuresField, recordsFrom, reportField } from './kit/inputs.js';
import { countRows, parseBool, pickField, readRows, type SourcedRow } from '../engine/flow/data-file.js';
import { defaultReport, duplicateOf, openReport, reportFormat } from './kit/report.js';
import { FailureGuard } from './kit/guard.js';
import { JobCounters, type CounterName } from './kit/counters.js';
import { InFlight, inFlightField, inFlightLimit } from './kit/in-flight.js';
import { RowIndex } from './kit/row-index.js';
import { JournalWriter, replayJournal, runJournaled, type JournalEntry, type JournaledJob } from './kit/journaled.js';

export const CONTACTS_IMPORT = 'contacts.import';

export const CONTACT_MODES = ['upsert', 'add', 'edit', 'delete'] as const;
export type ContactMode = (typeof CONTACT_MODES)[number];

export const ContactsImportInput = z
  .strictObject({
    file: fileField('contacts'),
    items: itemsField('rows: { phone | chatId, firstName, lastName?, saveInAddressbook? } (e.g. `${{ inputs.contacts }}`)'),
    mode: z
      .enum(CONTACT_MODES)
      .default('upsert')
      .describe('upsert: add, and edit when it already exists; add: add only; edit: edit only; delete: delete each row. @default upsert'),
    dryRun: z
      .boolean()
      .default(false)
      .describe('Show what would change without calling the service (also on with `msgflow run --dry-run`). @default false'),
    saveInAddressbook: z
      .boolean()
      .default(true)
      .describe("Also save into the primary device's phonebook, for rows without their own saveInAddressbook. @default true"),
    pace: PaceSchema.default({ delay: 200, jitter: 0.3 }),
    inFlight: inFlightField(),
    maxConsecutiveFailures: maxConsecutiveFailuresField('contacts'),
    report: reportField(),
  })
  .refine(...recordsFrom('file', 'items'))
  .describe("Adds, edits or deletes contacts in the messenger's contact list from a file.");

export type ContactsImportInput = z.output<typeof ContactsImportInput>;

export type ContactOutcome =
  | 'added'
  | 'updated'
  | 'deleted'
  | 'alreadyExists'
  | 'notOnMessenger'
  | 'invalid'
  | 'failed'
  | 'duplicate'
  | 'wouldAdd'
  | 'wouldUpdate'
  | 'wouldUpsert'
  | 'wouldDelete'
  | 'unchanged';

/** The report's columns, fixed. */
export const CONTACT_REPORT_COLUMNS = [
  'where',
  'chatId',
  'firstName',
  'lastName',
  'saveInAddressbook',
  'outcome',
  'change',
  'error',
  'retryable',
] as const;

export interface ContactRowResult {
  where: string;
  chatId?: string;
  firstName?: string;
  lastName?: string;
  saveInAddressbook?: boolean;
  outcome: ContactOutcome;
  /** Dry run: what changes against msgflow's last import, e.g. `firstName: Bob → Robert`. */
  change?: string;
  error?: string;
  retryable?: boolean;
}

export interface ContactsImportSummary {
  mode: ContactMode;
  dryRun: boolean;
  total: number;
  added: number;
  updated: number;
  deleted: number;
  alreadyExists: number;
  notOnMessenger: number;
  invalid: number;
  failed: number;
  duplicates: number;
  /** Dry run only: the predictions. */
  wouldAdd?: number;
  wouldUpdate?: number;
  wouldDelete?: number;
  /** Dry run only: rows that would call the service / rows identical to the last import. */
  wouldChange?: number;
  unchanged?: number;
  report: string;
}

interface Contact {
  chatId: string;
  firstName: string;
  lastName?: string;
  saveInAddressbook: boolean;
}

/** What msgflow last wrote for a contact, compact. */
interface MirrorEntry {
  f: string;
  l?: string;
  s: boolean;
  t: number;
}

interface Entry extends JournalEntry {
  k: string;
  o: ContactOutcome;
}

type Tally = Record<ContactOutcome, number> & { total: number };

/**
 * Journal entries are not awaited one by one; the chatIds whose entries may
 * not be durable yet are in the durable `intent` list written before each
 * call, so a resumed run that meets one again knows its add may have gone
 * through.
 */
interface Job extends JournaledJob<Entry> {
  dryRun: boolean;
  /** chatIds in the `intent` list left by an interrupted attempt. */
  intents: Set<string>;
  mirror: ReturnType<ActionContext['shared']>;
  tally: Tally;
  /** Records in flight: calls overlap, commits (journal, counters, report, guard) go in row order. */
  window: InFlight;
  /** chatIds whose call may be under way and whose journal entry is not appended yet (they are in every intent list written). */
  calling: Set<string>;
  /** Writes the intent list: the rows that start in one turn share one write. */
  intent: SharedWrite;
}

/**
 * One write shared by everyone who asks for it in the same turn of the event
 * loop: the write starts at the end of the turn and reads the state then, so
 * it holds what each asker put there before asking; an asker after that start
 * waits for the next write. Records in flight start in bursts, and the intent
 * list is a kilobyte and more: one write of it per record was a large part
 * of an import's CPU.
 */
class SharedWrite {
  private next: Promise<void> | undefined;

  constructor(private readonly write: () => Promise<void>) {}

  /** Resolves once a write started after this call is durable (rejects with its error). */
  written(): Promise<void> {
    this.next ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      this.next = undefined;
      return this.write();
    });
    return this.next;
  }
}

/** Which counter an outcome moves: the same in progress, summary and exit code. */
const COUNTER: Record<ContactOutcome, CounterName> = {
  added: 'done',
  updated: 'done',
  deleted: 'done',
  alreadyExists: 'done',
  // Final for this number (nothing to retry, nothing to fix in msgflow): not
  // counted failed, so progress, summary (`failed`) and exit code agree.
  notOnMessenger: 'skipped',
  failed: 'failed',
  invalid: 'invalid',
  duplicate: 'duplicate',
  wouldAdd: 'skipped',
  wouldUpdate: 'skipped',
  wouldUpsert: 'skipped',
  wouldDelete: 'skipped',
  unchanged: 'skipped',
};

// ---- plan -------------------------------------------------------------------

function parseChatId(value: object): string | { error: string } {
  const chatIdRaw = pickField(value, ['chatId']);
  if (chatIdRaw !== undefined) {
    if (typeof chatIdRaw !== 'string' || !isPersonalChatId(chatIdRaw.trim()))
      return { error: `chatId '${String(chatIdRaw)}' is not a personal chat ID (digits followed by @c.us)` };
    return chatIdRaw.trim();
  }
  const phoneRaw = pickField(value, ['phone', 'phoneNumber', 'number', 'mobile']);
  if (phoneRaw === undefined) return { error: 'no phone or chatId' };
  const p = normalisePhone(phoneRaw);
  return p.ok ? personalChatId(p.digits) : { error: `phone: ${p.reason}` };
}

function parseRow(row: SourcedRow, input: ContactsImportInput): Contact | ContactRowResult {
  const { value, where } = row;
  const bad = (error: string): ContactRowResult => ({ where, outcome: 'invalid', error });
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return bad('expected a record with phone or chatId and firstName');
  const chatId = parseChatId(value);
  if (typeof chatId !== 'string') return bad(chatId.error);
  const firstRaw = pickField(value, ['firstName', 'first_name', 'name']);
  const lastRaw = pickField(value, ['lastName', 'last_name', 'surname']);
  const firstName = firstRaw === undefined ? '' : String(firstRaw).trim();
  if (firstName === '' && input.mode !== 'delete') return { ...bad('firstName is required (and must not be empty)'), chatId };
  const saveRaw = pickField(value, ['saveInAddressbook']);
  let save = input.saveInAddressbook;
  if (saveRaw !== undefined) {
    const b = parseBool(saveRaw);
    if (b === undefined) return { ...bad(`saveInAddressbook '${String(saveRaw)}' is not true/false`), chatId };
    save = b;
  }
  const lastName = lastRaw === undefined ? undefined : String(lastRaw).trim() || undefined;
  return { chatId, firstName, lastName, saveInAddressbook: save };
}

/** Contacts still to apply, in file order; invalid rows and duplicates are recorded as met. */
async function* plan(ctx: ActionContext, input: ContactsImportInput, job: Job): AsyncGenerator<{ c: Contact; where: string }> {
  for await (const row of readRows(ctx, CONTACTS_IMPORT, { file: input.file, items: input.items })) {
    job.tally.total++;
    const parsed = parseRow(row, input);
    const key = `#${row.index}`;
    const first = 'outcome' in parsed ? undefined : job.seen.get(parsed.chatId);
    if ('outcome' in parsed || first !== undefined) {
      if (job.done.delete(key)) continue;
      const r: ContactRowResult =
        'outcome' in parsed ? parsed : { where: row.where, chatId: parsed.chatId, outcome: 'duplicate', error: duplicateOf(first!) };
      await job.window.push(
        async () => r,
        (result) => finishRecord(ctx, job, key, result),
      );
      continue;
    }
    job.seen.set(parsed.chatId, row.where);
    if (!job.done.delete(parsed.chatId)) yield { c: parsed, where: row.where };
  }
}

// ---- load -----------------------------------------------------------------------

async function load(ctx: ActionContext, input: ContactsImportInput): Promise<Job> {
  const reportPath = input.report ?? defaultReport(ctx, 'csv');
  reportFormat(CONTACTS_IMPORT, reportPath);
  const counters = new JobCounters(ctx);
  counters.total = await countRows(ctx, CONTACTS_IMPORT, { file: input.file, items: input.items });
  const report = await openReport({
    action: CONTACTS_IMPORT,
    runId: ctx.run.id,
    path: ctx.resolvePath(reportPath),
    columns: CONTACT_REPORT_COLUMNS,
  });
  const tally = Object.fromEntries([...Object.keys(COUNTER), 'total'].map((k) => [k, 0])) as Tally;
  const job: Job = {
    dryRun: input.dryRun || ctx.run.dryRun,
    reportPath,
    report,
    counters,
    guard: new FailureGuard(CONTACTS_IMPORT, ctx.instance.name, input.maxConsecutiveFailures),
    // 16 in flight keeps the intent list (written before every call) small.
    journal: new JournalWriter<Entry>(ctx.journal, 16),
    intents: new Set(await intentList(ctx)),
    mirror: ctx.shared(contactsNs(ctx.instance.identity)),
    done: new Set(),
    seen: new RowIndex(),
    tally,
    calls: 0,
    window: new InFlight(inFlightLimit(input.inFlight, input.pace)),
    calling: new Set(),
    intent: new SharedWrite(() => ctx.state.set('intent', [...new Set([...(job.journal.pending() as string[]), ...job.calling])])),
  };
  await replayJournal(ctx, job, (e) => count(job, e.o));
  return job;
}

function count(job: Job, o: ContactOutcome): void {
  job.tally[o]++;
  job.counters.add(COUNTER[o]);
}

/** The durable `intent` list: rows whose write may have reached the service without a durable journal entry. */
async function intentList(ctx: ActionContext): Promise<string[]> {
  const v = await ctx.state.get<string | string[]>('intent');
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

async function finishRecord(ctx: ActionContext, job: Job, key: string, r: ContactRowResult): Promise<void> {
  const row = job.report.keep(r as unknown as Record<string, unknown>);
  await job.journal.append(key, { k: key, o: r.outcome, r: row, ...(r.retryable ? { x: 1 as const } : {}) } satisfies Entry);
  count(job, r.outcome);
  await job.report.writeKept(row);
}

// ---- execute --------------------------------------------------------------------

function describeChange(c: Contact, prev: MirrorEntry | undefined, mode: ContactMode): { outcome: ContactOutcome; change?: string } {
  if (mode === 'delete') return { outcome: 'wouldDelete', change: prev ? 'imported by msgflow before' : 'not imported by msgflow before' };
  if (!prev)
    return {
      outcome: mode === 'edit' ? 'wouldUpdate' : mode === 'add' ? 'wouldAdd' : 'wouldUpsert',
      change: 'not imported by msgflow before',
    };
  const diffs: string[] = [];
  if (prev.f !== c.firstName) diffs.push(`firstName: ${prev.f} → ${c.firstName}`);
  if ((prev.l ?? '') !== (c.lastName ?? '')) diffs.push(`lastName: ${prev.l ?? ''} → ${c.lastName ?? ''}`);
  if (prev.s !== c.saveInAddressbook) diffs.push(`saveInAddressbook: ${prev.s} → ${c.saveInAddressbook}`);
  if (diffs.length === 0) return { outcome: 'unchanged' };
  return { outcome: mode === 'add' ? 'wouldAdd' : 'wouldUpdate', change: diffs.join('; ') };
}

const hasCode = (e: unknown, code: string) => isMsgflowError(e) && e.code === code;

async function applyOne(ctx: ActionContext, c: Contact, mode: ContactMode, hadIntent: boolean): Promise<ContactOutcome> {
  const body = { chatId: c.chatId, firstName: c.firstName, lastName: c.lastName, saveInAddressbook: c.saveInAddressbook };
  const opts = { signal: ctx.signal };
  const expectTrue = (ok: boolean, method: string) => {
    if (!ok) throw new Error(`the service answered ${method}: false`);
  };
  if (mode === 'delete') {
    expectTrue((await ctx.client.deleteContact({ chatId: c.chatId }, opts)).deleteContact, 'deleteContact');
    return 'deleted';
  }
  if (mode === 'edit') {
    expectTrue((await ctx.client.editContact(body, opts)).editContact, 'editContact');
    return 'updated';
  }
  try {
    expectTrue((await ctx.client.addContact(body, opts)).addContact, 'addContact');
    return 'added';
  } catch (e) {
    if (!hasCode(e, 'CONTACT_EXISTS')) throw e;
    // An earlier attempt of this very run may have added it before a crash.
    if (mode === 'add') return hadIntent ? 'added' : 'alreadyExists';
    expectTrue((await ctx.client.editContact(body, opts)).editContact, 'editContact');
    return hadIntent ? 'added' : 'updated';
  }
}

/** A row's outcome, with the failure that counts against the guard (none: a success it hears of). */
interface Applied {
  result: ContactRowResult;
  failure?: { error: unknown };
  ok?: true;
}

/** The work of one row in flight: its call(s) and the mirror. */
async function execute(ctx: ActionContext, input: ContactsImportInput, job: Job, c: Contact, where: string): Promise<Applied> {
  ctx.signal.throwIfAborted();
  const base: ContactRowResult = { where, ...c, outcome: 'failed' };
  if (job.dryRun) {
    const prev = await job.mirror.get<MirrorEntry>(c.chatId);
    return { result: { ...base, ...describeChange(c, prev, input.mode) } };
  }
  // No pacing (delay 0): no pause to await, not even an empty one.
  if (job.calls++ > 0 && input.pace.delay > 0) await pause(ctx.clock, input.pace, ctx.signal);
  // One key lists the rows that may be in flight (this one, the others whose
  // calls are under way, and those whose journal entries are still being
  // written), so a resumed run knows whether an add may already have reached
  // the service.
  const hadIntent = job.intents.has(c.chatId);
  job.calling.add(c.chatId);
  if (input.mode === 'add' || input.mode === 'upsert') await job.intent.written();
  let result: ContactRowResult;
  let failure: { error: unknown } | undefined;
  try {
    const outcome = await applyOne(ctx, c, input.mode, hadIntent);
    result = { ...base, outcome };
    if (outcome === 'deleted') await job.mirror.delete(c.chatId);
    else if (outcome !== 'alreadyExists')
      await job.mirror.set(c.chatId, {
        f: c.firstName,
        ...(c.lastName ? { l: c.lastName } : {}),
        s: c.saveInAddressbook,
        t: ctx.clock.now(),
      } satisfies MirrorEntry);
  } catch (e) {
    if (ctx.signal.aborted) throw ctx.signal.reason ?? e;
    // Nothing was answered: the job stops before recording this row.
    if (classify(e) === 'fatal') job.guard.fail(e, kept(job));
    result = failedRow(e, base);
    failure = { error: e };
    if (result.outcome === 'notOnMessenger') await job.mirror.delete(c.chatId);
  }
  return failure ? { result, failure } : { result, ok: true };
}

/** The commit of one row, in row order: journal (the row leaves `calling` for the journal's pending list), counters, report, guard. */
async function commit(job: Job, ctx: ActionContext, c: Contact, a: Applied): Promise<void> {
  const done = finishRecord(ctx, job, c.chatId, a.result);
  job.calling.delete(c.chatId);
  await done;
  // After the row is counted: the failure that stops the job is one of its `failed`.
  if (a.failure) {
    job.window.failed();
    job.guard.fail(a.failure.error, kept(job));
  } else {
    job.window.succeeded();
    if (a.ok) job.guard.ok();
  }
}

/** What a stopped job keeps, for its JOB_STOPPED message. */
function kept(job: Job): string {
  const t = job.tally;
  return `${t.added + t.updated + t.deleted + t.alreadyExists} rows are done; run again once fixed (finished rows are not sent again)`;
}

function failedRow(e: unknown, base: ContactRowResult): ContactRowResult {
  const error = e instanceof Error ? e.message : String(e);
  if (hasCode(e, 'NOT_ON_MESSENGER'))
    return { ...base, outcome: 'notOnMessenger', error: e instanceof ApiError ? e.serviceMessage : error };
  return { ...base, outcome: 'failed', error, ...(classify(e) === 'retryable' ? { retryable: true } : {}) };
}

// ---- report -----------------------------------------------------------------------

async function finish(ctx: ActionContext, input: ContactsImportInput, job: Job): Promise<ContactsImportSummary> {
  const t = job.tally;
  const summary: ContactsImportSummary = {
    mode: input.mode,
    dryRun: job.dryRun,
    total: t.total,
    added: t.added,
    updated: t.updated,
    deleted: t.deleted,
    alreadyExists: t.alreadyExists,
    notOnMessenger: t.notOnMessenger,
    invalid: t.invalid,
    failed: t.failed,
    duplicates: t.duplicate,
    report: job.reportPath,
  };
  if (job.dryRun) {
    Object.assign(summary, {
      wouldAdd: t.wouldAdd + t.wouldUpsert,
      wouldUpdate: t.wouldUpdate,
      wouldDelete: t.wouldDelete,
      unchanged: t.unchanged,
    });
    summary.wouldChange = t.wouldAdd + t.wouldUpsert + t.wouldUpdate + t.wouldDelete;
  }
  await job.journal.flush();
  await job.report.close({ ...summary });
  job.counters.flush();
  ctx.logger.info(
    `${CONTACTS_IMPORT}: ${summary.added} added, ${summary.updated} updated, ${summary.deleted} deleted, ${summary.notOnMessenger} not on messenger, ${summary.invalid} invalid, ${summary.duplicates} duplicate, ${summary.failed} failed; report ${job.reportPath}`,
  );
  return summary;
}

export const contactsImport = defineAction({
  name: CONTACTS_IMPORT,
  description:
    "Keeps the messenger's contact list in step with a CSV/JSON/YAML file: upsert (add, edit when it exists), add, edit or delete; dry run; numbers not on the messenger are reported, not retried.",
  input: ContactsImportInput,
  dryRun: true,
  countsRecords: true,
  runsOnWorkers: true,
  writes: true,
  output: {
    description:
      'Summary { mode, dryRun, total, added, updated, deleted, alreadyExists, notOnMessenger, invalid, failed, duplicates, report } (+ wouldAdd, wouldUpdate, wouldDelete, wouldChange, unchanged on a dry run); per-row outcomes in the report file.',
  },
  async run(ctx, input): Promise<ContactsImportSummary> {
    const job = await load(ctx, input);
    await runJournaled(
      job,
      plan(ctx, input, job),
      ({ c, where }) => execute(ctx, input, job, c, where),
      ({ c }, a) => commit(job, ctx, c, a),
    );
    return finish(ctx, input, job);
  },
});
