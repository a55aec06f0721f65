/**
 * The JSON API behind the dashboard (docs/dashboard.md lists every route).
 * Handlers read through the Runtime's engine and store; the pages use
 * nothing else.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { MsgflowError } from '../api/errors.js';
import type { Flow } from '../engine/flow/types.js';
import { listPauses, type PauseRecord } from '../engine/run/pauses.js';
import { liftWithAlerts } from '../engine/alerts/campaign.js';
import { RUN_LOG_STREAM, type RunLogLine } from '../engine/run/run-log.js';
import type { Runtime } from '../runtime/runtime.js';
import { identityOf } from '../config/identity.js';
import { dataFolders, holdsNonFinite, inDataFolders } from '../engine/flow/inputs.js';
import { RESERVED_KEYS } from '../util/config-issues.js';
import { zoneOf } from '../util/clock.js';
import { planBackfill, runBackfill, type BackfillSlot } from '../engine/schedule/backfill.js';
import { RESUMABLE_STATUSES, type RunQuery, type RunRecord, type RunStatus } from '../store/types.js';
import type { InstanceProbe } from './instances.js';
import type { RunIndex } from './run-index.js';
import { sampleEvent, startWaits } from './run-now.js';
import {
  preview,
  projectPath,
  reportPathOf,
  toFailedItem,
  toInputViews,
  toRunSummary,
  toStepDetail,
  toTriggerView,
  type FailedItemView,
} from './views.js';

/** At most this many failed items per step in a run's answer. */
export const FAILED_ITEMS_SHOWN = 200;

const STATUSES: readonly RunStatus[] = ['running', 'waiting', 'succeeded', 'failed', 'interrupted', 'cancelled'];

export interface PauseView {
  key: string;
  instance: string;
  identity: string;
  scope: string;
  since?: number;
  until: number;
  retryAfterMs?: number;
  reason: string;
  active: boolean;
}

export interface ApiContext {
  runtime: Runtime;
  index: RunIndex;
  now: () => number;
  /**
   * Answers of GET /api/runs/:id for finished runs, which do not change: a
   * run of 100,000 items replays its item log once, not per request. Keyed by
   * id, checked against the record's updatedAt.
   */
  detailCache?: Map<string, DetailEntry>;
  /** Asks instances for their state and queue, and counts opt-outs (cached); without it the answer has pauses only. */
  instances?: InstanceProbe;
  /** Reads of run details under way, shared by concurrent requests. */
  inflight?: Map<string, Promise<RunDetail>>;
}

/** At most this many finished runs' answers are kept. */
const DETAIL_CACHE_SIZE = 32;

export type RunDetail = Awaited<ReturnType<typeof readRunDetail>>;

/** A run's answer; `text` is its serialised form, filled once by the server for a cached (finished) run. */
export interface DetailEntry {
  updatedAt: number;
  value: RunDetail;
  text?: string;
}

const bad = (field: string, reason: string) => new MsgflowError('UI_BAD_REQUEST', { field, reason });
const notFound = (what: string) => new MsgflowError('UI_NOT_FOUND', { what });

function loadedFlows(ctx: ApiContext): { flows: Flow[]; errors: { file?: string; message: string }[] } {
  const { flows, errors } = ctx.runtime.flows();
  return {
    flows,
    errors: errors.map((e) => ({ message: e.message })),
  };
}

function flowByName(ctx: ApiContext, name: string): Flow {
  const flow = ctx.runtime.flows().flows.find((f) => f.name === name);
  if (!flow) throw notFound(`flow '${name}'`);
  return flow;
}

export async function listFlows(ctx: ApiContext) {
  const { flows, errors } = loadedFlows(ctx);
  const now = ctx.now();
  const out = await Promise.all(
    flows.map(async (f) => {
      const [last] = await ctx.index.list({ flow: f.name, limit: 1 });
      return {
        name: f.name,
        description: f.description,
        instance: f.instance,
        file: projectPath(ctx.runtime.config.baseDir, f.file),
        trigger: toTriggerView(f, now, zoneOf(ctx.runtime.clock)),
        // on.notification ({ type, text?, chatId?, instance }), or null: the flow is not started by notifications.
        notification: f.on.notification ? { ...f.on.notification } : null,
        inputs: toInputViews(f),
        steps: f.steps.map((s) => ({ id: s.id, uses: s.uses, forEach: s.forEach !== undefined })),
        lastRun: last ? toRunSummary(last) : null,
      };
    }),
  );
  return { flows: out, errors };
}

/** GET /api/flows/:name/preflight: what a run started now would meet before its work (a closed send window). */
export function preflight(ctx: ApiContext, flowName: string) {
  const flow = flowByName(ctx, flowName);
  const at = ctx.now();
  return { flow: flow.name, at, waits: startWaits(flow, ctx.runtime.registry, at, zoneOf(ctx.runtime.clock)) };
}

/** The query of GET /api/runs, validated. */
export function parseRunQuery(params: URLSearchParams): RunQuery {
  const flow = params.get('flow') || undefined;
  const statusParam = params.get('status') || undefined;
  let status: RunStatus[] | undefined;
  if (statusParam) {
    status = statusParam.split(',').map((s) => s.trim()) as RunStatus[];
    const wrong = status.find((s) => !STATUSES.includes(s));
    if (wrong) throw bad('status', `'${wrong}' is not a run status (${STATUSES.join(', ')})`);
  }
  const limitParam = params.get('limit');
  let limit = 50;
  if (limitParam !== null) {
    limit = Number(limitParam);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      throw bad('limit', `expected an integer from 1 to 1000, got '${limitParam}'`);
  }
  return { flow, status, limit };
}

export async function getRun(ctx: ApiContext, id: string): Promise<DetailEntry> {
  // A run the index holds as finished does not change any more (a retry is a new run): no need to read it again.
  const known = ctx.index.get(id);
  const run = known && !RESUMABLE_STATUSES.includes(known.status) ? known : await ctx.index.refresh(id);
  if (!run) throw notFound(`run '${id}'`);
  const finished = !RESUMABLE_STATUSES.includes(run.status);
  const cache = ctx.detailCache;
  const hit = cache?.get(id);
  if (finished && hit && hit.updatedAt === run.updatedAt) return hit;
  // Concurrent requests for one run share one read.
  const key = `${id}\u0000${run.updatedAt}`;
  const inflight = (ctx.inflight ??= new Map());
  let pending = inflight.get(key);
  if (!pending) {
    pending = readRunDetail(ctx, run).finally(() => inflight.delete(key));
    inflight.set(key, pending);
  }
  const entry: DetailEntry = { updatedAt: run.updatedAt, value: await pending };
  if (finished && cache) {
    cache.delete(id);
    cache.set(id, entry);
    // Oldest insertion first: Map keeps insertion order.
    while (cache.size > DETAIL_CACHE_SIZE) cache.delete(cache.keys().next().value!);
  }
  return entry;
}

async function readRunDetail(ctx: ApiContext, run: RunRecord) {
  const { engine, store } = ctx.runtime;
  const id = run.id;
  const [inputs, steps, waits] = await Promise.all([store.loadInputs(id), engine.getSteps(id), store.listWaits(id)]);
  const now = ctx.now();
  const failedItems: FailedItemView[] = [];
  const failedTruncated: Record<string, number> = {};
  for (const s of steps) {
    if (!s.forEach || s.failed === 0) continue;
    const items = await store.getItems(id, s.step);
    let n = 0;
    for (const item of items.values()) {
      if (item.status !== 'failed') continue;
      if (n < FAILED_ITEMS_SHOWN) failedItems.push(toFailedItem(item));
      n++;
    }
    if (n > FAILED_ITEMS_SHOWN) failedTruncated[s.step] = n;
  }
  return {
    run: toRunSummary(run),
    inputs: preview(shownInputs(ctx, run, inputs ?? {})),
    // The notification a run of a notification-triggered flow started with (a sample one for Run now).
    ...(run.event !== undefined ? { event: preview(run.event) } : {}),
    steps: steps.map((s) => toStepDetail(id, s, now)),
    failedItems,
    failedTruncated,
    waits: waits.map((w) => ({ key: w.key, step: w.step, item: w.item, until: w.until, reason: w.reason })),
    logs: await logLines(ctx, id).catch(() => []),
  };
}

/** `data/, lists/`: an input's data folders as the project names them. */
function shownFolders(ctx: ApiContext, flow: Flow, name: string): string {
  return dataFolders(flow, name)
    .map((f) => `${projectPath(ctx.runtime.config.baseDir, f)}/`)
    .join(', ');
}

/** What a run page shows in place of a data file it may not show. */
export const INPUT_NOT_SHOWN = '(not shown: a data file outside the data folders)';

/**
 * The run's inputs as the token-free API may show them: an input read from a
 * data file outside its data folders (a `-i` path from the command line) is
 * replaced by INPUT_NOT_SHOWN. A run that did not record where its files lay
 * (older runs) shows none of its flow's data-file inputs, nor any input at
 * all once its flow is gone.
 */
function shownInputs(ctx: ApiContext, run: RunRecord, inputs: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...inputs };
  let hidden: string[];
  if (run.dataInputs) hidden = Object.keys(run.dataInputs).filter((n) => !run.dataInputs![n]);
  else {
    const flow = ctx.runtime.flows().flows.find((f) => f.name === run.flow);
    hidden = flow ? Object.keys(flow.inputs).filter((n) => flow.inputs[n]!.file !== undefined) : Object.keys(inputs);
  }
  for (const name of hidden) if (Object.hasOwn(out, name)) out[name] = INPUT_NOT_SHOWN;
  return out;
}

/**
 * JSON values to the strings `-i key=value` would give, so that the API
 * validates and coerces inputs exactly like the command line. A data file
 * named over HTTP must be in the input's data folders: the API reads no
 * other file of the project (config.yaml, the store's files), nor of the
 * machine.
 */
export async function inputsToOverrides(ctx: ApiContext, flow: Flow, body: unknown): Promise<Record<string, string>> {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw bad('inputs', 'expected a JSON object of input names to values');
  // No prototype: an input named `__proto__` is a key (refused by name), not a silent no-op.
  const out = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(body as Record<string, unknown>)) {
    const field = `inputs.${name}`;
    if (RESERVED_KEYS.has(name)) throw bad(field, `'${name}' cannot be an input name: it names JavaScript object internals`);
    if (value === null || value === undefined) throw bad(field, 'expected a value, got null');
    // JSON.parse reads 1e999 as Infinity, which JSON would store as null.
    if (holdsNonFinite(value)) throw bad(field, 'holds a number too large to store (e.g. 1e999): JSON would keep it as null');
    let raw: string;
    if (typeof value === 'string') raw = value;
    else if (typeof value === 'number' || typeof value === 'boolean') raw = String(value);
    else raw = JSON.stringify(value);
    const def = flow.inputs[name];
    if (def?.file !== undefined) {
      const abs = path.resolve(ctx.runtime.config.baseDir, raw);
      if (!(await inDataFolders(flow, name, abs)))
        throw bad(
          field,
          `a data file given over the API must be in the input's data folders (${shownFolders(ctx, flow, name)}), got '${raw}'`,
        );
      raw = abs;
    }
    out[name] = raw;
  }
  return out;
}

export async function startRun(ctx: ApiContext, flowName: string, body: unknown) {
  const flow = flowByName(ctx, flowName);
  if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body)))
    throw bad('body', 'expected a JSON object { "inputs": { ... } }');
  const b = (body ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(b))
    if (!['inputs', 'dryRun', 'event', 'applyPlan'].includes(key))
      throw bad(key, "unknown field: expected 'inputs', 'dryRun', 'event' or 'applyPlan'");
  if (b.dryRun !== undefined && typeof b.dryRun !== 'boolean') throw bad('dryRun', 'expected true or false');
  // The plan `msgflow apply` hands over (an absolute path): the run sends exactly it. Only applied here: a plan is written by the CLI's own process.
  if (b.applyPlan !== undefined && (typeof b.applyPlan !== 'string' || !path.isAbsolute(b.applyPlan)))
    throw bad('applyPlan', 'expected the absolute path of a plan file');
  const plan = typeof b.applyPlan === 'string' ? { plan: { mode: 'apply' as const, path: b.applyPlan } } : {};
  const inputs = await inputsToOverrides(ctx, flow, b.inputs);
  const event = b.event === undefined ? undefined : sampleEvent(flow, b.event, ctx.now());
  let handle;
  try {
    handle = await ctx.runtime.engine.start(flow, {
      inputs,
      dryRun: b.dryRun === true,
      trigger: 'manual',
      ...(event ? { event } : {}),
      ...plan,
    });
  } catch (e) {
    // Inputs that do not resolve name the input: a 400 on the field `inputs.NAME`.
    // INPUT_ARG_INVALID: an unknown or ill-typed input (what `-i` answers with exit 2).
    if (e instanceof MsgflowError && e.code === 'INPUT_ARG_INVALID') {
      throw bad(typeof e.params.input === 'string' ? `inputs.${e.params.input}` : 'inputs', String(e.params.reason ?? e.message));
    }
    if (e instanceof MsgflowError && e.code === 'FLOW_INVALID') {
      const field = typeof e.params.path === 'string' ? e.params.path : 'inputs';
      throw bad(field, String(e.params.reason ?? e.message));
    }
    throw e;
  }
  // The run goes on without the request; its end shows through /api/events.
  void handle.done.catch(() => {});
  await ctx.index.refresh(handle.runId);
  return { runId: handle.runId, flow: flow.name };
}

/**
 * POST /api/flows/:name/backfill `{ from, to }` (ms or ISO times): decides
 * the flow's slots in the range and starts their runs in this daemon's engine
 * (once each, within the flow's concurrency); answers with the slots at once.
 */
export async function startBackfill(ctx: ApiContext, flowName: string, body: unknown) {
  const flow = flowByName(ctx, flowName);
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw bad('body', 'expected a JSON object { "from": ..., "to": ... }');
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) if (!['from', 'to'].includes(key)) throw bad(key, "unknown field: expected 'from' and 'to'");
  const time = (field: 'from' | 'to'): number => {
    const v = b[field];
    const t = typeof v === 'number' ? v : typeof v === 'string' ? Date.parse(v) : NaN;
    if (!Number.isFinite(t)) throw bad(field, 'expected a time: ms since the epoch or an ISO 8601 string');
    return t;
  };
  const { engine, store, clock } = ctx.runtime;
  const slots = await planBackfill(store, clock, flow, time('from'), time('to'));
  const onStart = (s: BackfillSlot) => void ctx.index.refresh(s.runId).catch(() => {});
  void runBackfill(engine, flow, slots, { onStart }).catch((e: unknown) =>
    ctx.runtime.bus.emit('log', {
      level: 'error',
      message: `backfill of ${flow.name} stopped: ${e instanceof Error ? e.message : String(e)}`,
    }),
  );
  return { flow: flow.name, slots };
}

/**
 * Cancels a run through the engine: a run nobody executes is cancelled at
 * once; a live owner (this process or another) is asked to stop at its next
 * item boundary (`pending: true`).
 */
export async function cancelRun(ctx: ApiContext, id: string) {
  const run = await ctx.index.refresh(id);
  if (!run) throw notFound(`run '${id}'`);
  if (!RESUMABLE_STATUSES.includes(run.status)) {
    throw new MsgflowError('UI_CONFLICT', {
      reason: `run '${id}' is ${run.status}: only a running, waiting or interrupted run can be cancelled`,
    });
  }
  const result = await ctx.runtime.engine.cancel(id);
  await ctx.index.refresh(id);
  return { runId: id, pending: result.pending, status: result.run.status };
}

/** A new run that redoes only the failed items of a finished run (the engine's retry, as `msgflow runs retry`). */
export async function retryRun(ctx: ApiContext, id: string) {
  const run = await ctx.index.refresh(id);
  if (!run) throw notFound(`run '${id}'`);
  if (RESUMABLE_STATUSES.includes(run.status)) {
    throw new MsgflowError('UI_CONFLICT', { reason: `run '${id}' is ${run.status}: only a finished run can be retried` });
  }
  const flow = flowByName(ctx, run.flow);
  const handle = await ctx.runtime.engine.retry(id, flow);
  void handle.done.catch(() => {});
  await ctx.index.refresh(handle.runId);
  return { runId: handle.runId, flow: flow.name, retryOf: id };
}

/** At most this many of a run's last log lines in its answer. */
export const LOG_LINES_SHOWN = 500;

async function logLines(ctx: ApiContext, runId: string): Promise<RunLogLine[]> {
  const out: RunLogLine[] = [];
  for await (const line of ctx.runtime.store.readJournal<RunLogLine>(runId, RUN_LOG_STREAM)) {
    out.push({ at: line.at, level: line.level, message: line.message });
    if (out.length > LOG_LINES_SHOWN) out.shift();
  }
  return out;
}

function toPauseView(key: string, p: Partial<PauseRecord>, now: number): PauseView {
  return {
    key,
    instance: p.instance ?? key.split(':')[0]!,
    identity: p.identity ?? key.split(':')[0]!,
    scope: p.scope ?? key.split(':').slice(1).join(':'),
    since: p.since,
    until: typeof p.until === 'number' ? p.until : 0,
    retryAfterMs: p.retryAfterMs,
    reason: p.reason ?? '',
    active: typeof p.until === 'number' && p.until > now,
  };
}

/**
 * GET /api/instances: each configured instance with its pauses, and (with a
 * probe) its state, send queue and opt-out list size. An instance that cannot
 * be asked shows as unreachable with the error's code.
 */
export async function listInstances(ctx: ApiContext) {
  const { config, store } = ctx.runtime;
  const now = ctx.now();
  const pauses = (await listPauses(store)).map(([k, p]) => toPauseView(k, p, now));
  const probe = ctx.instances;
  const { executor } = ctx.runtime;
  const instances = await Promise.all(
    Object.entries(config.instances).map(async ([name, inst]) => {
      const identity = identityOf(config, name);
      const [live, optOuts] = probe ? await Promise.all([probe.live(name), probe.optOuts(identity).catch(() => undefined)]) : [];
      // executor: bullmq: the instance's item queue (waiting, active, delayed); absent with the local executor or when Redis does not answer.
      const queue = executor.depth ? await executor.depth(identity).catch(() => undefined) : undefined;
      return {
        name,
        identity,
        kind: inst.apiUrl === 'local' ? 'local' : 'remote',
        pauses: pauses.filter((p) => p.identity === identity),
        ...(live ? { live } : {}),
        ...(optOuts !== undefined ? { optOuts } : {}),
        ...(queue ? { queue } : {}),
      };
    }),
  );
  const known = new Set(instances.map((i) => i.identity));
  return { instances, otherPauses: pauses.filter((p) => !known.has(p.identity)) };
}

export async function liftPauses(ctx: ApiContext, name: string) {
  const { config, store } = ctx.runtime;
  if (!Object.hasOwn(config.instances, name)) throw notFound(`instance '${name}'`);
  const lifted = await liftWithAlerts(store, { identity: identityOf(config, name) }, ctx.runtime.clock.now());
  return { instance: name, lifted: lifted.length };
}

/**
 * Audit history for the time-series plot: the outputs of the outgoing.audit
 * steps of the latest runs of every flow that uses it, oldest first.
 */
export async function auditHistory(ctx: ApiContext, params: URLSearchParams) {
  const limit = Math.min(500, Math.max(1, Number(params.get('limit') ?? 100) || 100));
  const flows = ctx.runtime.flows().flows.filter((f) => f.steps.some((s) => s.uses === 'outgoing.audit'));
  const points: Array<{
    at: number;
    runId: string;
    flow: string;
    total: number;
    sent: number;
    delivered: number;
    read: number;
    notDelivered: number;
    notRead: number;
  }> = [];
  for (const f of flows) {
    const runs = await ctx.index.list({ flow: f.name, status: ['succeeded'], limit });
    const stepsOf = await Promise.all(runs.map((r) => ctx.runtime.store.getSteps(r.id).catch(() => [])));
    runs.forEach((r, i) => {
      for (const s of stepsOf[i]!) {
        if (s.action !== 'outgoing.audit' || !s.output || typeof s.output !== 'object') continue;
        const o = s.output as Record<string, any>;
        points.push({
          at: typeof o.at === 'number' ? o.at : (s.finishedAt ?? r.startedAt),
          runId: r.id,
          flow: r.flow,
          total: Number(o.total ?? 0),
          sent: Number(o.byStatus?.sent ?? 0),
          delivered: Number(o.byStatus?.delivered ?? 0),
          read: Number(o.byStatus?.read ?? 0),
          notDelivered: Number(o.notDelivered ?? 0),
          notRead: Number(o.notRead ?? 0),
        });
      }
    });
  }
  points.sort((a, b) => a.at - b.at);
  return { points };
}

/** The report file a step's output names, if it lies inside the project. */
export async function reportFile(ctx: ApiContext, runId: string, stepId: string) {
  const steps = await ctx.runtime.engine.getSteps(runId);
  const step = steps.find((s) => s.step === stepId);
  if (!step) throw notFound(`step '${stepId}' of run '${runId}'`);
  const rel = reportPathOf(step.output);
  if (!rel) throw notFound(`a report of step '${stepId}'`);
  const base = ctx.runtime.config.baseDir;
  const abs = path.resolve(base, rel);
  const inside = path.relative(base, abs);
  if (inside.startsWith('..') || path.isAbsolute(inside))
    throw new MsgflowError('UI_FORBIDDEN', { reason: `report ${rel} is outside the project directory` });
  const st = await stat(abs).catch(() => undefined);
  if (!st?.isFile()) throw notFound(`report file ${rel}`);
  const ext = path.extname(abs).toLowerCase();
  const type =
    ext === '.csv' ? 'text/csv; charset=utf-8' : ext === '.json' ? 'application/json; charset=utf-8' : 'text/plain; charset=utf-8';
  return { name: path.basename(abs), type, size: st.size, open: () => createReadStream(abs) };
}
