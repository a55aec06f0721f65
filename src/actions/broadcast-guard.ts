/**
 * The health guard's thresholds on what the service says about a campaign's
 * sends, per instance of the campaign (its pool's members): the share of
 * `noAccount` and of `failed` statuses among its last sends, and the rate of
 * recipients who opt out, or reply, within a while after their message. Each
 * is a sliding window by count (`window`) and/or time (`within`) that cannot
 * trip before `minSample` sends count; crossing one pauses the campaign on
 * the instance (broadcast-pool.ts `trip`) with the reason, e.g.
 * `noAccount 12/40 (30%) > 20%`.
 *
 * {@link HealthWindow} is the computation, pure: each send enters once, its
 * outcome and its responses are counted once when they become known, each
 * window's counts move by one entry at a time (O(1) per send). {@link
 * SenderHealth} keeps it durable, one record per send in BROADCAST_HEALTH_NS
 * (written when the send enters or changes, deleted once it has left every
 * window), so a resumed run, or the campaign's next run, goes on with the
 * same windows; and looks the outcomes and responses up, oldest first.
 */
import { z } from 'zod';
import type { ActionContext, DurableState } from '../engine/action.js';
import { FAILED_STATUSES, type OutgoingStatusRecord } from '../engine/notify/records.js';
import { BROADCAST_HEALTH_NS, OUTGOING_STATUS_NS } from '../engine/shared.js';
import { duration } from './duration.js';
import { notificationsOn, QUEUE_RETENTION_MS } from './broadcast-notified.js';
import { optedOutAfter, replyAfter } from './broadcast-funnel.js';

// ---- the rules, as YAML writes them ------------------------------------------------

const windowFields = (window: number, minSample: number) => ({
  window: z
    .number()
    .int()
    .positive()
    .max(10_000)
    .default(window)
    .describe(`How many of the instance's latest sends of the campaign the threshold looks at. @default ${window}`),
  within: duration('Only sends of this last while count, e.g. 6h (with `window`, whichever is fewer). @default no time limit').optional(),
  minSample: z
    .number()
    .int()
    .positive()
    .default(minSample)
    .describe(`The threshold cannot trip before this many sends of the window count. @default ${minSample}`),
});

/** A refinement of every rule: a sample the window cannot hold would never trip. */
const sampleFits: [(r: { window: number; minSample: number }) => boolean, { error: string; path: string[] }] = [
  (r) => r.minSample <= r.window,
  { error: 'minSample must not exceed window (it could never trip)', path: ['minSample'] },
];

const shareRule = (status: string) =>
  z
    .strictObject({
      maxShare: z
        .number()
        .gt(0)
        .max(1)
        .describe(`Trip when more than this share (0-1) of the sends whose outcome the service told is ${status}.`),
      ...windowFields(50, 20),
    })
    .refine(...sampleFits)
    .describe(`The share of ${status} statuses among the instance's last sends: { maxShare, window, within, minSample }.`);

export const HealthRulesFields = {
  noAccount: shareRule('noAccount (the number has no account)').optional(),
  failed: shareRule('failed (failed, notInGroup, yellowCard)').optional(),
  optOut: z
    .strictObject({
      maxRate: z.number().gt(0).max(1).describe('Trip when more than this share (0-1) of the recipients opted out within `after`.'),
      after: duration(
        'How long after its message a recipient is watched for an opt-out; a send counts once this has passed. @default 1h',
      ).default(3_600_000),
      ...windowFields(100, 30),
    })
    .refine(...sampleFits)
    .optional()
    .describe(
      "The opt-out rate: recipients put on the opt-out list (optOut.add, a dialog's stop) within `after` of their message: { maxRate, after, window, within, minSample }.",
    ),
  replies: z
    .strictObject({
      minRate: z
        .number()
        .gt(0)
        .max(1)
        .describe('Trip when fewer than this share (0-1) of the recipients wrote back within `after`: the messages look unwanted.'),
      after: duration('How long a recipient has to reply; a send counts once this has passed. @default 1d').default(86_400_000),
      ...windowFields(100, 50),
    })
    .refine(...sampleFits)
    .optional()
    .describe(
      "The reply rate, a floor: recipients who wrote back within `after` of their message (needs msgflow start consuming the instance's notifications): { minRate, after, window, within, minSample }.",
    ),
};

/** The thresholds of a guard, as parsed (the guard's other fields may come with them). */
export type HealthRules = { [K in keyof typeof HealthRulesFields]?: z.output<(typeof HealthRulesFields)[K]> };

export const METRICS = ['noAccount', 'failed', 'optOut', 'replies'] as const;
export type Metric = (typeof METRICS)[number];

/** A rule of any metric, as the window reads it. */
interface Rule {
  /** maxShare, maxRate, or minRate (a floor). */
  limit: number;
  floor: boolean;
  window: number;
  within?: number;
  minSample: number;
  /** A response metric (optOut, replies): a send counts once this has passed since it was sent. */
  after?: number;
}

export function rulesOf(r: HealthRules): Partial<Record<Metric, Rule>> {
  const out: Partial<Record<Metric, Rule>> = {};
  if (r.noAccount) out.noAccount = { ...r.noAccount, limit: r.noAccount.maxShare, floor: false };
  if (r.failed) out.failed = { ...r.failed, limit: r.failed.maxShare, floor: false };
  if (r.optOut) out.optOut = { ...r.optOut, limit: r.optOut.maxRate, floor: false };
  if (r.replies) out.replies = { ...r.replies, limit: r.replies.minRate, floor: true };
  return out;
}

// ---- the computation ----------------------------------------------------------------

/** What the service told of a send: it reached an account, or noAccount, or failed. */
export type Outcome = 'ok' | 'noAccount' | 'failed';

/** One send in the windows, as stored. */
export interface HealthEntry {
  chatId: string;
  idMessage: string;
  sentAt: number;
  outcome?: Outcome;
  /** optOut, once `after` passed: whether the recipient opted out within it; null for a send that reached no account (not counted). */
  optedOut?: boolean | null;
  /** replies, once `after` passed: whether the recipient wrote back; null when it reached no account or replies were not recorded (not counted). */
  replied?: boolean | null;
}

const responseField = { optOut: 'optedOut', replies: 'replied' } as const;

function counts(m: Metric, e: HealthEntry): [sample: number, hits: number] {
  if (m === 'noAccount' || m === 'failed') return e.outcome === undefined ? [0, 0] : [1, e.outcome === m ? 1 : 0];
  const v = e[responseField[m]];
  return e.outcome === 'ok' && typeof v === 'boolean' ? [1, v ? 1 : 0] : [0, 0];
}

/** A metric's window: entries [lo, hi) by sequence, and what they count. */
interface Tally {
  lo: number;
  hi: number;
  sample: number;
  hits: number;
}

const pct = (x: number) => `${Number((x * 100).toFixed(1))}%`;

/** A threshold crossed: which, and why as the pause says it. */
export interface Crossed {
  metric: Metric;
  reason: string;
}

/**
 * The sliding windows of one instance's sends of a campaign. Entries come in
 * send order; an outcome metric's window ends at the newest send, a response
 * metric's at the newest send whose `after` has passed and was looked at.
 */
export class HealthWindow {
  private readonly entries: HealthEntry[] = [];
  /** Where the window's oldest entry is in `entries` (those before it are gone: dropped in batches, so a send costs O(1)). */
  private off = 0;
  /** Sequence number of entries[off]. */
  private base = 0;
  private readonly seqs = new WeakMap<HealthEntry, number>();
  private readonly tallies = new Map<Metric, Tally>();
  /** Entries before this sequence number have an outcome, or are no longer waited for. */
  private decidedTo = 0;

  constructor(
    readonly rules: Partial<Record<Metric, Rule>>,
    /** Per metric: sends before then do not count (a trip starts its window afresh). */
    readonly since: Partial<Record<Metric, number>> = {},
  ) {
    for (const m of METRICS) if (rules[m]) this.tallies.set(m, { lo: 0, hi: 0, sample: 0, hits: 0 });
  }

  get size(): number {
    return this.entries.length - this.off;
  }

  private at(seq: number): HealthEntry | undefined {
    return seq < this.base ? undefined : this.entries[this.off + seq - this.base];
  }

  /** A new send (or a stored one, at load: a response already looked at enters its window at once). */
  push(e: HealthEntry): void {
    this.seqs.set(e, this.base + this.size);
    this.entries.push(e);
    for (const [m, t] of this.tallies) {
      if (this.rules[m]!.after === undefined) this.enter(m, t);
      else if (t.hi === this.base + this.size - 1 && e[responseField[m as 'optOut' | 'replies']] !== undefined) this.enter(m, t);
    }
  }

  private enter(m: Metric, t: Tally): void {
    const e = this.at(t.hi)!;
    t.hi++;
    if (e.sentAt < (this.since[m] ?? -Infinity)) return;
    const [s, h] = counts(m, e);
    t.sample += s;
    t.hits += h;
  }

  /** Applies what became known of a send, moving the counts of every window it is in. */
  change(e: HealthEntry, patch: Partial<HealthEntry>): void {
    const seq = this.seqs.get(e) ?? -1;
    const inside = [...this.tallies].filter(([, t]) => seq >= t.lo && seq < t.hi);
    for (const [m, t] of inside) this.count(m, t, e, -1);
    Object.assign(e, patch);
    for (const [m, t] of inside) this.count(m, t, e, 1);
  }

  private count(m: Metric, t: Tally, e: HealthEntry, sign: 1 | -1): void {
    if (e.sentAt < (this.since[m] ?? -Infinity)) return;
    const [s, h] = counts(m, e);
    t.sample += sign * s;
    t.hits += sign * h;
  }

  /**
   * The oldest sends whose outcome is not known yet, oldest first: the service
   * tells them in its queue's order, so the lookups stop at the first still
   * open. One the service may no longer tell (queued longer than it keeps a
   * message) is no longer waited for.
   */
  *undecided(now: number): Generator<HealthEntry> {
    this.decidedTo = Math.max(this.decidedTo, this.base);
    while (this.decidedTo < this.base + this.size) {
      const e = this.at(this.decidedTo)!;
      if (e.outcome === undefined && e.sentAt + QUEUE_RETENTION_MS > now) yield e;
      if (e.outcome === undefined && e.sentAt + QUEUE_RETENTION_MS > now) return;
      this.decidedTo++;
    }
  }

  /** The send of a response metric whose `after` has passed and that is looked at next, if any. */
  due(m: 'optOut' | 'replies', now: number): HealthEntry | undefined {
    const t = this.tallies.get(m);
    const e = t && this.at(t.hi);
    return e && e.sentAt + this.rules[m]!.after! <= now ? e : undefined;
  }

  /** The response of the send {@link due} gave, looked up: it enters the metric's window. */
  responded(m: 'optOut' | 'replies', e: HealthEntry, value: boolean | null): void {
    const t = this.tallies.get(m)!;
    if (this.at(t.hi) !== e) return;
    e[responseField[m]] = value as never;
    this.enter(m, t);
  }

  /** Moves each window's start past the sends it no longer holds (count, time, a trip); the sends out of every window. */
  slide(now: number): HealthEntry[] {
    for (const [m, t] of this.tallies) {
      const r = this.rules[m]!;
      const floor = Math.max(now - (r.within ?? Infinity), this.since[m] ?? -Infinity);
      for (let e = this.at(t.lo); t.lo < t.hi && (t.hi - t.lo > r.window || e!.sentAt < floor); e = this.at(t.lo)) {
        this.count(m, t, e!, -1);
        t.lo++;
      }
    }
    const keep = Math.min(...[...this.tallies.values()].map((t) => t.lo));
    const n = Math.max(0, keep - this.base);
    const gone = this.entries.slice(this.off, this.off + n);
    this.off += n;
    this.base += n;
    // The array is compacted once half of it is gone: each entry is moved O(1) times.
    if (this.off > 1024 && this.off * 2 > this.entries.length) {
      this.entries.splice(0, this.off);
      this.off = 0;
    }
    return gone;
  }

  /** The first threshold crossed, with the reason. */
  crossed(): Crossed | undefined {
    for (const [m, t] of this.tallies) {
      const r = this.rules[m]!;
      if (t.sample < r.minSample) continue;
      const share = t.hits / t.sample;
      if (r.floor ? share < r.limit : share > r.limit)
        return { metric: m, reason: `${m} ${t.hits}/${t.sample} (${pct(share)}) ${r.floor ? '<' : '>'} ${pct(r.limit)}` };
    }
    return undefined;
  }

  /** After a trip: the metric's window starts afresh with the sends from `now` on. */
  restart(m: Metric, now: number): void {
    const t = this.tallies.get(m);
    if (!t) return;
    Object.assign(t, { lo: t.hi, sample: 0, hits: 0 });
    this.since[m] = now;
  }

  /** What a metric's window holds now (tests, the log). */
  tally(m: Metric): { sample: number; hits: number } | undefined {
    const t = this.tallies.get(m);
    return t && { sample: t.sample, hits: t.hits };
  }
}

// ---- durable, and looked up -----------------------------------------------------------

/** How a sender's sends are looked up at its service and in what the consumer recorded. */
export interface HealthLookups {
  outcome(e: HealthEntry): Promise<Outcome | undefined>;
  optedOut(e: HealthEntry, afterMs: number): Promise<boolean>;
  replied(e: HealthEntry, afterMs: number): Promise<boolean | null>;
}

/** Outcomes looked up per check at most: the rest wait for the next send's check. */
const LOOKUPS_PER_CHECK = 20;

export class SenderHealth {
  private constructor(
    private readonly store: DurableState,
    private readonly prefix: string,
    readonly window: HealthWindow,
    private readonly keys: Map<HealthEntry, string>,
  ) {}

  /** The windows of `identity`'s sends of the campaign `scope`, as stored at `now`. */
  static async load(
    ctx: Pick<ActionContext, 'shared'>,
    identity: string,
    scope: string,
    rules: HealthRules,
    now: number,
  ): Promise<SenderHealth> {
    const store = ctx.shared(BROADCAST_HEALTH_NS);
    const prefix = `${identity}|${scope}|`;
    const since = (await store.get<Partial<Record<Metric, number>>>(`${prefix}since`)) ?? {};
    const window = new HealthWindow(rulesOf(rules), since);
    const keys = new Map<HealthEntry, string>();
    const stored = (await store.entries<HealthEntry>(`${prefix}e|`)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [key, e] of stored) {
      keys.set(e, key);
      window.push(e);
    }
    const health = new SenderHealth(store, prefix, window, keys);
    await health.slide(now);
    return health;
  }

  /** Slides the windows to `now`; deletes the sends out of every window. */
  private async slide(now: number): Promise<void> {
    for (const gone of this.window.slide(now)) {
      await this.store.delete(this.keys.get(gone)!);
      this.keys.delete(gone);
    }
  }

  /** A send of the campaign from the instance: it enters the windows. */
  async sent(chatId: string, idMessage: string, sentAt: number): Promise<void> {
    const e: HealthEntry = { chatId, idMessage, sentAt };
    const key = `${this.prefix}e|${String(sentAt).padStart(15, '0')}|${chatId}`;
    this.keys.set(e, key);
    await this.store.set(key, e);
    this.window.push(e);
  }

  /** Looks up what became known (outcomes oldest first, responses whose time came) and says which threshold is crossed. */
  async check(look: HealthLookups, now: number): Promise<Crossed | undefined> {
    let n = 0;
    for (const e of this.window.undecided(now)) {
      if (n++ >= LOOKUPS_PER_CHECK) break;
      const outcome = await look.outcome(e);
      if (outcome === undefined) break;
      await this.save(e, { outcome });
    }
    for (const m of ['optOut', 'replies'] as const) {
      const rule = this.window.rules[m];
      for (let e = this.window.due(m, now); rule && e; e = this.window.due(m, now)) {
        if (e.outcome === undefined) {
          const outcome = await look.outcome(e);
          if (outcome !== undefined) await this.save(e, { outcome });
        }
        // Only a send that reached an account is looked at; the others enter the window uncounted.
        const value = e.outcome !== 'ok' ? null : m === 'optOut' ? await look.optedOut(e, rule.after!) : await look.replied(e, rule.after!);
        this.window.responded(m, e, value);
        await this.store.set(this.keys.get(e)!, e);
      }
    }
    await this.slide(now);
    return this.window.crossed();
  }

  private async save(e: HealthEntry, patch: Partial<HealthEntry>): Promise<void> {
    this.window.change(e, patch);
    await this.store.set(this.keys.get(e)!, e);
  }

  /** After the pause a crossed threshold raised: its window starts afresh (a lift is the word that the cause is dealt with). */
  async restart(m: Metric, now: number): Promise<void> {
    this.window.restart(m, now);
    await this.store.set(`${this.prefix}since`, this.window.since);
    await this.slide(now);
  }
}

/** The service's status of a message as an outcome; undefined while it is still queued. */
export function outcomeOf(status: string | undefined): Outcome | undefined {
  if (status === undefined || status === 'pending') return undefined;
  if (status === 'noAccount') return 'noAccount';
  if (FAILED_STATUSES.includes(status)) return 'failed';
  return status === 'sent' || status === 'delivered' || status === 'read' ? 'ok' : undefined;
}

/**
 * The lookups of a sender (its ctx: its client and identity): an outcome from
 * the status the consumer recorded when msgflow start consumes its
 * notifications since the send, else from the service (getMessage); replies
 * only when they are recorded (else null: not counted); opt-outs from the
 * opt-out list of the sender and of the flow's instance (`listOf`).
 */
export function senderLookups(ctx: ActionContext, listOf: string): HealthLookups {
  const identity = ctx.instance.identity;
  const lists = [...new Set([identity, listOf])];
  return {
    async outcome(e) {
      if (await notificationsOn(ctx, e.sentAt)) {
        const s = await ctx.shared(OUTGOING_STATUS_NS).get<OutgoingStatusRecord>(`${identity}:${e.idMessage}`);
        return outcomeOf(s?.status);
      }
      const m = await ctx.client.getMessage({ chatId: e.chatId, idMessage: e.idMessage }, { signal: ctx.signal }).catch(() => undefined);
      return outcomeOf(m?.statusMessage);
    },
    async optedOut(e, afterMs) {
      for (const list of lists) if (await optedOutAfter(ctx, list, e.chatId, e.sentAt, afterMs)) return true;
      return false;
    },
    async replied(e, afterMs) {
      if (!(await notificationsOn(ctx, e.sentAt))) return null;
      return (await replyAfter(ctx, identity, e.chatId, e.sentAt, afterMs)) !== undefined;
    },
  };
}
