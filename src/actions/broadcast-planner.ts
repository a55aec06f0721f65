/**
 * The planning of a broadcast (`msgflow run --plan`): the engine's passes
 * (broadcast-core.ts sendPass, sendAll) replayed on a virtual clock, without
 * sending nor writing anything but the plan file (broadcast-plan.ts). Each
 * pass goes through the recipients not planned yet in the input's order and
 * plans those whose hours are open and whose sender (sticky, else the
 * healthy one with room today that is free first) may send, spaced by the
 * step's pace and the sender's own (their means); the others wait for the
 * earliest opening, as a run waits durably. Only the recipients a pass
 * defers are held, never the whole input.
 */
import type { ActionContext } from '../engine/action.js';
import { zoneOf } from '../util/clock.js';
import type { Pace } from './pace.js';
import { dailyCap, pickOrder, type Pool, type Sender, type Senders } from './broadcast-pool.js';
import { OptOutHash, PLAN_FORMAT, PlanWriter, type PlanFingerprint, type PlanSummary, type SkipReason } from './broadcast-plan.js';
import { recipientOpening, type RecipientTime } from './recipient-time.js';
import { nextOpening, type SendWindow } from './window.js';

/** A row as the planner meets it: a recipient to plan, or one skipped. */
export type PlanRow =
  | {
      kind: 'recipient';
      chatId: string;
      where: string;
      row: Record<string, unknown>;
      variant?: string;
      messageKind: string;
      summary: string;
      /** The sender its record keeps (an interrupted attempt's). */
      kept?: string;
      /** Its sticky sender, read ahead with its row (planning writes none, so it holds for every pass). */
      sticky?: { sender: Sender | undefined } | undefined;
    }
  | { kind: 'skip'; chatId?: string; where: string; reason: SkipReason; detail?: string };

type Recipient = Extract<PlanRow, { kind: 'recipient' }>;

/** What the planner reads of the step's input. */
export interface PlannedInput {
  window?: SendWindow;
  recipientTime?: RecipientTime;
  pace: Pace;
  pool?: Pool;
}

/** Recipients still without an opening this long after the start are skipped (`noOpening`). */
const HORIZON_MS = 366 * 86_400_000;

/** A sender on the virtual clock. */
interface SimSender {
  s: Sender;
  nextAt: number;
  /** Paused until then (the campaign's pause on it, when the plan is made). */
  pausedUntil: number;
  /** Its first broadcast day (the warm-up counts from it). */
  first?: string;
  /** Sends per day: today's as stored, then the planned ones. */
  used: Map<string, number>;
  /** Sends planned for it (pickOrder). */
  turns: number;
}

interface Sim {
  ctx: ActionContext;
  input: PlannedInput;
  senders: Senders;
  list: SimSender[];
  zone: string;
  t: number;
  sends: number;
}

async function simSenders(ctx: ActionContext, senders: Senders): Promise<SimSender[]> {
  const today = senders.days.of(ctx.clock.now());
  return Promise.all(
    senders.list.map(async (s) => {
      const { sends, first } = senders.capped ? await senders.usage(s, today) : { sends: 0, first: undefined };
      const pausedUntil = (await senders.pauseOf(s))?.until ?? 0;
      return { s, nextAt: 0, pausedUntil, ...(first === undefined ? {} : { first }), used: new Map([[today, sends]]), turns: 0 };
    }),
  );
}

function room(sim: Sim, x: SimSender): number {
  const pool = sim.input.pool;
  if (!sim.senders.capped || !pool) return Infinity;
  const day = sim.senders.days.of(sim.t);
  return dailyCap(pool, x.first ?? day, day) - (x.used.get(day) ?? 0);
}

/** The sender of a recipient at the virtual now, or until when it waits. */
async function choose(sim: Sim, r: Recipient): Promise<SimSender | number> {
  const keptSender = sim.senders.byIdentity(r.kept) ?? (r.sticky ? r.sticky.sender : await sim.senders.stickyOf(r.chatId));
  const kept = sim.list.find((x) => x.s === keptSender);
  const free = sim.list.filter((x) => x.pausedUntil <= sim.t);
  if (kept && kept.pausedUntil > sim.t && sim.senders.waitsWhenUnhealthy) return kept.pausedUntil;
  const candidates = kept && kept.pausedUntil <= sim.t ? [kept] : free;
  if (candidates.length === 0) return Math.min(...sim.list.map((x) => x.pausedUntil));
  const open = candidates.map((x) => ({ s: x, left: room(sim, x) })).filter((c) => c.left > 0);
  open.sort(pickOrder);
  return open[0]?.s ?? sim.senders.days.nextStart(sim.t);
}

/** Plans one recipient at the virtual now: its send time, or when to look again, or the window is over. */
async function planOne(sim: Sim, r: Recipient): Promise<{ at: number; x: SimSender } | { wait: number } | 'windowOver'> {
  const { input } = sim;
  if (input.window) {
    const o = nextOpening(input.window, sim.t, sim.zone);
    if (!o) return 'windowOver';
    sim.t = Math.max(sim.t, o.at);
  }
  const opens = input.recipientTime ? recipientOpening(input.recipientTime, r.chatId, r.row, sim.t, sim.zone) : sim.t;
  if (opens > sim.t) return { wait: opens };
  const x = await choose(sim, r);
  if (typeof x === 'number') return { wait: x };
  if (sim.sends > 0) sim.t += input.pace.delay;
  sim.t = Math.max(sim.t, x.nextAt);
  x.nextAt = sim.t + (input.pool?.pace?.delay ?? 0);
  x.turns++;
  if (sim.senders.capped) {
    const day = sim.senders.days.of(sim.t);
    x.first ??= day;
    x.used.set(day, (x.used.get(day) ?? 0) + 1);
  }
  sim.sends++;
  return { at: sim.t, x };
}

/** Counts and bounds of the planned sends, for the summary. */
class Tally {
  readonly byInstance: Record<string, number> = {};
  readonly byVariant: Record<string, number> = {};
  readonly skipped: Partial<Record<SkipReason, number>> = {};
  recipients = 0;
  first?: number;
  last?: number;

  planned(instance: string, variant: string | undefined, at: number): void {
    this.recipients++;
    this.byInstance[instance] = (this.byInstance[instance] ?? 0) + 1;
    const v = variant ?? 'default';
    this.byVariant[v] = (this.byVariant[v] ?? 0) + 1;
    this.first = Math.min(this.first ?? at, at);
    this.last = Math.max(this.last ?? at, at);
  }

  skip(reason: SkipReason): void {
    this.skipped[reason] = (this.skipped[reason] ?? 0) + 1;
  }

  summary(plan: string, start: number): PlanSummary {
    const iso = (t: number | undefined) => (t === undefined ? undefined : new Date(t).toISOString());
    const { recipients, byInstance, byVariant, skipped } = this;
    return {
      plan,
      recipients,
      byInstance,
      byVariant,
      skipped,
      firstAt: iso(this.first),
      lastAt: iso(this.last),
      durationMs: (this.last ?? start) - start,
    };
  }
}

export interface PlanRequest {
  ctx: ActionContext;
  action: string;
  input: PlannedInput;
  senders: Senders;
  /** The input's rows, streamed. */
  rows: () => AsyncIterable<PlanRow>;
  /** The plan file (absolute) and as shown. */
  path: string;
  shown: string;
  /** The plan's fingerprint, once the rows were met (`optedOut`: the chats skipped as opted out, in order). */
  fingerprint: (optedOut: string) => Promise<PlanFingerprint>;
}

/** A planning under way: the virtual clock and senders, the file, the counts. */
interface Planning {
  sim: Sim;
  writer: PlanWriter;
  tally: Tally;
  optedOut: OptOutHash;
}

/** A row that is not planned, with its reason. */
function skip(pl: Planning, r: { where: string; chatId?: string }, reason: SkipReason, detail?: string): void {
  if (reason === 'optedOut') pl.optedOut.add(r.chatId!);
  pl.tally.skip(reason);
  pl.writer.add({ row: r.where, ...(r.chatId ? { chatId: r.chatId } : {}), skipped: reason, ...(detail ? { reason: detail } : {}) });
}

/** One pass over `pending` (as broadcast-core.ts sendPass): the recipients it defers, and the earliest time one may be sent. */
async function pass(pl: Planning, pending: AsyncIterable<PlanRow>): Promise<{ deferred: Recipient[]; earliest: number }> {
  const deferred: Recipient[] = [];
  let earliest = Infinity;
  for await (const r of pending) {
    pl.sim.ctx.signal.throwIfAborted();
    if (r.kind === 'skip') {
      skip(pl, r, r.reason, r.detail);
      continue;
    }
    const p = await planOne(pl.sim, r);
    if (p === 'windowOver') skip(pl, r, 'windowOver');
    else if ('wait' in p) {
      deferred.push(r);
      earliest = Math.min(earliest, p.wait);
    } else {
      const instance = p.x.s.name;
      pl.tally.planned(instance, r.variant, p.at);
      const { where: row, chatId, variant, messageKind: kind, summary } = r;
      const at = new Date(p.at).toISOString();
      pl.writer.add({ row, chatId, instance, ...(variant === undefined ? {} : { variant }), kind, summary, at });
    }
  }
  return { deferred, earliest };
}

/** Plans the broadcast and writes the plan file; its summary. */
export async function writePlan(req: PlanRequest): Promise<PlanSummary> {
  const { ctx } = req;
  const start = ctx.clock.now();
  const zone = zoneOf(ctx.clock);
  const list = await simSenders(ctx, req.senders);
  const sim: Sim = { ctx, input: req.input, senders: req.senders, list, zone, t: start, sends: 0 };
  const createdAt = new Date(start).toISOString();
  const head = {
    format: PLAN_FORMAT,
    flow: ctx.run.flow,
    step: ctx.run.step,
    action: req.action,
    createdAt,
    inputs: ctx.run.plan?.inputs ?? {},
  };
  const pl: Planning = { sim, writer: await PlanWriter.open(req.path, head), tally: new Tally(), optedOut: new OptOutHash() };
  try {
    let pending: AsyncIterable<PlanRow> = req.rows();
    for (;;) {
      const { deferred, earliest } = await pass(pl, pending);
      if (deferred.length === 0) break;
      if (earliest - start > HORIZON_MS) {
        for (const r of deferred) skip(pl, r, 'noOpening');
        break;
      }
      // As a run waits durably for the earliest opening, then passes again.
      sim.t = Math.max(sim.t, earliest);
      pending = toAsync(deferred);
    }
    const summary = pl.tally.summary(req.shown, start);
    await pl.writer.close(await req.fingerprint(pl.optedOut.digest()), summary);
    return summary;
  } catch (e) {
    await pl.writer.abort();
    throw e;
  }
}

async function* toAsync<T>(items: T[]): AsyncGenerator<T> {
  yield* items;
}
