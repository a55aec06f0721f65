/**
 * The shapes the JSON API answers with: built from engine and store records,
 * leaving out what a page must not show (owner host, absolute paths) and
 * cutting large values (a 100,000-row input) to a preview.
 */
import path from 'node:path';
import { createRequire } from 'node:module';
import type Cronstrue from 'cronstrue';
import { nextSlot } from '../engine/schedule/slots.js';
import type { Flow } from '../engine/flow/types.js';
import {
  allCounts,
  runCountFields,
  type ErrorInfo,
  type ItemCounts,
  type ItemResult,
  type RunRecord,
  type StepRecord,
} from '../store/types.js';

/**
 * A run as the API shows it: an allow-list of the record's fields (never its
 * owner host/pid nor its input and flow hashes).
 */
export type RunSummary = Pick<
  RunRecord,
  | 'id'
  | 'flow'
  | 'status'
  | 'trigger'
  | 'dryRun'
  | 'startedAt'
  | 'finishedAt'
  | 'durationMs'
  | 'updatedAt'
  | 'itemsDone'
  | 'itemsFailed'
  | 'itemsInvalid'
  | 'itemsDuplicate'
  | 'itemsSkipped'
  | 'currentStep'
  | 'waitingUntil'
  | 'waitReason'
  | 'error'
  | 'resumes'
  | 'parent'
  | 'slot'
> & { cancelRequested: boolean };

export function toRunSummary(r: RunRecord): RunSummary {
  return {
    id: r.id,
    flow: r.flow,
    status: r.status,
    trigger: r.trigger,
    dryRun: r.dryRun,
    startedAt: r.startedAt,
    finishedAt: r.finishedAt,
    durationMs: r.durationMs,
    updatedAt: r.updatedAt,
    ...runCountFields(r),
    currentStep: r.currentStep,
    waitingUntil: r.waitingUntil,
    waitReason: r.waitReason,
    error: r.error,
    resumes: r.resumes ?? 0,
    cancelRequested: r.cancelRequested === true,
    // A sub-flow's caller, a backfill run's slot: only on the runs that have them.
    ...(r.parent ? { parent: r.parent } : {}),
    ...(r.slot !== undefined ? { slot: r.slot } : {}),
  };
}

/** One step as the dashboard API shows it (GET /api/runs/:id); the progress line's and the expression scope's views of a step are StepView and StepScope. */
export interface StepDetail extends Required<ItemCounts> {
  step: string;
  action: string;
  status: StepRecord['status'];
  forEach: boolean;
  startedAt: number;
  finishedAt?: number;
  durationMs?: number;
  /** Items of a forEach step, records of a job; the counters (ItemCounts) add up to it once the step is over. */
  total?: number;
  /** Records held by a durable wait right now. */
  waiting: number;
  output?: unknown;
  error?: ErrorInfo;
  /** API path of the step's report file, when its output names one. */
  reportUrl?: string;
}

export function toStepDetail(runId: string, s: StepRecord, now: number): StepDetail {
  const output = preview(s.output);
  const report = reportPathOf(s.output);
  return {
    step: s.step,
    action: s.action,
    status: s.status,
    forEach: s.forEach,
    startedAt: s.startedAt,
    finishedAt: s.finishedAt,
    durationMs: (s.finishedAt ?? now) - s.startedAt,
    total: s.total,
    ...allCounts(s),
    waiting: s.waiting ?? 0,
    output,
    error: s.error,
    ...(report ? { reportUrl: `/api/runs/${encodeURIComponent(runId)}/steps/${encodeURIComponent(s.step)}/report` } : {}),
  };
}

/** The `report` a job's output names (a path relative to the project), if any. */
export function reportPathOf(output: unknown): string | undefined {
  if (output && typeof output === 'object' && !Array.isArray(output)) {
    const r = (output as Record<string, unknown>).report;
    if (typeof r === 'string' && r !== '') return r;
  }
  return undefined;
}

export interface FailedItemView {
  step: string;
  index: number;
  attempts: number;
  error?: ErrorInfo;
  finishedAt: number;
}

export function toFailedItem(i: ItemResult): FailedItemView {
  return { step: i.step, index: i.index, attempts: i.attempts, error: i.error, finishedAt: i.finishedAt };
}

/**
 * A value cut for display: arrays longer than `maxItems` keep their first
 * items and say how many more there are, recursively, to a bounded depth.
 */
export function preview(value: unknown, maxItems = 20, depth = 0): unknown {
  if (depth > 6) return '…';
  if (Array.isArray(value)) {
    const head = value.slice(0, maxItems).map((v) => preview(v, maxItems, depth + 1));
    if (value.length > maxItems) head.push(`… ${value.length - maxItems} more (${value.length} in all)`);
    return head;
  }
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = preview(v, maxItems, depth + 1);
    return out;
  }
  return value;
}

export interface TriggerView {
  schedule?: { cron: string; timezone: string; description: string; next?: number; nextLocal?: string };
  startup: boolean;
  overlap: string;
  missed: string;
  /** A notification filter, when the flow is triggered by incoming notifications. */
  notification?: unknown;
}

export function describeCron(cron: string): string {
  try {
    // cronstrue when a schedule is first described (the dashboard, `msgflow runs`), not when a daemon starts.
    const cronstrue = createRequire(import.meta.url)('cronstrue') as typeof Cronstrue;
    return cronstrue.toString(cron, { use24HourTimeFormat: true, verbose: false });
  } catch {
    return cron;
  }
}

/** `2026-11-23 09:00 (Europe/Moscow)`: a time as the flow's timezone sees it. */
export function formatInZone(ms: number, timezone: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone: timezone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(new Date(ms));
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? '';
  return `${get('year')}-${get('month')}-${get('day')} ${get('hour')}:${get('minute')} (${timezone})`;
}

/** `zone`: what a schedule without `timezone` means (the runtime clock's zone). */
export function toTriggerView(flow: Flow, now: number, zone: string): TriggerView {
  const on = flow.on as Flow['on'] & { notification?: unknown };
  const out: TriggerView = { startup: on.startup, overlap: on.overlap, missed: on.missed };
  if (on.schedule) {
    const timezone = on.schedule.timezone ?? zone;
    let next: number | undefined;
    try {
      next = nextSlot(on.schedule.cron, timezone, now);
    } catch {
      next = undefined;
    }
    out.schedule = {
      cron: on.schedule.cron,
      timezone,
      description: describeCron(on.schedule.cron),
      ...(next !== undefined ? { next, nextLocal: formatInZone(next, timezone) } : {}),
    };
  }
  if (on.notification !== undefined) out.notification = on.notification;
  return out;
}

export interface InputView {
  name: string;
  type: string;
  required: boolean;
  description?: string;
  /** The declared data file (relative to the project). */
  file?: string;
  default?: unknown;
}

export function toInputViews(flow: Flow): InputView[] {
  return Object.entries(flow.inputs).map(([name, d]) => ({
    name,
    type: d.file !== undefined ? 'file' : (d.type ?? 'any'),
    required: d.required === true,
    ...(d.description ? { description: d.description } : {}),
    ...(d.file !== undefined ? { file: d.file } : {}),
    ...(d.default !== undefined ? { default: preview(d.default) } : d.value !== undefined ? { default: preview(d.value) } : {}),
  }));
}

/** A path shown relative to the project, never the machine's absolute layout. */
export function projectPath(baseDir: string, file: string): string {
  const rel = path.relative(baseDir, file);
  return rel.startsWith('..') || path.isAbsolute(rel) ? path.basename(file) : rel.split(path.sep).join('/');
}
