/**
 * A flow's concurrency slots: how many of its runs (or of its group's) may be
 * live at once, and per what. `concurrency.key` splits the limit per value of
 * an expression (`${{ event.senderData.chatId }}`: one slot set per chat), so
 * a run waiting in one chat never holds up another chat's. A run triggered by
 * a notification about a chat is keyed by that chat when the flow sets no
 * key: what a chatbot's users expect (one conversation at a time per chat,
 * chats independent). A constant key (`key: all`) makes every run share one
 * slot set again.
 *
 * The key's value is computed once, when the run is decided (the notification
 * dispatcher, or the engine's start), and kept on the run record: a resumed
 * run takes the same slot set.
 */
import { createHash } from 'node:crypto';
import { FlowError } from '../../api/errors.js';
import { evaluateTemplate } from '../expr/template.js';
import type { Flow } from '../flow/types.js';

/** Where a run's key is computed from: what the trigger gives it. */
export interface KeyScope {
  /** The notification (notification runs). */
  event?: Record<string, unknown>;
  inputs: Record<string, unknown>;
  run: { id: string; flow: string; startedAt: number };
}

/** The flow's concurrency group: `concurrency.group`, else the flow's name. */
export function concurrencyGroup(flow: Pick<Flow, 'name' | 'concurrency'>): string {
  return flow.concurrency?.group ?? flow.name;
}

/**
 * The run's key value from the flow's `concurrency.key` (or another key
 * expression of the flow: `debounce.key`), undefined when the
 * flow has none or it evaluates to nothing (null, undefined, '': the run
 * then takes the group's shared slots). A number or boolean counts as its text.
 */
export function evaluateConcurrencyKey(
  flow: Pick<Flow, 'name' | 'env' | 'concurrency' | 'displayFile'>,
  scope: KeyScope,
  expr: string | undefined = flow.concurrency?.key,
  path = 'concurrency.key',
): string | undefined {
  if (expr === undefined) return undefined;
  const v = evaluateTemplate(expr, {
    inputs: scope.inputs,
    env: { ...flow.env },
    steps: {},
    run: scope.run,
    ...(scope.event ? { event: scope.event } : {}),
  });
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw new FlowError('FLOW_INVALID', {
    location: flow.displayFile,
    path,
    reason: `must give a text, a number or a boolean, got ${Array.isArray(v) ? 'an array' : typeof v}`,
  });
}

/** Longest key kept as written in a slot's lease name; a longer one is hashed. */
const KEY_CHARS = 120;

/**
 * The lease name of slot `i` of a group, per key when the run has one:
 * `group:welcome#0`, `group:welcome[79001112233@c.us]#0`.
 */
export function slotLeaseName(group: string, key: string | undefined, i: number): string {
  if (key === undefined) return `group:${group}#${i}`;
  const k = key.length <= KEY_CHARS ? key : `sha256:${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
  return `group:${group}[${k}]#${i}`;
}
