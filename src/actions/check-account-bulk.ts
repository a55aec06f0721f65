/**
 * `checkAccount.bulk`: which numbers and usernames have an account.
 *
 * The messenger penalises frequent existence checks, above all repeated
 * checks of one nonexistent number, so this action is built around not
 * asking twice: results are cached per instance (by its identity) for a TTL,
 * a number found to have no account is never re-checked within that TTL (not
 * even with `force`), and a `rate_limit_exceeded` answer pauses every check
 * of the instance (other runs and flows included) for max(pause, retryAfter)
 * as a durable wait.
 *
 * Cost per record does not grow with the list: rows are streamed, each
 * finished record appends one entry to the step's journal (replayed on resume
 * into a Set of finished keys), and the report is written row by row.
 */
import { z } from 'zod';
import { RateLimitError } from '../api/errors.js';
import { classify } from '../api/failure.js';
import type { CheckAccountResponse } from '../api/types.js';
import { defineAction, type ActionContext } from '../engine/action.js';
import { PauseError } from '../engine/control.js';
import { pauseWait, type PauseRule } from '../engine/run/pauses.js';
import { checkAccountCacheNs } from '../engine/shared.js';
import { isoTime } from '../util/iso-time.js';
import { duration } from './duration.js';
import { normalisePhone, normaliseUsername } from './phone.js';
import { PaceSchema, pause } from './pace.js';
// The job kit, by concern: with: fields, rows in, report out, progress and failures, the journal.
import { fileField, itemsField, maxConsecutiveFailuresField, recordsFrom, reportField } from './kit/inputs.js';
import { countRows, pickField, readRows, type SourcedRow } from '../engine/flow/data-file.js';
import { defaultReport, duplicateOf, openReport, reportFormat } from './kit/report.js';
import { FailureGuard } from './kit/guard.js';
import { JobCounters } from './kit/counters.js';
import { InFlight, inFlightField, inFlightLimit } from './kit/in-flight.js';
import { RowIndex } from './kit/row-index.js';
import { JournalWriter, replayJournal, runJournaled, type JournalEntry, type JournaledJob } from './kit/journaled.js';

export const CHECK_ACCOUNT_BULK = 'checkAccount.bulk';

export const CheckAccountBulkInput = z
  .strictObject({
    file: fileField('numbers/usernames'),
    items: itemsField('records: numbers, `@usernames`, or objects with a phone or username field (e.g. `${{ inputs.leads }}`)'),
    numbers: z
      .array(z.union([z.string(), z.number()]))
      .optional()
      .describe('Inline phone numbers.'),
    usernames: z.array(z.string()).optional().describe('Inline usernames (`@name`).'),
    phoneField: z
      .string()
      .default('phone')
      .describe('Field of a record holding the number (also tried: phoneNumber, number, mobile). @default phone'),
    usernameField: z.string().default('username').describe('Field of a record holding the username. @default username'),
    ttl: duration('How long a result is reused instead of checking again. @default 24h').default(24 * 3_600_000),
    force: z
      .boolean()
      .default(false)
      .describe(
        'Re-check numbers cached as existing and ask the service to bypass its own cache (force:true). Never re-checks a number cached as having no account within `ttl`. @default false',
      ),
    pause: duration(
      "Minimum pause of all checks of the instance after rate_limit_exceeded; the service's retryAfter wins when longer. @default 2h",
    ).default(2 * 3_600_000),
    pace: PaceSchema.default({ delay: 1000, jitter: 0.3 }),
    inFlight: inFlightField(),
    maxConsecutiveFailures: maxConsecutiveFailuresField('checks'),
    report: reportField(),
  })
  .refine(...recordsFrom('file', 'items', 'numbers', 'usernames'))
  .describe('Checks which numbers and usernames have an account, with a per-instance result cache and rate-limit pause.');

export type CheckAccountBulkInput = z.output<typeof CheckAccountBulkInput>;

/**
 * The spec's rule, declared by this action and honoured by every unit of
 * every run (a BullMQ worker's `uses: checkAccount` items too): after
 * `rate_limit_exceeded`, every check of the instance pauses for max(2h, the
 * service's retryAfter); this job's own checks pause for its `pause`.
 */
export const CHECK_ACCOUNT_PAUSE: PauseRule<CheckAccountBulkInput> = {
  scope: 'checkAccount',
  method: 'checkAccount',
  cause: 'rate_limit_exceeded',
  minMs: 2 * 3_600_000,
  raisedBy: (e) => (e instanceof RateLimitError && e.scope === 'checkAccount' ? e.retryAfterMs : undefined),
  minMsFrom: (input) => input.pause,
};

export type CheckStatus = 'exists' | 'none' | 'invalid' | 'duplicate' | 'failed' | 'wouldCheck';

/** The report's columns, fixed. */
export const CHECK_REPORT_COLUMNS = [
  'input',
  'where',
  'phone',
  'username',
  'status',
  'exist',
  'chatId',
  'fromCache',
  'source',
  'checkedAt',
  'error',
  'retryable',
] as const;

/** One line of the report. */
export interface CheckResult {
  input: string;
  where: string;
  phone?: number;
  username?: string;
  status: CheckStatus;
  exist?: boolean;
  chatId?: string;
  fromCache?: boolean;
  source?: 'cache' | 'service';
  checkedAt?: string;
  error?: string;
  retryable?: boolean;
}

/** What the cache keeps per number/username, compact: one small value per key. */
export interface CachedCheck {
  /** exist */
  e: boolean;
  /** checkedAt, ms */
  t: number;
  /** chatId, when it exists */
  c?: string;
  /** username, when the service gave one */
  u?: string;
  /** phoneNumber */
  p?: number;
  /** the service answered from its own cache */
  f?: boolean;
}

export interface CheckAccountBulkSummary {
  total: number;
  unique: number;
  duplicates: number;
  exists: number;
  none: number;
  invalid: number;
  failed: number;
  /** Answers taken from msgflow's cache (no request sent). */
  fromCache: number;
  /** Requests answered by the service for this run. */
  checked: number;
  /** rate_limit_exceeded pauses this run went through. */
  pauses: number;
  /** Dry run: numbers that would be sent to the service. */
  wouldCheck?: number;
  report: string;
}

interface Target {
  /** Cache key: `n:<digits>` or `u:<lowercase username>`. */
  key: string;
  /** Identity in the run's sets: the number itself (cheaper than a string at a million), or the cache key. */
  id: number | string;
  input: string;
  where: string;
  phone?: number;
  username?: string;
}

/** One journal entry per finished record: its key, outcome and report cells. */
interface Entry extends JournalEntry {
  o: CheckStatus;
  /** answered from msgflow's cache */
  c?: 1;
}

/**
 * Everything one execution of the job carries from phase to phase. Journal
 * entries are not awaited one by one: a record whose entry is lost in a crash
 * has its answer in the durable cache (written first), so the resumed run
 * meets it again and answers it from the cache, with no second check.
 */
interface Job extends JournaledJob<Entry> {
  action: string;
  cache: ReturnType<ActionContext['shared']>;
  /** This execution has asked the service (a check or the access probe): cached answers may be given. */
  asked: boolean;
  /** Records in flight: answers overlap, commits (journal, counters, report, guard) go in record order. */
  window: InFlight;
  /** The pause being waited out, which records in flight that meet it too wait with (counted and announced once). */
  pausing?: Promise<void>;
  tally: Omit<CheckAccountBulkSummary, 'report' | 'wouldCheck'> & { wouldCheck: number };
}

const PHONE_FIELDS = ['phoneNumber', 'number', 'mobile', 'tel'];

// ---- plan: a row becomes a target, an invalid result, or a duplicate ---------

function targetOf(row: SourcedRow, input: CheckAccountBulkInput): Target | CheckResult {
  const { value, where } = row;
  let phoneRaw: unknown;
  let userRaw: unknown;
  if (typeof value === 'number') phoneRaw = value;
  else if (typeof value === 'string') {
    if (value.trim().startsWith('@')) userRaw = value;
    else phoneRaw = value;
  } else {
    phoneRaw = pickField(value, [input.phoneField, 'phone', ...PHONE_FIELDS]);
    // A record with both is checked by number: one check per lead.
    if (phoneRaw === undefined) userRaw = pickField(value, [input.usernameField, 'username']);
  }
  const shown = String(phoneRaw ?? userRaw ?? '');
  const invalid = (error: string): CheckResult => ({ input: shown, where, status: 'invalid', error });
  if (phoneRaw === undefined && userRaw === undefined) return invalid(`no ${input.phoneField} or ${input.usernameField} field`);
  if (phoneRaw !== undefined) {
    const p = normalisePhone(phoneRaw);
    return p.ok ? { key: `n:${p.digits}`, id: p.phone, input: shown, where, phone: p.phone } : invalid(p.reason);
  }
  const u = normaliseUsername(userRaw);
  return u.ok ? { key: `u:${u.key}`, id: `u:${u.key}`, input: shown, where, username: u.username } : invalid(u.reason);
}

/** The inline numbers and usernames, after the file's and the items' rows (numbered on from `index`). */
function* inlineRows(input: CheckAccountBulkInput, index: number): Generator<SourcedRow> {
  for (const [i, value] of (input.numbers ?? []).entries()) yield { value, where: `numbers[${i}]`, index: index++ };
  for (const [i, value] of (input.usernames ?? []).entries())
    yield { value: value.startsWith('@') ? value : `@${value}`, where: `usernames[${i}]`, index: index++ };
}

/**
 * Targets still to check, in input order (the file, items, then the inline
 * numbers and usernames); invalid rows and duplicates are reported (and
 * counted) as they are met. The file's rows are taken straight from the
 * reader: one async generator between them and the job, not two.
 */
async function* plan(ctx: ActionContext, input: CheckAccountBulkInput, job: Job): AsyncGenerator<Target> {
  let index = 0;
  for await (const row of readRows(ctx, CHECK_ACCOUNT_BULK, { file: input.file, items: input.items })) {
    index = row.index + 1;
    const t = planRow(ctx, input, job, row);
    if (t && 'key' in t) yield t;
    else await t;
  }
  for (const row of inlineRows(input, index)) {
    const t = planRow(ctx, input, job, row);
    if (t && 'key' in t) yield t;
    else await t;
  }
}

/** A row's target to check; or undefined (finished before a restart), or the commit of the result it has without a call. */
function planRow(ctx: ActionContext, input: CheckAccountBulkInput, job: Job, row: SourcedRow): Target | Promise<void> | undefined {
  job.tally.total++;
  const t = targetOf(row, input);
  // Rows answered without a call are keyed by their position: they have no number to key them by, or share it.
  const key = `#${row.index}`;
  if ('status' in t) {
    job.tally.invalid++;
    return countOrCommit(job, ctx, key, t, 'invalid');
  }
  const first = job.seen.get(t.id);
  if (first !== undefined) {
    job.tally.duplicates++;
    const r: CheckResult = {
      input: t.input,
      where: t.where,
      phone: t.phone,
      username: t.username,
      status: 'duplicate',
      error: duplicateOf(first),
    };
    return countOrCommit(job, ctx, key, r, 'duplicate');
  }
  job.seen.set(t.id, row.where);
  job.tally.unique++;
  // Finished before a restart: met once, so `seen` covers it from now on.
  return job.done.delete(t.id) ? undefined : t;
}

// ---- load: report, counters and what a previous attempt finished ---------------

async function load(ctx: ActionContext, input: CheckAccountBulkInput): Promise<Job> {
  const action = CHECK_ACCOUNT_BULK;
  const reportPath = input.report ?? defaultReport(ctx, 'csv');
  reportFormat(action, reportPath);
  const counters = new JobCounters(ctx);
  counters.total = await countRows(ctx, action, { file: input.file, items: input.items });
  counters.total += (input.numbers?.length ?? 0) + (input.usernames?.length ?? 0);
  const report = await openReport({ action, runId: ctx.run.id, path: ctx.resolvePath(reportPath), columns: CHECK_REPORT_COLUMNS });
  const job: Job = {
    action,
    reportPath,
    report,
    counters,
    guard: new FailureGuard(action, ctx.instance.name, input.maxConsecutiveFailures),
    journal: new JournalWriter<Entry>(ctx.journal),
    cache: ctx.shared(checkAccountCacheNs(ctx.instance.identity)),
    done: new Set(),
    seen: new RowIndex(),
    asked: false,
    window: new InFlight(inFlightLimit(input.inFlight, input.pace)),
    tally: {
      total: 0,
      unique: 0,
      duplicates: 0,
      exists: 0,
      none: 0,
      invalid: 0,
      failed: 0,
      fromCache: 0,
      checked: 0,
      pauses: 0,
      wouldCheck: 0,
    },
    calls: 0,
  };
  job.tally.pauses = (await ctx.state.get<number>('pauses')) ?? 0;
  await replayJournal(ctx, job, (e) => countOutcome(job, e));
  return job;
}

function countOutcome(job: Job, e: Entry): void {
  if (e.o === 'invalid' || e.o === 'duplicate') return; // counted by plan() as it reads the rows
  if (e.o === 'exists' || e.o === 'none') {
    job.tally[e.o]++;
    job.counters.add('done');
    if (e.c) job.tally.fromCache++;
    else job.tally.checked++;
  } else if (e.o === 'failed') {
    job.tally.failed++;
    job.counters.add('failed');
  } else if (e.o === 'wouldCheck') {
    job.tally.wouldCheck++;
    job.counters.add('skipped');
  }
}

/**
 * A result known without a call (invalid, duplicate): counted now when a
 * previous attempt finished it, else committed and counted in its place
 * among the records in flight (progress never runs ahead of the report).
 */
async function countOrCommit(job: Job, ctx: ActionContext, key: string, r: CheckResult, counter: 'invalid' | 'duplicate'): Promise<void> {
  if (job.done.delete(key)) return job.counters.add(counter);
  await job.window.push(
    async () => r,
    async (result) => {
      await finishRecord(job, ctx, key, result);
      job.counters.add(counter);
    },
  );
}

/** Journal (see Job.journal), then counters and report row. */
async function finishRecord(job: Job, ctx: ActionContext, key: number | string, r: CheckResult): Promise<void> {
  const row = job.report.keep(r as unknown as Record<string, unknown>);
  const e: Entry = {
    k: key,
    o: r.status,
    r: row,
    ...(r.source === 'cache' ? { c: 1 as const } : {}),
    ...(r.retryable ? { x: 1 as const } : {}),
  };
  await job.journal.append(key, e);
  countOutcome(job, e);
  await job.report.writeKept(row);
}

// ---- execute: one target ----------------------------------------------------

function fromResponse(t: Target, r: CheckAccountResponse, at: number): CachedCheck {
  return r.exist
    ? {
        e: true,
        t: at,
        c: r.chatId,
        ...(r.username ? { u: r.username } : {}),
        ...(r.phoneNumber ? { p: r.phoneNumber } : {}),
        ...(r.fromCache ? { f: true } : {}),
      }
    : { e: false, t: at, ...(t.phone ? { p: t.phone } : {}) };
}

function toResult(t: Target, c: CachedCheck, source: 'cache' | 'service'): CheckResult {
  return {
    input: t.input,
    where: t.where,
    phone: t.phone ?? c.p,
    username: t.username ?? c.u,
    status: c.e ? 'exists' : 'none',
    exist: c.e,
    chatId: c.c ?? '',
    fromCache: source === 'cache' || c.f === true,
    source,
    checkedAt: isoTime(c.t),
  };
}

/** A target's answer: its result, the failure that counts against the guard, or a success the guard hears of. */
interface Answer {
  result: CheckResult;
  error?: unknown;
  ok?: true;
}

/** The work of one target in flight: from the cache or the service (the cache written first, see Job). */
async function answer(ctx: ActionContext, input: CheckAccountBulkInput, job: Job, t: Target): Promise<Answer> {
  ctx.signal.throwIfAborted();
  const cached = await job.cache.get<CachedCheck>(t.key);
  const fresh = cached !== undefined && ctx.clock.now() - cached.t < input.ttl;
  if (fresh && (!cached.e || !input.force)) {
    if (!job.asked) await confirmAccess(ctx, job);
    return { result: toResult(t, cached, 'cache') };
  }
  if (ctx.run.dryRun) {
    return { result: { input: t.input, where: t.where, phone: t.phone, username: t.username, status: 'wouldCheck' } };
  }
  // No pacing (delay 0): no pause to await, not even an empty one.
  if (job.calls++ > 0 && input.pace.delay > 0) await pause(ctx.clock, input.pace, ctx.signal);
  return checkOne(ctx, input, job, t);
}

/** The commit of one target, in record order: journal, counters and report, then the guard. */
async function commitAnswer(ctx: ActionContext, job: Job, t: Target, a: Answer): Promise<void> {
  await finishRecord(job, ctx, t.id, a.result);
  // After the record is counted: the failure that stops the job is one of its `failed`.
  if (a.error !== undefined) {
    job.window.failed();
    job.guard.fail(a.error, kept(job));
  } else {
    job.window.succeeded();
    if (a.ok) job.guard.ok();
  }
}

/** What a stopped job keeps, for its JOB_STOPPED message. */
const kept = (job: Job) =>
  `${job.tally.exists + job.tally.none} numbers have a result so far; run again once fixed (results are kept, nothing is checked twice)`;

/**
 * The first call of an execution goes to the service, even when the cache
 * could answer every record: a run served wholly from the cache would
 * otherwise "succeed" with a wrong token or an unknown instance. One
 * getStateInstance (no check, no limit spent); a fatal answer (401, 403,
 * nothing listening) stops the job, anything else leaves the cache to answer.
 */
async function confirmAccess(ctx: ActionContext, job: Job): Promise<void> {
  job.asked = true;
  try {
    await ctx.client.getStateInstance({}, { signal: ctx.signal });
  } catch (e) {
    if (ctx.signal.aborted) throw ctx.signal.reason ?? e;
    if (classify(e) === 'fatal') job.guard.fail(e, kept(job));
    ctx.logger.warn(
      `${CHECK_ACCOUNT_BULK}: instance '${ctx.instance.name}' did not answer (${e instanceof Error ? e.message : String(e)}); answering from the cache`,
    );
  }
}

/** Asks the service until it answers for this target (the instance's pauses in between); a failure comes with its error. */
async function checkOne(ctx: ActionContext, input: CheckAccountBulkInput, job: Job, t: Target): Promise<Answer> {
  job.asked = true;
  for (;;) {
    try {
      const req = t.phone !== undefined ? { phoneNumber: t.phone, force: input.force } : { username: t.username!, force: input.force };
      const res = await ctx.client.checkAccount(req, { signal: ctx.signal });
      const entry = fromResponse(t, res, ctx.clock.now());
      // Cache first: if the process dies before the journal entry is written,
      // the resumed run finds the answer in the cache instead of asking again.
      await job.cache.set(t.key, entry);
      return { result: toResult(t, entry, 'service'), ok: true };
    } catch (e) {
      if (ctx.signal.aborted) throw ctx.signal.reason ?? e;
      if (e instanceof PauseError) {
        await honourPause(ctx, job, e);
        continue;
      }
      const klass = classify(e);
      // Nothing was answered: the job stops before recording this target.
      if (klass === 'fatal') job.guard.fail(e, kept(job));
      const error = e instanceof Error ? e.message : String(e);
      const result: CheckResult = {
        input: t.input,
        where: t.where,
        phone: t.phone,
        username: t.username,
        status: 'failed',
        error,
        ...(klass === 'retryable' ? { retryable: true } : {}),
      };
      return { result, error: e };
    }
  }
}

/**
 * The instance's pause (CHECK_ACCOUNT_PAUSE, engine/run/pauses.ts) holds the
 * check: counted and announced when this check raised it, then waited out,
 * durably. The wait re-reads the pause record while it sleeps: lifted
 * (`msgflow pauses lift`, the dashboard's Lift, from any process or host
 * sharing the store) or changed by another run, it ends at once and the
 * check is asked again (the pause, when in force, answers again).
 */
async function honourPause(ctx: ActionContext, job: Job, e: PauseError): Promise<void> {
  job.pausing ??= waitOutPause(ctx, job, e).finally(() => (job.pausing = undefined));
  await job.pausing;
}

/** Counts and announces a pause this job raised, then waits it out (see {@link honourPause}). */
async function waitOutPause(ctx: ActionContext, job: Job, e: PauseError): Promise<void> {
  const p = e.pause;
  if (p.raised) {
    job.tally.pauses++;
    await ctx.state.set('pauses', job.tally.pauses);
    const payload = { instance: ctx.instance.name, identity: ctx.instance.identity, until: p.until, retryAfterMs: p.raised.retryAfterMs };
    ctx.emit('checkAccount.paused', payload);
  }
  ctx.logger.warn(
    `${CHECK_ACCOUNT_BULK}: checks of instance '${ctx.instance.name}' are paused by ${p.reason}; 'msgflow pauses lift ${ctx.instance.name}' lifts the pause`,
  );
  await job.counters.waitingFor(() => ctx.wait(pauseWait(p, ctx.shared)));
  if (ctx.clock.now() < p.until)
    ctx.logger.info(`${CHECK_ACCOUNT_BULK}: the pause of instance '${ctx.instance.name}' was lifted; checking again`);
}

// ---- report: the summary -------------------------------------------------------

async function finish(ctx: ActionContext, job: Job): Promise<CheckAccountBulkSummary> {
  const { wouldCheck, ...tally } = job.tally;
  const summary: CheckAccountBulkSummary = { ...tally, report: job.reportPath, ...(ctx.run.dryRun ? { wouldCheck } : {}) };
  await job.journal.flush();
  await job.report.close({ ...summary });
  job.counters.flush();
  ctx.logger.info(
    `${job.action}: ${summary.exists} exist, ${summary.none} none, ${summary.invalid} invalid, ${summary.duplicates} duplicate, ${summary.failed} failed (${summary.fromCache} from cache)${ctx.run.dryRun ? `, ${wouldCheck} would be checked` : ''}; report ${job.reportPath}`,
  );
  return summary;
}

export const checkAccountBulk = defineAction({
  name: CHECK_ACCOUNT_BULK,
  description:
    'Checks which phone numbers and usernames have an account: normalises and de-duplicates the input, reuses results within a TTL, never re-checks a number without an account within the TTL, pauses every check of the instance after rate_limit_exceeded, paces checks with jitter, and writes a report.',
  input: CheckAccountBulkInput,
  dryRun: true,
  countsRecords: true,
  runsOnWorkers: true,
  pauses: [CHECK_ACCOUNT_PAUSE],
  output: {
    description:
      'Summary counts { total, unique, duplicates, exists, none, invalid, failed, fromCache, checked, pauses, report } (+ wouldCheck on a dry run); per-number results are in the report file.',
  },
  async run(ctx, input): Promise<CheckAccountBulkSummary> {
    const job = await load(ctx, input);
    await runJournaled(
      job,
      plan(ctx, input, job),
      (t) => answer(ctx, input, job, t),
      (t, a) => commitAnswer(ctx, job, t, a),
    );
    return finish(ctx, job);
  },
});
