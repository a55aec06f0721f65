/**
 * `contacts.import`: keeps the messenger's contact list in step with a file.
 *
 * The API has no way to read the contact list, so `upsert` adds and, on
 * "already exists", edits; and a dry run predicts changes from what msgflow
 * itself last wrote for each contact (kept per instance in shared state).
 * Numbers not on the messenger are reported, never retried.
 */
import { z } from 'zod';
import { ApiError, FlowError, NetworkError, RateLimitError, isMsgflowError } from '../api/errors.js';
import { isPersonalChatId, personalChatId } from '../api/chat-id.js';
import { defineAction, type ActionContext } from '../engine/action.js';
import { normalisePhone } from './phone.js';
import { loadRows, parseBool, pickField, type SourcedRow } from './rows.js';
import { PaceSchema, pause } from './pace.js';
import { defaultReport, reportFormat, writeReport } from './report.js';

export const CONTACTS_IMPORT = 'contacts.import';

export const CONTACT_MODES = ['upsert', 'add', 'edit', 'delete'] as const;
export type ContactMode = (typeof CONTACT_MODES)[number];

/** Namespace of msgflow's record of what it wrote to each instance's contact list. */
export function contactsNamespace(instanceName: string): string {
  return `contacts:${instanceName}`;
}

export const ContactsImportInput = z
  .strictObject({
    file: z.string().min(1).optional().describe('Data file (CSV with a header line, JSON or YAML list) of contacts, relative to the project.'),
    items: z
      .array(z.unknown())
      .optional()
      .describe('Inline rows: { phone | chatId, firstName, lastName?, saveInAddressbook? } (e.g. `${{ inputs.contacts }}`).'),
    mode: z
      .enum(CONTACT_MODES)
      .default('upsert')
      .describe('upsert: add, and edit when it already exists; add: add only; edit: edit only; delete: delete each row. @default upsert'),
    dryRun: z.boolean().default(false).describe('Show what would change without calling the service (also on with `msgflow run --dry-run`). @default false'),
    saveInAddressbook: z
      .boolean()
      .default(true)
      .describe("Also save into the primary device's phonebook, for rows without their own saveInAddressbook. @default true"),
    pace: PaceSchema.default({ delay: 200, jitter: 0.3 }),
    report: z.string().min(1).optional().describe('Report file, .csv or .json, relative to the project. @default reports/<flow>-<step>-<runId>.csv'),
  })
  .refine((v) => v.file !== undefined || v.items !== undefined, { error: 'give file or items' })
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

interface MirrorEntry {
  firstName: string;
  lastName?: string;
  saveInAddressbook: boolean;
  at: number;
}

function parseRow(row: SourcedRow, input: ContactsImportInput): Contact | ContactRowResult {
  const { value, where } = row;
  const bad = (error: string): ContactRowResult => ({ where, outcome: 'invalid', error });
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return bad('expected a record with phone or chatId and firstName');
  const chatIdRaw = pickField(value, ['chatId']);
  const phoneRaw = pickField(value, ['phone', 'phoneNumber', 'number', 'mobile']);
  let chatId: string;
  if (chatIdRaw !== undefined) {
    if (typeof chatIdRaw !== 'string' || !isPersonalChatId(chatIdRaw.trim()))
      return bad(`chatId '${String(chatIdRaw)}' is not a personal chat ID (digits followed by @c.us)`);
    chatId = chatIdRaw.trim();
  } else if (phoneRaw !== undefined) {
    const p = normalisePhone(phoneRaw);
    if (!p.ok) return bad(`phone: ${p.reason}`);
    chatId = personalChatId(p.digits);
  } else return bad('no phone or chatId');
  const firstRaw = pickField(value, ['firstName', 'first_name', 'name']);
  const lastRaw = pickField(value, ['lastName', 'last_name', 'surname']);
  const firstName = firstRaw === undefined ? '' : String(firstRaw).trim();
  if (firstName === '' && input.mode !== 'delete') return bad('firstName is required (and must not be empty)');
  const saveRaw = pickField(value, ['saveInAddressbook']);
  let save = input.saveInAddressbook;
  if (saveRaw !== undefined) {
    const b = parseBool(saveRaw);
    if (b === undefined) return bad(`saveInAddressbook '${String(saveRaw)}' is not true/false`);
    save = b;
  }
  const lastName = lastRaw === undefined ? undefined : String(lastRaw).trim() || undefined;
  return { chatId, firstName, lastName, saveInAddressbook: save };
}

function describeChange(c: Contact, prev: MirrorEntry | undefined, mode: ContactMode): { outcome: ContactOutcome; change?: string } {
  if (mode === 'delete') return { outcome: 'wouldDelete', change: prev ? 'imported by msgflow before' : 'not imported by msgflow before' };
  if (!prev) return { outcome: mode === 'edit' ? 'wouldUpdate' : mode === 'add' ? 'wouldAdd' : 'wouldUpsert', change: 'not imported by msgflow before' };
  const diffs: string[] = [];
  if (prev.firstName !== c.firstName) diffs.push(`firstName: ${prev.firstName} → ${c.firstName}`);
  if ((prev.lastName ?? '') !== (c.lastName ?? '')) diffs.push(`lastName: ${prev.lastName ?? ''} → ${c.lastName ?? ''}`);
  if (prev.saveInAddressbook !== c.saveInAddressbook) diffs.push(`saveInAddressbook: ${prev.saveInAddressbook} → ${c.saveInAddressbook}`);
  if (diffs.length === 0) return { outcome: 'unchanged' };
  return { outcome: mode === 'add' ? 'wouldAdd' : 'wouldUpdate', change: diffs.join('; ') };
}

const isExists = (e: unknown) => isMsgflowError(e) && e.code === 'CONTACT_EXISTS';
const isNotOnMessenger = (e: unknown) => isMsgflowError(e) && e.code === 'NOT_ON_MESSENGER';

async function applyOne(ctx: ActionContext, c: Contact, mode: ContactMode, hadIntent: boolean): Promise<ContactOutcome> {
  const body = { chatId: c.chatId, firstName: c.firstName, lastName: c.lastName, saveInAddressbook: c.saveInAddressbook };
  const opts = { signal: ctx.signal };
  const expectTrue = (ok: boolean, method: string) => {
    if (!ok) throw new Error(`the service answered ${method}: false`);
  };
  switch (mode) {
    case 'delete':
      expectTrue((await ctx.client.deleteContact({ chatId: c.chatId }, opts)).deleteContact, 'deleteContact');
      return 'deleted';
    case 'edit':
      expectTrue((await ctx.client.editContact(body, opts)).editContact, 'editContact');
      return 'updated';
    case 'add':
    case 'upsert':
      try {
        expectTrue((await ctx.client.addContact(body, opts)).addContact, 'addContact');
        return 'added';
      } catch (e) {
        if (!isExists(e)) throw e;
        if (mode === 'add') {
          // An earlier attempt of this very run may have added it before a crash.
          return hadIntent ? 'added' : 'alreadyExists';
        }
        expectTrue((await ctx.client.editContact(body, opts)).editContact, 'editContact');
        return hadIntent ? 'added' : 'updated';
      }
  }
}

export const contactsImport = defineAction({
  name: CONTACTS_IMPORT,
  description:
    "Keeps the messenger's contact list in step with a CSV/JSON/YAML file: upsert (add, edit when it exists), add, edit or delete; dry run; numbers not on the messenger are reported, not retried.",
  input: ContactsImportInput,
  output: {
    description:
      'Summary { mode, dryRun, total, added, updated, deleted, alreadyExists, notOnMessenger, invalid, failed, duplicates, report }; per-row outcomes in the report file.',
  },
  async run(ctx, input): Promise<ContactsImportSummary> {
    const action = CONTACTS_IMPORT;
    const dryRun = input.dryRun || ctx.run.dryRun;
    const reportPath = input.report ?? defaultReport(ctx, 'csv');
    reportFormat(action, reportPath);
    const rows = await loadRows(ctx, action, { file: input.file, items: input.items });
    const mirror = ctx.shared(contactsNamespace(ctx.instanceName));

    const results: ContactRowResult[] = [];
    const seen = new Map<string, string>();
    const pending: { c: Contact; slot: number }[] = [];
    for (const row of rows) {
      const parsed = parseRow(row, input);
      if ('outcome' in parsed) {
        results.push(parsed);
        continue;
      }
      const first = seen.get(parsed.chatId);
      if (first !== undefined) {
        results.push({ where: row.where, chatId: parsed.chatId, outcome: 'duplicate', error: `same chatId as ${first}; the first row wins` });
        continue;
      }
      seen.set(parsed.chatId, row.where);
      results.push({ where: row.where, ...parsed, outcome: 'failed' });
      pending.push({ c: parsed, slot: results.length - 1 });
    }

    const total = rows.length;
    // The engine's convention: `done` counts successes only, `failed` the rest.
    const bad = () => results.filter((r) => r.outcome === 'invalid' || r.outcome === 'duplicate' || (r.outcome === 'failed' && r.error !== undefined)).length;
    let progressed = 0;
    const tick = () => ctx.progress({ done: ++progressed, total, failed: bad() });
    ctx.progress({ done: 0, total, failed: bad() });

    let calls = 0;
    for (const { c, slot } of pending) {
      ctx.signal.throwIfAborted();
      const base = results[slot]!;
      const key = `r:${c.chatId}`;
      if (dryRun) {
        const prev = await mirror.get<MirrorEntry>(`c:${c.chatId}`);
        results[slot] = { ...base, ...describeChange(c, prev, input.mode) };
        tick();
        continue;
      }
      const recorded = await ctx.state.get<ContactRowResult>(key);
      if (recorded && !recorded.retryable) {
        results[slot] = recorded;
        if (recorded.outcome === 'failed') ctx.progress({ done: progressed, total, failed: bad() });
        else tick();
        continue;
      }
      if (calls > 0) await pause(ctx.clock, input.pace, ctx.signal);
      calls++;
      const hadIntent = (await ctx.state.get<boolean>(`i:${c.chatId}`)) === true;
      if (input.mode === 'add' || input.mode === 'upsert') await ctx.state.set(`i:${c.chatId}`, true);
      let result: ContactRowResult;
      try {
        const outcome = await applyOne(ctx, c, input.mode, hadIntent);
        result = { ...base, outcome, error: undefined };
        if (outcome === 'deleted') await mirror.delete(`c:${c.chatId}`);
        else if (outcome !== 'alreadyExists')
          await mirror.set(`c:${c.chatId}`, {
            firstName: c.firstName,
            lastName: c.lastName,
            saveInAddressbook: c.saveInAddressbook,
            at: ctx.clock.now(),
          } satisfies MirrorEntry);
      } catch (e) {
        if (ctx.signal.aborted) throw ctx.signal.reason ?? e;
        if (isNotOnMessenger(e)) {
          result = { ...base, outcome: 'notOnMessenger', error: (e as ApiError).serviceMessage };
          await mirror.delete(`c:${c.chatId}`);
        } else {
          const retryable = e instanceof NetworkError || e instanceof RateLimitError || (e instanceof ApiError && e.status >= 500);
          result = { ...base, outcome: 'failed', error: isMsgflowError(e) ? e.message : (e as Error).message, retryable: retryable || undefined };
        }
      }
      await ctx.state.set(key, result);
      results[slot] = result;
      if (result.outcome === 'failed') ctx.progress({ done: progressed, total, failed: bad() });
      else tick();
    }

    const count = (o: ContactOutcome) => results.filter((r) => r.outcome === o).length;
    const summary: ContactsImportSummary = {
      mode: input.mode,
      dryRun,
      total,
      added: count('added'),
      updated: count('updated'),
      deleted: count('deleted'),
      alreadyExists: count('alreadyExists'),
      notOnMessenger: count('notOnMessenger'),
      invalid: count('invalid'),
      failed: count('failed'),
      duplicates: count('duplicate'),
      report: reportPath,
    };
    if (dryRun) {
      summary.unchanged = count('unchanged');
      summary.wouldChange = pending.length - summary.unchanged;
    }
    await writeReport(ctx.resolvePath(reportPath), {
      action,
      runId: ctx.run.id,
      generatedAt: ctx.clock.now(),
      summary: { ...summary },
      rows: results as unknown as Record<string, unknown>[],
    });
    if (!dryRun && summary.failed > 0 && summary.failed === pending.length)
      throw new FlowError('JOB_STOPPED', { action, reason: `all ${summary.failed} contacts failed; first error: ${results.find((r) => r.outcome === 'failed')?.error}` });
    ctx.logger.info(
      `${action}: ${summary.added} added, ${summary.updated} updated, ${summary.deleted} deleted, ${summary.notOnMessenger} not on messenger, ${summary.invalid} invalid, ${summary.failed} failed; report ${reportPath}`,
    );
    return summary;
  },
});
