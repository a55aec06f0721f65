/**
 * Plan, then apply (`msgflow run CAMPAIGN --plan plan.json`, `msgflow apply
 * plan.json`): the plan file of a broadcast, what it holds and how it is read.
 *
 * A plan says who gets what, from which instance and when: one entry per row
 * of the input, planned (its row, chatId, sticky instance, variant, the
 * message's kind and a summary of it, the planned send time) or skipped with
 * the reason; then the fingerprint of the inputs it was made from (the flow
 * file, the recipients' data file, the pool, paces, window and recipient
 * hours, the opt-outs among the rows) and a summary. It is written as a
 * stream (one entry per line: 100,000 recipients never sit in memory) to a
 * temporary file renamed at the end, so a plan file is whole or absent.
 *
 * The planned times replay the engine's passes (broadcast-core.ts sendPass)
 * on a virtual clock: each pass sends, in the input's order, the recipients
 * whose hours are open and whose sender has room today, spaced by the step's
 * pace and each sender's own; the others wait for the earliest opening. Paces
 * count their mean (their jitter is random), and a send takes no time: a real
 * send lands a little later, which the diff's tolerance allows.
 */
import { createHash } from 'node:crypto';
import { shortHash } from '../util/short-hash.js';
import { createReadStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { MsgflowError } from '../api/errors.js';
import { openReport, ReportSink } from './kit/report.js';

/** What a plan file says it is (and the version of its shape). */
export const PLAN_FORMAT = 'msgflow-campaign-plan/1';

/**
 * How much later than planned a send may go out (beyond the delay of the
 * whole apply after the plan) before the diff lists it.
 */
export const PLAN_LATE_TOLERANCE_MS = 60_000;

/** Why a row is not planned. */
export type SkipReason = 'invalid' | 'duplicate' | 'optedOut' | 'sentEarlier' | 'windowOver' | 'noOpening';

export interface PlannedRecipient {
  /** Where the row is: `data/x.csv:4`, `items[2]`. */
  row: string;
  chatId: string;
  /** The config name of the instance that sends it. */
  instance: string;
  /** The A/B variant (absent for a single message). */
  variant?: string;
  /** The message's kind: text, file, poll, location, contact, buttons. */
  kind: string;
  /** The message as rendered for the recipient: its text, caption or question (at most 80 characters). */
  summary: string;
  /** Planned send time, ISO 8601. */
  at: string;
}

export interface SkippedRecipient {
  row: string;
  chatId?: string;
  skipped: SkipReason;
  /** What is wrong with an invalid row; the first row of a duplicate's chat. */
  reason?: string;
}

export type PlanEntry = PlannedRecipient | SkippedRecipient;

/** What a plan was made from: each part is compared on apply, and the ones that changed are named. */
export interface PlanFingerprint {
  /** The flow file's hash. */
  flow: string;
  /** Each recipients' data file (as the step names it) by the hash of its bytes; `items` for inline recipients. */
  recipients: Record<string, string>;
  /** The pool (instances and who they are, pace, caps, warm-up), the step's pace, window and recipient hours, the campaign. */
  config: string;
  /** The opt-outs among the rows (who is skipped for it). */
  optOut: string;
}

export interface PlanSummary {
  /** The plan file, as given. */
  plan: string;
  /** Recipients planned. */
  recipients: number;
  byInstance: Record<string, number>;
  byVariant: Record<string, number>;
  skipped: Partial<Record<SkipReason, number>>;
  firstAt?: string;
  lastAt?: string;
  /** From the plan's making to its last planned send. */
  durationMs: number;
}

/** A plan file's head: everything but its entries. */
export interface PlanHead {
  format: string;
  flow: string;
  step: string;
  action: string;
  createdAt: string;
  /** The `-i` overrides it was made with (msgflow apply starts the run with them). */
  inputs: Record<string, string>;
  fingerprint: PlanFingerprint;
  summary: PlanSummary;
}

/** sha256 (hex, 16) of a value's JSON. */
export const hashOf = (v: unknown): string => shortHash(JSON.stringify(v));

/** sha256 (hex, 16) of a file's bytes, read as a stream. */
export async function fileHash(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest('hex').slice(0, 16);
}

/** The opt-outs among the rows, in the input's order, as one running hash (PlanFingerprint.optOut). */
export class OptOutHash {
  private readonly h = createHash('sha256');
  add(chatId: string): void {
    this.h.update(`${chatId}\n`);
  }
  digest(): string {
    return this.h.digest('hex').slice(0, 16);
  }
}

/** The parts of `now` that differ from the plan's, as a sentence names them. */
export function changedSince(planned: PlanFingerprint, now: PlanFingerprint): string[] {
  const out: string[] = [];
  if (planned.flow !== now.flow) out.push('the flow file');
  const files = new Set([...Object.keys(planned.recipients), ...Object.keys(now.recipients)]);
  for (const f of files) if (planned.recipients[f] !== now.recipients[f]) out.push(f === 'items' ? 'the inline recipients' : f);
  if (planned.config !== now.config) out.push("the pool, pace, window or recipient hours (config.yaml's pools or the step's with:)");
  if (planned.optOut !== now.optOut) out.push('the opt-out list (who among the recipients is skipped)');
  return out;
}

/** Writes a plan file as a stream: its head, one entry per line, then its fingerprint and summary. */
export class PlanWriter {
  private first = true;

  private constructor(
    private readonly sink: ReportSink,
    private readonly path: string,
    private readonly tmp: string,
  ) {}

  static async open(path: string, head: Omit<PlanHead, 'fingerprint' | 'summary'>): Promise<PlanWriter> {
    await mkdir(dirname(path), { recursive: true });
    const tmp = `${path}.${process.pid}.tmp`;
    const w = new PlanWriter(new ReportSink(tmp), path, tmp);
    const { format, flow, step, action, createdAt, inputs } = head;
    w.sink.write(`${JSON.stringify({ format, flow, step, action, createdAt, inputs }).slice(0, -1)},"recipients":[`);
    return w;
  }

  add(e: PlanEntry): void {
    this.sink.write(`${this.first ? '\n' : ',\n'}${JSON.stringify(e)}`);
    this.first = false;
  }

  async close(fingerprint: PlanFingerprint, summary: PlanSummary): Promise<void> {
    this.sink.write(`\n],"fingerprint":${JSON.stringify(fingerprint)},"summary":${JSON.stringify(summary)}}\n`);
    this.sink.close();
    await rename(this.tmp, this.path);
  }

  async abort(): Promise<void> {
    this.sink.close();
    await rm(this.tmp, { force: true });
  }
}

const invalid = (file: string, field: string, reason: string) => new MsgflowError('PLAN_INVALID', { file, field, reason });

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function str(file: string, o: Record<string, unknown>, key: string, where: string): string {
  const v = o[key];
  if (typeof v !== 'string' || v === '') throw invalid(file, `${where}${key}`, v === undefined ? 'missing' : 'expected a text');
  return v;
}

function stringsOf(file: string, v: unknown, field: string): Record<string, string> {
  if (!isObject(v) || Object.values(v).some((x) => typeof x !== 'string')) throw invalid(file, field, 'expected an object of texts');
  return v as Record<string, string>;
}

/** One entry, checked: the field named when it is wrong. */
function entryOf(file: string, v: unknown, i: number): PlanEntry {
  const at = `recipients[${i}].`;
  if (!isObject(v)) throw invalid(file, `recipients[${i}]`, 'expected an object');
  str(file, v, 'row', at);
  if (v.skipped !== undefined) return v as unknown as SkippedRecipient;
  str(file, v, 'chatId', at);
  str(file, v, 'instance', at);
  if (Number.isNaN(Date.parse(str(file, v, 'at', at)))) throw invalid(file, `${at}at`, 'expected an ISO 8601 time');
  return v as unknown as PlannedRecipient;
}

/** The head of a plan, checked (entries apart). */
function headOf(file: string, top: Record<string, unknown>): PlanHead {
  if (top.format !== PLAN_FORMAT) throw invalid(file, 'format', `expected '${PLAN_FORMAT}': not a plan written by msgflow run --plan`);
  for (const k of ['flow', 'step', 'action', 'createdAt']) str(file, top, k, '');
  const fp = top.fingerprint;
  if (!isObject(fp)) throw invalid(file, 'fingerprint', fp === undefined ? 'missing (the file is cut short?)' : 'expected an object');
  for (const k of ['flow', 'config', 'optOut']) str(file, fp, k, 'fingerprint.');
  stringsOf(file, fp.recipients, 'fingerprint.recipients');
  if (!isObject(top.summary)) throw invalid(file, 'summary', 'missing (the file is cut short?)');
  return { ...(top as unknown as PlanHead), inputs: stringsOf(file, top.inputs ?? {}, 'inputs') };
}

/** The plan's fields besides its recipients, each read whole (they are small). */
const HEAD_PATHS = ['format', 'flow', 'step', 'action', 'createdAt', 'inputs', 'fingerprint', 'summary'].map((k) => `$.${k}`);

/**
 * Reads a plan file as a stream: each entry to `each` (checked), then its
 * head. @throws MsgflowError PLAN_INVALID naming the file and the field
 */
export async function readPlan(path: string, shown: string, each: (e: PlanEntry) => void = () => {}): Promise<PlanHead> {
  const top: Record<string, unknown> = {};
  // The streaming parser when a plan is read, not when every process that can run a campaign starts.
  const { JSONParser } = await import('@streamparser/json-node');
  const input = createReadStream(path);
  const opened = new Promise<void>((resolve, reject) => input.once('open', () => resolve()).once('error', reject));
  await opened.catch((e: NodeJS.ErrnoException) => {
    throw invalid(shown, '(file)', `cannot read it: ${e.code ?? e.message}`);
  });
  // Each top-level field but the recipients by its own path: a path of '$.*' would make the parser
  // build the whole recipients array to hand it over as the field's value (1.7 GB and 29 s for 100,000).
  const parser = input.pipe(new JSONParser({ paths: [...HEAD_PATHS, '$.recipients.*'], keepStack: false }));
  let i = 0;
  try {
    for await (const c of parser as AsyncIterable<{ value: unknown; key: string | number | undefined }>) {
      if (typeof c.key === 'number') each(entryOf(shown, c.value, i++));
      else if (typeof c.key === 'string' && c.key !== 'recipients') top[c.key] = c.value;
    }
  } catch (e) {
    if (e instanceof MsgflowError) throw e;
    throw invalid(shown, '(file)', `not JSON: ${(e as Error).message}`);
  } finally {
    input.destroy();
  }
  return headOf(shown, top);
}

/** What apply keeps of a planned recipient. */
export interface PlannedSend {
  instance: string;
  variant?: string;
  at: number;
}

/** A plan being applied: its head and its planned sends by chat. */
export interface AppliedPlan {
  path: string;
  head: PlanHead;
  sends: Map<string, PlannedSend>;
}

export async function loadPlan(path: string, shown = path): Promise<AppliedPlan> {
  const sends = new Map<string, PlannedSend>();
  const head = await readPlan(path, shown, (e) => {
    if ('skipped' in e) return;
    sends.set(e.chatId, { instance: e.instance, ...(e.variant === undefined ? {} : { variant: e.variant }), at: Date.parse(e.at) });
  });
  return { path, head, sends };
}

/** `reports/x.csv` → `reports/x.plan-diff.csv`. */
export const planDiffPath = (report: string) => report.replace(/(\.[^./]+)?$/, '.plan-diff.csv');

export const PLAN_DIFF_COLUMNS = [
  'chatId',
  'where',
  'difference',
  'outcome',
  'plannedInstance',
  'instance',
  'plannedVariant',
  'variant',
  'plannedAt',
  'sentAt',
] as const;

/** A recipient's line of the run's report, as the diff reads it. */
export interface ReportedLine {
  chatId: string;
  where: string;
  outcome: string;
  instance?: string;
  variant?: string;
  /** ISO 8601. */
  sentAt?: string;
}

/** How the run's outcomes differ from the plan: counts, and one CSV line per recipient that differs. */
export interface PlanDiffCounts {
  planned: number;
  asPlanned: number;
  notSent: number;
  otherInstance: number;
  late: number;
  unplanned: number;
  report: string;
}

/**
 * The diff of a run's report against its plan, written beside the report.
 * `shiftMs`: how much later than the plan's making the apply began (every
 * planned time moves by as much).
 */
export async function openPlanDiff(o: { action: string; runId: string; path: string; shown: string; plan: AppliedPlan; shiftMs: number }) {
  const writer = await openReport({ action: o.action, runId: o.runId, path: o.path, columns: PLAN_DIFF_COLUMNS });
  const n: PlanDiffCounts = {
    planned: o.plan.sends.size,
    asPlanned: 0,
    notSent: 0,
    otherInstance: 0,
    late: 0,
    unplanned: 0,
    report: o.shown,
  };
  const sentNow = (outcome: string) => outcome === 'sent' || outcome === 'sentEarlier';
  return {
    async line(l: ReportedLine): Promise<void> {
      const p = o.plan.sends.get(l.chatId);
      if (!p && !sentNow(l.outcome)) return;
      const sentAt = l.sentAt === undefined ? undefined : Date.parse(l.sentAt);
      const what: string[] = [];
      if (!p) what.push('unplanned');
      else if (!sentNow(l.outcome)) what.push('notSent');
      else {
        if (l.instance !== undefined && l.instance !== p.instance) what.push('otherInstance');
        if (sentAt !== undefined && sentAt > p.at + o.shiftMs + PLAN_LATE_TOLERANCE_MS) what.push('late');
      }
      for (const w of what) n[w as 'notSent']++;
      if (what.length === 0) return void n.asPlanned++;
      await writer.write({
        ...l,
        difference: what.join(' '),
        plannedInstance: p?.instance,
        plannedVariant: p?.variant,
        plannedAt: p ? new Date(p.at).toISOString() : undefined,
      });
    },
    async close(): Promise<PlanDiffCounts> {
      await writer.close({});
      return n;
    },
    abort: () => writer.abort(),
  };
}
