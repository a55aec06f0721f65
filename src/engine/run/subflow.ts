/**
 * Sub-flows: a step `uses: flow/<name>` runs another flow as a run of its
 * own (visible, cancellable, resumable) and takes the child's `outputs:` as
 * its output; a forEach fans children out, one per item.
 *
 * Exactly once: the child's id is derived from the parent run, the step and
 * the item, and a link record (`subflow-runs`, `<parent>/<child>`) is written
 * before the child starts. A parent resumed after a crash computes the same
 * id and re-attaches to the child (awaits it here, resumes it when nobody
 * owns it, or watches the store while another process runs it): it never
 * starts a second one. A finished child is final: its step does not start
 * it again (a failed child fails its step with SUBFLOW_FAILED, definite).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { FlowError, MsgflowError } from '../../api/errors.js';
import { RESUMABLE_STATUSES, type EngineStore, type RunParent, type RunRecord } from '../../store/types.js';
import type { ActionContext } from '../action.js';
import { subflowName } from '../flow/subflows.js';
import type { Flow } from '../flow/types.js';
import type { RegisteredAction } from '../registry/registry.js';
import type { RunHandle, StartOptions } from './types.js';

/** `<parent run id>/<child run id>` -> {@link SubflowLink}: the children a run started (or is about to). */
export const SUBFLOW_RUNS_NS = 'subflow-runs';

export interface SubflowLink {
  flow: string;
  step: string;
  item?: number;
  /** When the link was written (engine clock, ms). */
  at: number;
}

/**
 * The child run's id: the same parent, step and item always give the same id
 * (a resumed parent finds its child). Short and file-name safe however deep
 * sub-flows nest: the child's flow name and a digest.
 *
 * @example subflowRunId('nightly-mjv4x1c0-3fa9c2', 'greet', 'welcome', 3) // 'welcome-s1f0c…'
 */
export function subflowRunId(parentRunId: string, step: string, flow: string, item?: number): string {
  const name = flow.replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 64) || 'flow';
  const digest = createHash('sha256')
    .update(`${parentRunId}\n${step}\n${item ?? ''}`)
    .digest('hex')
    .slice(0, 20);
  return `${name}-s${digest}`;
}

/** What the sub-flow action needs of the engine. */
export interface SubflowHost {
  store: EngineStore;
  now(): number;
  /** A loaded flow by name. */
  flowFor(name: string): Flow | undefined;
  start(flow: Flow, opts: StartOptions): Promise<RunHandle>;
  resume(runId: string, flow: Flow): Promise<RunHandle>;
  /** The completion of a run executing in this process, if it is. */
  activeDone(runId: string): Promise<RunRecord> | undefined;
  /** How long (real time) to wait before looking at a child again that another process runs, or whose slot is busy. */
  pollMs: number;
}

/** Codes that mean "not now" when starting or resuming a child: look again later. */
const LATER = new Set(['RUN_LIVE', 'RUN_NOT_RESUMABLE']);

/** Sleeps `ms` real time; rejects when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** `done`, or a rejection when `signal` aborts first (the child keeps running: it is a run of its own). */
function until<T>(done: Promise<T>, signal: AbortSignal): Promise<T> {
  return Promise.race([
    done,
    new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason);
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    }),
  ]);
}

/** The step's result from a finished child: its outputs, or SUBFLOW_FAILED. */
function finished(r: RunRecord, step: string): Record<string, unknown> {
  if (r.status === 'succeeded') return r.outputs ?? {};
  const reason = r.error?.message ?? (r.status === 'cancelled' ? 'it was cancelled' : r.status);
  throw new FlowError('SUBFLOW_FAILED', { step, flow: r.flow, runId: r.id, status: r.status, reason });
}

/**
 * A child whose flow is already among its callers would call itself forever
 * (validate refuses such flows; a flows folder edited while runs go on may
 * still hold one): the step fails instead. Walks the callers' records.
 */
async function refuseCycle(store: EngineStore, parent: RunParent, flowName: string): Promise<void> {
  const chain = [parent.flow];
  let up = (await store.getRun(parent.runId))?.parent;
  for (let depth = 0; up && depth < 100; depth++) {
    chain.unshift(up.flow);
    up = (await store.getRun(up.runId))?.parent;
  }
  if (!chain.includes(flowName)) return;
  throw new FlowError('FLOW_INVALID', {
    location: parent.flow,
    path: `steps.${parent.step}.uses`,
    reason: `sub-flows form a cycle: ${[...chain, flowName].join(' -> ')}`,
  });
}

/**
 * Starts the child (once), or re-attaches to it, and waits for its end.
 * Resolves with its outputs; rejects with SUBFLOW_FAILED when it failed or
 * was cancelled, or with the signal's reason when the parent stops first.
 */
export async function callSubflow(host: SubflowHost, ctx: ActionContext, child: Flow, values: Record<string, unknown>) {
  const flowName = child.name;
  const { id: parentRunId, flow: parentFlow, step } = ctx.run;
  const item = ctx.run.item?.index;
  const id = subflowRunId(parentRunId, step, flowName, item);
  const parent: RunParent = { runId: parentRunId, flow: parentFlow, step, ...(item === undefined ? {} : { item }) };
  await refuseCycle(host.store, parent, flowName);
  const links = host.store.kv(SUBFLOW_RUNS_NS);
  const key = `${parentRunId}/${id}`;
  if (!(await links.get(key))) {
    const link: SubflowLink = { flow: flowName, step, ...(item === undefined ? {} : { item }), at: host.now() };
    await links.set(key, link);
  }
  const signal = ctx.signal;
  for (;;) {
    if (signal.aborted) throw signal.reason;
    const r = await host.store.getRun(id);
    if (r && !RESUMABLE_STATUSES.includes(r.status)) return finished(r, step);
    const here = host.activeDone(id);
    try {
      if (here) await until(here, signal);
      else if (!r) await until((await host.start(child, { runId: id, trigger: 'subflow', values, parent })).done, signal);
      else await until((await host.resume(id, child)).done, signal);
      continue;
    } catch (e) {
      if (!(e instanceof MsgflowError && LATER.has(e.code)) || signal.aborted) throw e;
    }
    // Owned by another process (it runs it), or its concurrency slot is busy: look again shortly.
    await pause(host.pollMs, signal);
  }
}

/** The action a `flow/<name>` step runs: its `with:` are the child's inputs. */
export function subflowAction(host: SubflowHost, uses: string): RegisteredAction {
  const name = subflowName(uses)!;
  // Looked up once per step execution, not per item: a fan-out of 1,000 children reads the flows once.
  let child: Flow | undefined;
  const flow = (): Flow => {
    child ??= host.flowFor(name);
    if (!child) throw new FlowError('FLOW_NOT_FOUND', { name, dir: 'the loaded flows' });
    return child;
  };
  return {
    name: uses,
    description: `Runs flow '${name}' as a sub-flow run and returns its outputs.`,
    input: z.record(z.string(), z.unknown()),
    output: { description: "The child flow's outputs." },
    run: (ctx: ActionContext, input: Record<string, unknown>) => callSubflow(host, ctx, flow(), input),
  };
}
