/**
 * `checkAccount.bulk`: which numbers and usernames have an account.
 *
 * The messenger penalises frequent existence checks, above all repeated
 * checks of one nonexistent number, so this action is built around not
 * asking twice: results are cached per instance for a TTL, a number found to
 * have no account is never re-checked within that TTL (not even with
 * `force`), and a `rate_limit_exceeded` answer pauses every check of the
 * instance (other runs and flows included) for max(pause, retryAfter) as a
 * durable wait.
 */
import { z } from 'zod';
import { AccountCheckError, FlowError, RateLimitError, isMsgflowError, NetworkError, ApiError } from '../api/errors.js';
import type { CheckAccountResponse } from '../api/types.js';
import { defineAction } from '../engine/action.js';
import { duration, formatDuration } from './duration.js';
import { normalisePhone, normaliseUsername } from './phone.js';
import { loadRows, pickField } from './rows.js';
import { PaceSchema, pause } from './pace.js';
import { defaultReport, reportFormat, writeReport } from './report.js';

export const CHECK_ACCOUNT_BULK = 'checkAccount.bulk';

/** Namespace of the per-instance cache and pause, shared by every run and flow. */
export function checkAccountNamespace(instanceName: string): string {
  return `checkAccount:${instanceName}`;
}

export const CheckAccountBulkInput = z
  .strictObject({
    file: z.string().min(1).optional().describe('Data file (CSV with a header line, JSON or YAML list) of numbers/usernames, relative to the project.'),
    items: z
      .array(z.unknown())
      .optional()
      .describe('Inline records: numbers, `@usernames`, or objects with a phone or username field (e.g. `${{ inputs.leads }}`).'),
    numbers: z.array(z.union([z.string(), z.number()])).optional().describe('Inline phone numbers.'),
    usernames: z.array(z.string()).optional().describe('Inline usernames (`@name`).'),
    phoneField: z.string().default('phone').describe('Field of a record holding the number (also tried: phoneNumber, number, mobile). @default phone'),
    usernameField: z.string().default('username').describe('Field of a record holding the username. @default username'),
    ttl: duration('How long a result is reused instead of checking again. @default 24h').default(24 * 3_600_000),
    force: z
      .boolean()
      .default(false)
      .describe(
        'Re-check numbers cached as existing and ask the service to bypass its own cache (force:true). Never re-checks a number cached as having no account within `ttl`. @default false',
      ),
    pause: duration('Minimum pause of all checks of the instance after rate_limit_exceeded; the service\'s retryAfter wins when longer. @default 2h').default(
      2 * 3_600_000,
    ),
    pace: PaceSchema.default({ delay: 1000, jitter: 0.3 }),
    maxConsecutiveFailures: z
      .number()
      .int()
      .min(1)
      .default(5)
      .describe('Stop the job after this many checks in a row fail for network/server reasons (the rest stay unchecked). @default 5'),
    report: z
      .string()
      .min(1)
      .optional()
      .describe('Report file, .csv or .json, relative to the project. @default reports/<flow>-<step>-<runId>.csv'),
  })
  .refine((v) => v.file !== undefined || v.items !== undefined || v.numbers !== undefined || v.usernames !== undefined, {
    error: 'give at least one of file, items, numbers, usernames',
  })
  .describe('Checks which numbers and usernames have an account, with a per-instance result cache and rate-limit pause.');

export type CheckAccountBulkInput = z.output<typeof CheckAccountBulkInput>;

export type CheckStatus = 'exists' | 'none' | 'invalid' | 'failed';

/** One line of the report. */
export interface CheckResult {
  /** The value as given. */
  input: string;
  /** Where it came from: `data/leads.csv row 4`, `numbers[2]`. */
  where: string;
  phone?: number;
  username?: string;
  status: CheckStatus;
  exist?: boolean;
  chatId?: string;
  /** True when the answer came from a cache: msgflow's (`source: cache`) or the service's. */
  fromCache?: boolean;
  source?: 'cache' | 'service';
  /** When the answer was obtained (ISO). */
  checkedAt?: string;
  error?: string;
  /** A network/server failure: checked again when the run resumes. */
  retryable?: boolean;
}

/** What the cache keeps per number/username. */
export interface CachedCheck {
  exist: boolean;
  chatId: string;
  username?: string;
  phoneNumber?: number;
  fromCache: boolean;
  checkedAt: number;
}

/** The instance-wide pause after rate_limit_exceeded. */
export interface CheckPause {
  until: number;
  since: number;
  retryAfterMs: number;
  reason: string;
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
  /** Requests sent to the service by this run. */
  checked: number;
  /** rate_limit_exceeded pauses this run went through. */
  pauses: number;
  /** Dry run: numbers that would be sent to the service. */
  wouldCheck?: number;
  report: string;
}

interface Target {
  key: string;
  input: string;
  where: string;
  phone?: number;
  username?: string;
}

const PHONE_FIELDS = ['phoneNumber', 'number', 'mobile', 'tel'];

function collectTargets(rows: { value: unknown; where: string }[], input: CheckAccountBulkInput) {
  const targets: Target[] = [];
  const invalid: CheckResult[] = [];
  const seen = new Set<string>();
  let duplicates = 0;
  for (const { value, where } of rows) {
    let phoneRaw: unknown;
    let userRaw: unknown;
    if (typeof value === 'number') phoneRaw = value;
    else if (typeof value === 'string') {
      if (value.trim().startsWith('@')) userRaw = value;
      else phoneRaw = value;
    }
    else {
      phoneRaw = pickField(value, [input.phoneField, 'phone', ...PHONE_FIELDS]);
      // A record with both is checked by number: one check per lead.
      if (phoneRaw === undefined) userRaw = pickField(value, [input.usernameField, 'username']);
    }
    const shown = String(phoneRaw ?? userRaw ?? '');
    if (phoneRaw === undefined && userRaw === undefined) {
      invalid.push({ input: shown, where, status: 'invalid', error: `no ${input.phoneField} or ${input.usernameField} field` });
      continue;
    }
    let target: Target;
    if (phoneRaw !== undefined) {
      const p = normalisePhone(phoneRaw);
      if (!p.ok) {
        invalid.push({ input: shown, where, status: 'invalid', error: p.reason });
        continue;
      }
      target = { key: `n:${p.digits}`, input: shown, where, phone: p.phone };
    } else {
      const u = normaliseUsername(userRaw);
      if (!u.ok) {
        invalid.push({ input: shown, where, status: 'invalid', error: u.reason });
        continue;
      }
      target = { key: `u:${u.key}`, input: shown, where, username: u.username };
    }
    if (seen.has(target.key)) {
      duplicates++;
      continue;
    }
    seen.add(target.key);
    targets.push(target);
  }
  return { targets, invalid, duplicates };
}

function fromResponse(t: Target, r: CheckAccountResponse, at: number): CachedCheck {
  return r.exist
    ? { exist: true, chatId: r.chatId, username: r.username, phoneNumber: r.phoneNumber, fromCache: r.fromCache, checkedAt: at }
    : { exist: false, chatId: '', phoneNumber: t.phone, fromCache: false, checkedAt: at };
}

function toResult(t: Target, c: CachedCheck, source: 'cache' | 'service'): CheckResult {
  return {
    input: t.input,
    where: t.where,
    phone: t.phone ?? c.phoneNumber,
    username: t.username ?? c.username,
    status: c.exist ? 'exists' : 'none',
    exist: c.exist,
    chatId: c.chatId,
    fromCache: source === 'cache' || c.fromCache,
    source,
    checkedAt: new Date(c.checkedAt).toISOString(),
  };
}

export const checkAccountBulk = defineAction({
  name: CHECK_ACCOUNT_BULK,
  description:
    'Checks which phone numbers and usernames have an account: normalises and de-duplicates the input, reuses results within a TTL, never re-checks a number without an account within the TTL, pauses every check of the instance after rate_limit_exceeded, paces checks with jitter, and writes a report.',
  input: CheckAccountBulkInput,
  output: {
    description:
      'Summary counts { total, unique, duplicates, exists, none, invalid, failed, fromCache, checked, pauses, report }; per-number results are in the report file.',
  },
  async run(ctx, input): Promise<CheckAccountBulkSummary> {
    const action = CHECK_ACCOUNT_BULK;
    const reportPath = input.report ?? defaultReport(ctx, 'csv');
    reportFormat(action, reportPath);
    const rows = await loadRows(ctx, action, { file: input.file, items: input.items });
    input.numbers?.forEach((value, i) => rows.push({ value, where: `numbers[${i}]` }));
    input.usernames?.forEach((value, i) =>
      rows.push({ value: value.startsWith('@') ? value : `@${value}`, where: `usernames[${i}]` }),
    );
    const { targets, invalid, duplicates } = collectTargets(rows, input);

    const shared = ctx.shared(checkAccountNamespace(ctx.instanceName));
    const results = new Map<string, CheckResult>(await ctx.state.entries<CheckResult>('r:'));
    let pauses = (await ctx.state.get<number>('pauses')) ?? 0;
    const total = targets.length + invalid.length;
    let wouldCheck = 0;
    const failedCount = () => [...results.values()].filter((r) => r.status === 'failed').length;
    // The engine's convention: `done` counts successes only, `failed` the rest (invalid included).
    const report = () => {
      const failed = failedCount();
      ctx.progress({ done: results.size - failed, total, failed: failed + invalid.length });
    };

    const honourPause = async () => {
      const p = await shared.get<CheckPause>('pause');
      if (p && p.until > ctx.clock.now()) {
        ctx.logger.warn(`${action}: checks of instance '${ctx.instanceName}' paused until ${new Date(p.until).toISOString()}`, {
          reason: p.reason,
        });
        // The key is derived from the pause itself, so after a restart the
        // same wait is found and only the remaining time is slept.
        await ctx.wait({ until: p.until, reason: p.reason, key: `checkAccount-pause-${p.until}` });
      }
    };

    report();
    let consecutiveFailures = 0;
    for (let i = 0; i < targets.length; i++) {
      const t = targets[i]!;
      const rkey = `r:${t.key}`;
      const prev = results.get(rkey);
      if (prev && !prev.retryable) continue;
      ctx.signal.throwIfAborted();

      const now = ctx.clock.now();
      const cached = await shared.get<CachedCheck>(t.key);
      const fresh = cached !== undefined && now - cached.checkedAt < input.ttl;
      if (fresh && (!cached.exist || !input.force)) {
        const r = toResult(t, cached, 'cache');
        await ctx.state.set(rkey, r);
        results.set(rkey, r);
        report();
        continue;
      }
      if (ctx.run.dryRun) {
        wouldCheck++;
        results.set(rkey, { input: t.input, where: t.where, phone: t.phone, username: t.username, status: 'failed', error: 'dry run: would be checked' });
        continue;
      }

      let outcome: CheckResult | undefined;
      let httpRetries = 0;
      while (outcome === undefined) {
        await honourPause();
        ctx.signal.throwIfAborted();
        try {
          const req = t.phone !== undefined ? { phoneNumber: t.phone } : { username: t.username! };
          const res = await ctx.client.checkAccount({ ...req, force: input.force }, { signal: ctx.signal });
          const entry = fromResponse(t, res, ctx.clock.now());
          // Cache first: if the process dies before the step state is written,
          // the resumed run finds the answer in the cache instead of asking again.
          await shared.set(t.key, entry);
          outcome = toResult(t, entry, 'service');
          consecutiveFailures = 0;
        } catch (e) {
          if (ctx.signal.aborted) throw ctx.signal.reason ?? e;
          if (e instanceof RateLimitError && e.scope === 'checkAccount') {
            const since = ctx.clock.now();
            const waitMs = Math.max(input.pause, e.retryAfterMs);
            const current = await shared.get<CheckPause>('pause');
            const until = Math.max(since + waitMs, current?.until ?? 0);
            const reason = `rate_limit_exceeded on instance '${ctx.instanceName}': all account checks paused for ${formatDuration(until - since)} (service asked ${formatDuration(e.retryAfterMs)})`;
            await shared.set('pause', { until, since, retryAfterMs: e.retryAfterMs, reason } satisfies CheckPause);
            pauses++;
            await ctx.state.set('pauses', pauses);
            ctx.emit('checkAccount.paused', { instance: ctx.instanceName, until, retryAfterMs: e.retryAfterMs });
            continue;
          }
          if (e instanceof RateLimitError && httpRetries < 3) {
            httpRetries++;
            await ctx.clock.sleep(Math.max(e.retryAfterMs, input.pace.delay, 1000), ctx.signal);
            continue;
          }
          if (e instanceof AccountCheckError) {
            const done = [...results.values()].filter((r) => r.status !== 'failed').length;
            throw new FlowError(
              'JOB_STOPPED',
              {
                action,
                reason: `instance '${ctx.instanceName}' cannot check accounts: ${e.reason}. ${done} of ${targets.length} numbers have a result; run again once the instance is authorized (results are kept, nothing is checked twice)`,
              },
              { cause: e },
            );
          }
          const retryable = e instanceof NetworkError || (e instanceof ApiError && e.status >= 500) || e instanceof RateLimitError;
          outcome = {
            input: t.input,
            where: t.where,
            phone: t.phone,
            username: t.username,
            status: 'failed',
            error: isMsgflowError(e) ? e.message : String(e),
            retryable: retryable || undefined,
          };
          if (retryable) consecutiveFailures++;
        }
      }
      await ctx.state.set(rkey, outcome);
      results.set(rkey, outcome);
      report();
      if (consecutiveFailures >= input.maxConsecutiveFailures) {
        throw new FlowError('JOB_STOPPED', {
          action,
          reason: `${consecutiveFailures} checks in a row failed (last: ${outcome.error}); the remaining numbers were not checked`,
        });
      }
      if (outcome.source === 'service' && i < targets.length - 1) await pause(ctx.clock, input.pace, ctx.signal);
    }

    const all = [...targets.map((t) => results.get(`r:${t.key}`)!).filter(Boolean), ...invalid];
    const count = (s: CheckStatus) => all.filter((r) => r.status === s).length;
    const summary: CheckAccountBulkSummary = {
      total: rows.length,
      unique: targets.length,
      duplicates,
      exists: count('exists'),
      none: count('none'),
      invalid: invalid.length,
      failed: ctx.run.dryRun ? 0 : count('failed'),
      fromCache: all.filter((r) => r.source === 'cache').length,
      checked: all.filter((r) => r.source === 'service').length,
      pauses,
      report: reportPath,
    };
    if (ctx.run.dryRun) summary.wouldCheck = wouldCheck;
    await writeReport(ctx.resolvePath(reportPath), {
      action,
      runId: ctx.run.id,
      generatedAt: ctx.clock.now(),
      summary: { ...summary },
      rows: all.map((r) => (ctx.run.dryRun && r.error === 'dry run: would be checked' ? { ...r, status: 'wouldCheck', error: undefined } : r)) as unknown as Record<string, unknown>[],
    });
    ctx.logger.info(
      `${action}: ${summary.exists} exist, ${summary.none} none, ${summary.invalid} invalid, ${summary.failed} failed (${summary.fromCache} from cache); report ${reportPath}`,
    );
    return summary;
  },
});
