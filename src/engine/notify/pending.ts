/**
 * The runs notifications decided but that have not started yet (the
 * dispatcher's intents), and the order they start in: per concurrency slot
 * set (group and key value, e.g. one chat), oldest first and never one
 * overtaking another, across restarts (each intent carries the instance's
 * durable decision number, `seq`). Debounced intents (`debounce:`) of one
 * batch are gathered into one run once their window has passed.
 */
import type { Flow } from '../flow/types.js';
import { concurrencyGroup } from '../run/concurrency.js';

/** runId -> {@link PendingRun}: runs decided but not started yet. */
export const NOTIFICATION_RUNS_NS = 'notification-runs';
/** runId -> the run id a debounced notification's run was gathered into: a redelivery finds it decided. */
export const NOTIFICATION_GATHERED_NS = 'notification-gathered';
/** runId -> {@link SkippedRun}: a run a notification did not start, and why (the chat was handed to a human). */
export const NOTIFICATION_SKIPPED_NS = 'notification-skipped';
/** identity -> the last decision number given to a notification of the instance. */
export const NOTIFICATION_SEQ_NS = 'notification-seq';

export interface PendingRun {
  flow: string;
  /** Config name of the instance the notification came from. */
  instance: string;
  event: Record<string, unknown>;
  /** When it was decided, ms. */
  at: number;
  /** The instance's decision number: intents of one slot set start in this order. Absent on intents written before it existed. */
  seq?: number;
  /** The run's concurrency key value (concurrency.ts); absent: the group's shared slots. */
  key?: string;
  /** Debounced: the batch (flow and debounce key value) it belongs to, and the earliest it may start, ms. */
  batch?: string;
  notBefore?: number;
  /** Debounced and gathered: the events of the batch, oldest first (this intent's own last). */
  events?: Record<string, unknown>[];
  /** Debounced and gathered: the intents (run ids) this one took the events of. */
  gathered?: string[];
}

/** A notification that started no run of a flow. */
export interface SkippedRun {
  flow: string;
  instance: string;
  chatId?: string;
  at: number;
  /** Why, e.g. `the chat is handed over to a human (operator, until 2026-03-02T09:30:00.000Z)`. */
  reason: string;
}

/** The slot set an intent's run will take: its flow's group and its key value. */
export function slotOf(flow: Pick<Flow, 'name' | 'concurrency'>, p: Pick<PendingRun, 'key'>): string {
  return `${concurrencyGroup(flow)}\n${p.key ?? ''}`;
}

/** Intents in the order they were decided. */
export function decisionOrder(entries: Array<[string, PendingRun]>): Array<[string, PendingRun]> {
  return [...entries].sort(([ia, a], [ib, b]) => (a.seq ?? 0) - (b.seq ?? 0) || a.at - b.at || ia.localeCompare(ib));
}

/** A batch gathered: the run id that starts (the latest intent's), its intent, and the intents it took. */
export interface Gathered {
  runId: string;
  intent: PendingRun;
  taken: string[];
}

/**
 * The batches whose window has passed at `now` (no intent of the batch may
 * start before its `notBefore`, so the latest one's decides), each gathered
 * into its latest intent: `events` every event in order (an intent gathered
 * before keeps the events it took, and what it took counts as taken).
 */
export function dueBatches(ordered: Array<[string, PendingRun]>, now: number): Gathered[] {
  const batches = new Map<string, Array<[string, PendingRun]>>();
  for (const e of ordered) if (e[1].batch !== undefined) batches.set(e[1].batch, [...(batches.get(e[1].batch) ?? []), e]);
  const out: Gathered[] = [];
  for (const members of batches.values()) {
    if (members.some(([, p]) => (p.notBefore ?? 0) > now)) continue;
    const already = new Set(members.flatMap(([, p]) => p.gathered ?? []));
    const live = members.filter(([id]) => !already.has(id));
    const [runId, last] = live[live.length - 1]!;
    const events = live.flatMap(([, p]) => p.events ?? [p.event]);
    const taken = members.map(([id]) => id).filter((id) => id !== runId);
    if (taken.length === 0 && last.events) continue; // gathered already, waiting for its slot
    out.push({ runId, intent: { ...last, events, gathered: taken }, taken });
  }
  return out;
}
