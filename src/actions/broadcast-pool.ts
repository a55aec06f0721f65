/**
 * The senders of a broadcast: the flow's instance alone, or a pool of
 * instances (`pool.instances`). Each recipient keeps one sender (sticky,
 * across campaigns: BROADCAST_SENDERS_NS); each sender has its own pace, a
 * daily cap and a warm-up ramp for a new number (BROADCAST_USAGE_NS, counted
 * per day across campaigns); and the health guard: a sender whose state
 * (getStateInstance), whose answer (466 quota exceeded, account not
 * authorized) or whose latest sends (a threshold: broadcast-guard.ts) say it
 * is in danger raises a durable pause of the campaign on that instance
 * (engine/run/pauses.ts: `msgflow pauses`, the dashboard, Lift; the
 * `campaign-paused` alert flows start on) and an event (`campaign.paused`);
 * its remaining recipients move to the others, or wait for the lift
 * (`onUnhealthy`). The pool itself is config.yaml's or the step's
 * (util/pool.ts).
 */
import { z } from 'zod';
import { isMsgflowError } from '../api/errors.js';
import { INSTANCE_STATES } from '../api/notifications.js';
import type { InstanceApi } from '../api/types.js';
import { FlowError } from '../api/errors.js';
import type { ActionContext, DurableState, InstanceRef } from '../engine/action.js';
import { actionPauses, activePause, pauseRecords, pauseWait, raisePause, type PauseRecord } from '../engine/run/pauses.js';
import { BROADCAST_SENDERS_NS, BROADCAST_USAGE_NS, type SharedNamespace, type SharedRecords } from '../engine/shared.js';
import { zoneOf } from '../util/clock.js';
import { duration } from './duration.js';
import { paceDelay, type Pace } from './pace.js';
import type { Pool } from '../util/pool.js';
import { HealthRulesFields, METRICS, SenderHealth, senderLookups, type Metric } from './broadcast-guard.js';
import { zoneFormat } from '../util/zone-format.js';

export type { Pool };

const DANGER_STATES = INSTANCE_STATES.filter((s) => s !== 'authorized' && s !== 'starting');

export const GuardSchema = z
  .strictObject({
    states: z
      .array(z.enum(INSTANCE_STATES))
      .default(['yellowCard', 'blocked', 'notAuthorized'])
      .describe(
        `Instance states that pause the campaign on it (${DANGER_STATES.join(', ')}). @default [yellowCard, blocked, notAuthorized]`,
      ),
    checkEvery: duration("How often a sender's state is read (getStateInstance) before a send; 0: before every send. @default 1m").default(
      60_000,
    ),
    quotaExceeded: z.boolean().default(true).describe("466 (the plan's quota exceeded) pauses the campaign on the instance. @default true"),
    pauseFor: duration('How long a pause lasts unless lifted earlier (msgflow pauses lift). @default 24h').default(86_400_000),
    ...HealthRulesFields,
  })
  .describe('The health guard: { states, checkEvery, quotaExceeded, pauseFor, noAccount, failed, optOut, replies }.');

export type Guard = z.output<typeof GuardSchema>;

/** One sender of a broadcast. */
export interface Sender {
  name: string;
  instance: InstanceRef;
  client: InstanceApi;
  /** A context whose client and instance are the sender's (reconciliation and following read its service). */
  ctx: ActionContext;
  /** Not before then (its own pace). */
  nextAt: number;
  /** When its state is read next. */
  stateAt: number;
  /** Sends it was given in this run: of senders ready at once, the one given fewest goes first. */
  turns: number;
}

/**
 * The order a new recipient's sender is picked in, the same for a run and for
 * its plan: ready first (its own pace), then most room today, then given
 * fewest sends so far, so that a pool without a pace or caps still shares
 * the work rather than giving it all to its first instance.
 */
export function pickOrder(a: PickCandidate, b: PickCandidate): number {
  return a.s.nextAt - b.s.nextAt || b.left - a.left || a.s.turns - b.s.turns;
}

/** A sender as picking sees it (a run's Sender, or a plan's simulated one), with its room today. */
export interface PickCandidate {
  s: Pick<Sender, 'nextAt' | 'turns'>;
  left: number;
}

export class Senders {
  readonly list: Sender[];
  /** The pauses' scope: one per campaign (or run step), so lifting it resumes that campaign. */
  readonly scope: string;
  /** The campaign as its pauses name it (its name, else `<flow>/<step>`). */
  private readonly campaign: string;
  /** Each sender's windows of the guard's thresholds (by identity), loaded when first needed. */
  private readonly health = new Map<string, Promise<SenderHealth>>();
  /** The threshold a sender's last check found crossed: its window starts afresh once the pause is raised. */
  private readonly crossed = new Map<Sender, Metric>();
  /** Days in the run's zone. */
  readonly days: Days;
  /** The store's views this class reads per send, made once (each view is a few objects and closures). */
  private readonly pauses: SharedRecords<PauseRecord>;
  private readonly stickies: DurableState;

  constructor(
    private readonly ctx: ActionContext,
    private readonly pool: Pool | undefined,
    private readonly guard: Guard | undefined,
    campaign: string | undefined,
  ) {
    this.campaign = campaign ?? `${ctx.run.flow}/${ctx.run.step}`;
    this.days = new Days(zoneOf(ctx.clock));
    this.scope = `campaign:${this.campaign}`;
    this.pauses = pauseRecords(actionPauses(ctx));
    this.stickies = ctx.shared(BROADCAST_SENDERS_NS);
    const names = pool?.instances ?? [ctx.instance.name];
    this.list = names.map((name, i) => {
      const own = name === ctx.instance.name ? { client: ctx.client, instance: ctx.instance } : this.other(name, i);
      return {
        name,
        ...own,
        ctx: { ...ctx, client: own.client, instance: own.instance, instanceName: name },
        nextAt: 0,
        stateAt: 0,
        turns: 0,
      };
    });
  }

  private other(name: string, i: number): { client: InstanceApi; instance: InstanceRef } {
    if (!this.ctx.instanceClient)
      throw new FlowError('ACTION_INPUT_INVALID', {
        action: 'messages.broadcast',
        field: `pool.instances[${i}]`,
        reason: "this run reaches only its flow's instance",
      });
    try {
      return this.ctx.instanceClient(name);
    } catch (e) {
      throw new FlowError(
        'ACTION_INPUT_INVALID',
        { action: 'messages.broadcast', field: `pool.instances[${i}]`, reason: `no instance '${name}' in config.yaml` },
        { cause: e },
      );
    }
  }

  byIdentity(identity: string | undefined): Sender | undefined {
    return identity === undefined ? undefined : this.list.find((s) => s.instance.identity === identity);
  }

  get pooled(): boolean {
    return this.pool !== undefined;
  }

  get waitsWhenUnhealthy(): boolean {
    return this.pool?.onUnhealthy !== 'move';
  }

  /** The pause of the campaign on a sender in force now, if any. */
  pauseOf(s: Sender): Promise<PauseRecord | undefined> {
    return activePause(this.pauses, s.instance.identity, this.scope, this.ctx.clock.now());
  }

  /** Today's day in the run's zone (YYYY-MM-DD): the caps count per day. */
  private today(at = this.ctx.clock.now()): string {
    return this.days.of(at);
  }

  /** Whether the pool has a daily cap or a warm-up. */
  get capped(): boolean {
    return this.pool?.dailyCap !== undefined || this.pool?.warmup !== undefined;
  }

  /** The sender's usage as stored: its sends on `day` and the day of its first broadcast send (undefined: none yet). */
  async usage(s: Sender, day: string): Promise<{ sends: number; first?: string }> {
    const usage = this.ctx.shared(BROADCAST_USAGE_NS);
    const sends = (await usage.get<{ sends: number }>(`${s.instance.identity}:${day}`))?.sends ?? 0;
    const first = this.pool?.warmup ? (await usage.get<{ day: string }>(`${s.instance.identity}:first`))?.day : undefined;
    return { sends, ...(first === undefined ? {} : { first }) };
  }

  /** How many more broadcast sends the sender may make today (Infinity without caps). */
  async capacity(s: Sender): Promise<number> {
    if (!this.capped) return Infinity;
    const today = this.today();
    const { sends, first } = await this.usage(s, today);
    return Math.max(0, dailyCap(this.pool!, first ?? today, today) - sends);
  }

  /** Counts one send of the sender today (before the call: a crash can only make the count one too high, never let a cap pass). */
  async count(s: Sender): Promise<void> {
    if (!this.pool?.dailyCap && !this.pool?.warmup) return;
    const usage = this.ctx.shared(BROADCAST_USAGE_NS);
    const today = this.today();
    if ((await usage.get(`${s.instance.identity}:first`)) === undefined) await usage.set(`${s.instance.identity}:first`, { day: today });
    const key = `${s.instance.identity}:${today}`;
    const sent = (await usage.get<{ sends: number }>(key))?.sends ?? 0;
    await usage.set(key, { sends: sent + 1 });
  }

  /** When the caps allow sends again: the start of tomorrow in the run's zone (to the second). */
  tomorrow(): number {
    return this.days.nextStart(this.ctx.clock.now());
  }

  /** Waits for the sender's own pace. */
  async paced(s: Sender, pace: Pace | undefined = this.pool?.pace): Promise<void> {
    const now = this.ctx.clock.now();
    if (s.nextAt > now) await this.ctx.clock.sleep(s.nextAt - now, this.ctx.signal);
    if (pace) s.nextAt = this.ctx.clock.now() + paceDelay(pace);
    s.turns++;
  }

  /**
   * The reason the sender is unhealthy, if it is: its state (read when due),
   * else a threshold of its latest sends crossed (broadcast-guard.ts).
   */
  async checkState(s: Sender): Promise<string | undefined> {
    if (!this.guard) return undefined;
    if (this.ctx.clock.now() >= s.stateAt) {
      s.stateAt = this.ctx.clock.now() + this.guard.checkEvery;
      const state = await s.client
        .getStateInstance({}, { signal: this.ctx.signal })
        .then((r) => r.stateInstance)
        .catch(() => undefined);
      if (state && this.guard.states.includes(state)) return `state ${state}`;
    }
    const health = await this.healthOf(s);
    const crossed = await health?.check(senderLookups(s.ctx, this.ctx.instance.identity), this.ctx.clock.now());
    if (crossed) this.crossed.set(s, crossed.metric);
    return crossed?.reason;
  }

  /** The sender's windows, when the guard has thresholds. */
  private healthOf(s: Sender): Promise<SenderHealth> | undefined {
    const g = this.guard;
    if (!g || !METRICS.some((m) => g[m] !== undefined)) return undefined;
    let h = this.health.get(s.instance.identity);
    if (!h)
      this.health.set(s.instance.identity, (h = SenderHealth.load(this.ctx, s.instance.identity, this.scope, g, this.ctx.clock.now())));
    return h;
  }

  /** A send the sender made (its answer's idMessage): it enters the guard's windows. */
  async sent(s: Sender, chatId: string, idMessage: string, sentAt: number): Promise<void> {
    await (await this.healthOf(s))?.sent(chatId, idMessage, sentAt);
  }

  /** Why a failed send makes the sender unhealthy (by the error's code), if it does. */
  unhealthyBy(e: unknown): string | undefined {
    if (!this.guard || !isMsgflowError(e)) return undefined;
    if (e.code === 'QUOTA_EXCEEDED' && this.guard.quotaExceeded) return '466 quotaExceeded';
    if (e.code === 'ACCOUNT_NOT_AUTHORIZED' && this.guard.states.includes('notAuthorized')) return 'state notAuthorized';
    return undefined;
  }

  /** Pauses the campaign on the sender, durably, with the reason; says so in the log and as an event. */
  async trip(s: Sender, why: string): Promise<void> {
    const now = this.ctx.clock.now();
    const rule = { scope: this.scope, cause: why };
    const { flow, step, id: runId } = this.ctx.run;
    const record = await raisePause(actionPauses(this.ctx), s.instance, rule, {
      since: now,
      retryAfterMs: 0,
      minMs: this.guard!.pauseFor,
      campaign: { name: this.campaign, flow, step, runId },
    });
    const then =
      this.pooled && !this.waitsWhenUnhealthy ? 'its remaining recipients move to the others' : 'the campaign waits for the lift';
    const crossed = this.crossed.get(s);
    this.crossed.delete(s);
    if (crossed) await (await this.healthOf(s))?.restart(crossed, now);
    this.ctx.logger.warn(`${this.scope} paused on instance '${s.name}': ${why}; ${then} (msgflow pauses lift ${s.name})`);
    this.ctx.emit('campaign.paused', { scope: this.scope, campaign: this.campaign, instance: s.name, reason: why, until: record.until });
  }

  /** Waits durably until the earliest of the pauses ends or is lifted. */
  async waitForLift(paused: PauseRecord[]): Promise<void> {
    const first = paused.reduce((a, b) => (b.until < a.until ? b : a));
    await this.ctx.wait(pauseWait(first, (ns: SharedNamespace<PauseRecord>) => this.ctx.shared(ns)));
  }

  /** The sticky sender of a chat, if it has one in this pool. */
  async stickyOf(chatId: string): Promise<Sender | undefined> {
    if (!this.pooled) return this.list[0];
    const s = await this.stickies.get<{ identity: string }>(chatId);
    return this.byIdentity(s?.identity);
  }

  async stick(chatId: string, s: Sender): Promise<void> {
    if (this.pooled) await this.stickies.set(chatId, { identity: s.instance.identity, name: s.name, at: this.ctx.clock.now() });
  }
}

/** Days in one zone (YYYY-MM-DD): a pool's caps count per day (one formatter for all: util/zone-format.ts). */
export class Days {
  private readonly fmt: Intl.DateTimeFormat;
  constructor(zone: string) {
    this.fmt = zoneFormat('day', zone);
  }

  /** The day of `at`. */
  of(at: number): string {
    return this.fmt.format(at);
  }

  /** The start of the day after `at`'s (to the second). */
  nextStart(at: number): number {
    const today = this.of(at);
    let lo = at;
    let hi = at + 26 * 3_600_000;
    while (hi - lo > 1000) {
      const mid = Math.floor((lo + hi) / 2);
      if (this.of(mid) === today) lo = mid;
      else hi = mid;
    }
    return hi;
  }
}

/** A sender's cap on `day`: the pool's dailyCap, and its warm-up ramp counted from `first` (its first broadcast day); the smaller wins. */
export function dailyCap(pool: Pool, first: string, day: string): number {
  let cap = pool.dailyCap ?? Infinity;
  const w = pool.warmup;
  if (w) {
    const age = Math.max(0, Math.round((Date.parse(day) - Date.parse(first)) / 86_400_000));
    cap = Math.min(cap, Math.floor(w.from + ((w.to - w.from) * Math.min(age, w.days)) / w.days));
  }
  return cap;
}
