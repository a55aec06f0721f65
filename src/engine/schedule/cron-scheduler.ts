/**
 * The embedded Scheduler driver: node-cron timers, cron-parser for missed
 * slots, DurableState for what must survive a crash.
 *
 * Per flow, everything (timer ticks, missed-slot handling, starting queued
 * runs) goes through one serial lane, so decisions never interleave with the
 * asynchronous state writes they depend on. The lane's durable record is ONE
 * key (`flow:<name>` = `{ lastFire, pending }`), written before any run it
 * implies starts: a crash can at worst lose the start of a run (the engine's
 * own durable runs cover runs that did start), never start a slot twice.
 */
import type { DurableState, Logger } from '../action.js';
import type { EngineBus } from '../events.js';
import type { Flow } from '../flow/types.js';
import { FlowError } from '../../api/errors.js';
import { systemClock, zoneOf, type Clock } from '../../util/clock.js';
import { missedSlots, nextSlot } from './slots.js';
import { clockTimer, nodeCronTimer } from './timers.js';
import type { CronTimer, FireFn, FireInfo, ScheduleStatus, Scheduler, TimerSource } from './types.js';
import { validateCron, validateTimezone } from './validate.js';

export interface CronSchedulerOptions {
  bus: EngineBus;
  /** Remembers, per flow, the last slot handled and the fires not started yet. */
  state: DurableState;
  /** @default systemClock */
  clock?: Clock;
  logger?: Logger;
  /**
   * Source of live slots. @default node-cron, or {@link clockTimer} on `clock`
   * when a clock other than systemClock is given (so a ManualClock drives everything).
   */
  timer?: TimerSource;
  /**
   * Whether the flow has a run the scheduler did not start (manual `msgflow run`,
   * a run resumed after a crash). Counted as "active" by `skip` and `queue`.
   * @example isBusy: (flow) => engine.activeRuns().some((r) => r.flow === flow)
   */
  isBusy?: (flow: string) => boolean;
  /**
   * `overlap: queue`: fires kept waiting per flow. When full, the OLDEST waiting
   * fire gives way to the new one (schedule:skipped), like a CI concurrency
   * group: the run that starts next covers the most recent slot.
   * @default 1
   */
  queueLimit?: number;
  /** Missed slots considered per gap; older ones are reported in one warning. @default 1000 */
  maxMissed?: number;
  /**
   * Slots at most this old when start() runs may still come from the timer
   * source, late: BullMQ job schedulers (replicas sharing the state) deliver
   * each slot once, on whichever replica takes its job, and on a loaded
   * machine that was seen 0.8 s after the slot, while another replica was
   * starting, and 1.2 s after it while the next slot fired on the other one.
   * start() and a tick's gap check leave such slots alone: a later check
   * reports them (and runs them per `missed`) if nobody fired them and no
   * later slot fired first (a shared timer does not skip a slot while any
   * replica runs: what it skips, it skips during downtime, longer ago).
   * @default 0
   */
  lateSlotMs?: number;
}

interface PendingFire extends FireInfo {
  /** `queued`: held by `overlap: queue` (subject to queueLimit); `catch-up`: a `missed: all` slot. */
  kind: 'queued' | 'catch-up';
}

interface LaneRecord {
  lastFire: number;
  pending: PendingFire[];
}

interface Lane {
  flow: Flow;
  fire: FireFn;
  timezone?: string;
  lastFire?: number;
  pending: PendingFire[];
  active: number;
  chain: Promise<void>;
  timer?: CronTimer;
}

/**
 * Schedules flows with `on.schedule` / `on.startup`. Policies, per flow:
 * - `overlap: skip`: a slot that comes while a run of the flow is active (or
 *   fires are waiting) is dropped with `schedule:skipped`.
 * - `overlap: queue`: it waits and starts when the active run ends. At most
 *   `queueLimit` (default 1) fires wait per flow; a newer fire takes the place
 *   of the oldest waiting one (`schedule:skipped` for that one), so the next
 *   run covers the latest slot. Waiting fires are persisted: a restart runs them.
 * - `overlap: allow`: runs start regardless of active ones.
 * - `missed` (slots that passed while the daemon was down, or while the
 *   process was stalled): `none` reports them (`schedule:missed`, willRun
 *   false); `last` runs once for the latest, through the overlap policy;
 *   `all` runs each, oldest first, one at a time.
 * - `startup: true`: one run at start(), through the overlap policy.
 *
 * @example
 * const scheduler = createCronScheduler({ bus, state: store.kv('scheduler') });
 * for (const flow of flows) scheduler.add(flow, (info) => engine.start(flow, { trigger: info.trigger }).then((h) => h.done).then(() => {}));
 * await scheduler.start();
 */
export function createCronScheduler(opts: CronSchedulerOptions): Scheduler {
  return new CronScheduler(opts);
}

/** Throws FLOW_INVALID when the flow has nothing to schedule or a bad cron/timezone. */
function checkSchedulable(flow: Flow): void {
  const schedule = flow.on.schedule;
  if (!schedule && !flow.on.startup) {
    throw new FlowError('FLOW_INVALID', {
      location: flow.file,
      path: 'on',
      reason: 'nothing to schedule: neither on.schedule nor on.startup: true',
    });
  }
  if (!schedule) return;
  const bad = validateCron(schedule.cron);
  if (bad) throw new FlowError('FLOW_INVALID', { location: flow.file, path: 'on.schedule.cron', reason: bad });
  const badTz = schedule.timezone === undefined ? undefined : validateTimezone(schedule.timezone);
  if (badTz) throw new FlowError('FLOW_INVALID', { location: flow.file, path: 'on.schedule.timezone', reason: badTz });
}

/** The zone of a flow's schedule: its own `timezone`, else the clock's (the machine's, or a flow test case's). */
const timezoneOf = (flow: Flow, clock: Clock): string | undefined =>
  flow.on.schedule ? (flow.on.schedule.timezone ?? zoneOf(clock)) : undefined;

const RUN_END_EVENTS = ['run:finished', 'run:failed', 'run:interrupted'] as const;

class CronScheduler implements Scheduler {
  private readonly clock: Clock;
  private readonly timer: TimerSource;
  private readonly queueLimit: number;
  private readonly maxMissed: number;
  private readonly lateSlotMs: number;
  private readonly lanes = new Map<string, Lane>();
  /** Runs still active of flows removed while they ran (idle() waits for them). */
  private retiredActive = 0;
  private started = false;
  private stopped = false;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly opts: CronSchedulerOptions) {
    this.clock = opts.clock ?? systemClock;
    this.timer = opts.timer ?? (this.clock === systemClock ? nodeCronTimer(opts.logger) : clockTimer(this.clock));
    this.queueLimit = Math.max(1, opts.queueLimit ?? 1);
    this.maxMissed = Math.max(1, opts.maxMissed ?? 1000);
    this.lateSlotMs = opts.lateSlotMs ?? 0;
  }

  private report(level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>): void {
    if (this.opts.logger) this.opts.logger[level](message, fields);
    else this.opts.bus.emit('log', { level, message, fields });
  }

  private serial(lane: Lane, fn: () => Promise<void>): Promise<void> {
    const next = lane.chain.then(fn).catch((err: unknown) => {
      this.report('error', `scheduler: flow '${lane.flow.name}': ${(err as Error)?.message ?? String(err)}`);
    });
    lane.chain = next;
    return next;
  }

  private persist(lane: Lane): Promise<void> {
    const record: LaneRecord = { lastFire: lane.lastFire ?? this.clock.now(), pending: lane.pending };
    return this.opts.state.set(`flow:${lane.flow.name}`, record);
  }

  private busy(lane: Lane): boolean {
    return lane.active > 0 || (this.opts.isBusy?.(lane.flow.name) ?? false);
  }

  private checkIdle(): void {
    const working = this.retiredActive > 0 || [...this.lanes.values()].some((l) => l.active > 0 || l.pending.length > 0);
    if (!this.stopped && working) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /** Starts a run now; not awaited by the lane (a run may last hours). */
  private launch(lane: Lane, info: FireInfo): void {
    lane.active++;
    let result: Promise<void>;
    try {
      result = Promise.resolve(lane.fire({ scheduledAt: info.scheduledAt, trigger: info.trigger }));
    } catch (err) {
      result = Promise.reject(err);
    }
    result
      .catch((err: unknown) => {
        this.report(
          'error',
          `scheduler: run of flow '${lane.flow.name}' (${info.trigger} ${new Date(info.scheduledAt).toISOString()}) failed to start: ${(err as Error)?.message ?? String(err)}`,
        );
      })
      .finally(() => {
        lane.active--;
        if (this.lanes.get(lane.flow.name) === lane) void this.drain(lane);
        else this.retiredActive--;
        this.checkIdle();
      });
  }

  /** Starts the next pending fire when the flow is free; pending fires always run one at a time. */
  private drain(lane: Lane): Promise<void> {
    return this.serial(lane, async () => {
      if (this.stopped || !this.started || lane.pending.length === 0 || this.busy(lane)) return;
      const next = lane.pending.shift()!;
      await this.persist(lane); // taken off the durable list BEFORE it starts
      this.launch(lane, next);
    });
  }

  /** Applies the overlap policy to one fire. Runs inside the lane. */
  private async accept(lane: Lane, info: FireInfo): Promise<void> {
    if (info.trigger !== 'startup') lane.lastFire = Math.max(lane.lastFire ?? 0, info.scheduledAt);
    const occupied = this.busy(lane) || lane.pending.length > 0;
    const overlap = lane.flow.on.overlap;
    if (!occupied || overlap === 'allow') {
      await this.persist(lane);
      this.launch(lane, info);
      return;
    }
    if (overlap === 'skip') {
      await this.persist(lane);
      this.opts.bus.emit('schedule:skipped', {
        flow: lane.flow.name,
        scheduledAt: info.scheduledAt,
        reason: 'overlap: skip: the previous run is still active',
      });
      return;
    }
    lane.pending.push({ ...info, kind: 'queued' });
    const dropped: PendingFire[] = [];
    while (lane.pending.filter((p) => p.kind === 'queued').length > this.queueLimit) {
      const i = lane.pending.findIndex((p) => p.kind === 'queued');
      dropped.push(...lane.pending.splice(i, 1));
    }
    await this.persist(lane);
    for (const d of dropped) {
      this.opts.bus.emit('schedule:skipped', {
        flow: lane.flow.name,
        scheduledAt: d.scheduledAt,
        reason: `overlap: queue: ${this.queueLimit} fire(s) already waiting; the newer fire of ${new Date(info.scheduledAt).toISOString()} takes its place`,
      });
    }
  }

  /** Slots in (lastFire, upTo] nobody fired: the flow's `missed` policy decides. Runs inside the lane. */
  private async handleGap(lane: Lane, upTo: number): Promise<void> {
    const schedule = lane.flow.on.schedule;
    if (!schedule || lane.lastFire === undefined || upTo <= lane.lastFire) return;
    const { slots, truncated } = missedSlots(schedule.cron, lane.timezone!, lane.lastFire, upTo, this.maxMissed);
    if (slots.length === 0) return;
    const policy = lane.flow.on.missed;
    if (truncated) {
      this.report(
        'warn',
        `scheduler: flow '${lane.flow.name}' missed more than ${this.maxMissed} slots since ${new Date(lane.lastFire).toISOString()}; only the latest ${this.maxMissed} are considered`,
      );
    }
    const latest = slots[slots.length - 1];
    lane.lastFire = latest;
    if (policy === 'all') lane.pending.push(...slots.map((s): PendingFire => ({ scheduledAt: s, trigger: 'missed', kind: 'catch-up' })));
    // `last` goes through the overlap policy below, which persists; the others persist here.
    if (policy !== 'last') await this.persist(lane);
    for (const s of slots) {
      const willRun = policy === 'all' || (policy === 'last' && s === latest);
      this.opts.bus.emit('schedule:missed', { flow: lane.flow.name, scheduledAt: s, policy, willRun });
    }
    if (policy === 'last') await this.accept(lane, { scheduledAt: latest, trigger: 'missed' });
  }

  /**
   * Replicas sharing the state (executor: bullmq, whose job schedulers fire
   * each slot on ONE of them) must not take another replica's fired slot for
   * a missed one, nor fire a slot twice: the shared record is the truth.
   */
  private async catchUpLastFire(lane: Lane): Promise<void> {
    const record = await this.opts.state.get<LaneRecord>(`flow:${lane.flow.name}`);
    if (typeof record?.lastFire === 'number' && (lane.lastFire === undefined || record.lastFire > lane.lastFire))
      lane.lastFire = record.lastFire;
  }

  private onTick(lane: Lane, scheduledAt: number): Promise<void> {
    return this.serial(lane, async () => {
      if (this.stopped) return;
      await this.catchUpLastFire(lane);
      if (lane.lastFire !== undefined && scheduledAt <= lane.lastFire) return;
      const now = this.clock.now();
      this.opts.bus.emit('schedule:fired', { flow: lane.flow.name, scheduledAt, firedAt: now });
      // With a shared timer the slot before this one may still be firing on another replica,
      // its record not written yet: only slots older than lateSlotMs count as missed here.
      await this.handleGap(lane, Math.min(scheduledAt - 1, now - this.lateSlotMs));
      await this.accept(lane, { scheduledAt, trigger: 'schedule' });
    }).then(() => this.drain(lane));
  }

  private onMissed(lane: Lane, scheduledAt: number): Promise<void> {
    return this.serial(lane, async () => {
      if (this.stopped) return;
      await this.catchUpLastFire(lane);
      await this.handleGap(lane, scheduledAt);
    }).then(() => this.drain(lane));
  }

  private readonly onRunEnded = (e: { flow: string }): void => {
    const lane = this.lanes.get(e.flow);
    // A run the scheduler did not start (isBusy) has ended: waiting fires may go.
    if (lane && lane.pending.length > 0) setImmediate(() => void this.drain(lane));
  };

  /** Arms the lane's live timer (none for a startup-only flow). */
  private arm(lane: Lane): void {
    const schedule = lane.flow.on.schedule;
    if (!schedule) return;
    lane.timer = this.timer(
      { cron: schedule.cron, timezone: lane.timezone!, name: lane.flow.name },
      { tick: (t) => void this.onTick(lane, t), missed: (t) => void this.onMissed(lane, t) },
    );
  }

  /**
   * Restores the lane's durable record. At start() (`atStart`) the gap since
   * the last slot is handled by the `missed` policy and startup flows fire; a
   * flow added later (a reload) was not scheduled in between, so nothing was
   * missed: its schedule counts from now.
   */
  private restore(lane: Lane, now: number, atStart: boolean): Promise<void> {
    return this.serial(lane, async () => {
      const record = await this.opts.state.get<LaneRecord>(`flow:${lane.flow.name}`);
      lane.pending = Array.isArray(record?.pending) ? record.pending : [];
      if (atStart && typeof record?.lastFire === 'number') {
        lane.lastFire = record.lastFire;
        await this.handleGap(lane, now - this.lateSlotMs);
      } else if (lane.flow.on.schedule) {
        // First start: remember it, so that downtime from now on is detected.
        lane.lastFire = now;
        await this.persist(lane);
      }
      if (atStart && lane.flow.on.startup) await this.accept(lane, { scheduledAt: now, trigger: 'startup' });
      // Added after start: armed inside the lane, so idle() covers it (start() arms all lanes itself).
      if (!atStart && this.lanes.get(lane.flow.name) === lane && !this.stopped) this.arm(lane);
    });
  }

  add(flow: Flow, fire: FireFn): void {
    checkSchedulable(flow);
    if (this.lanes.has(flow.name)) {
      throw new FlowError('FLOW_INVALID', {
        location: flow.file,
        path: 'name',
        reason: `a flow named '${flow.name}' is already scheduled`,
      });
    }
    const lane: Lane = { flow, fire, timezone: timezoneOf(flow, this.clock), pending: [], active: 0, chain: Promise.resolve() };
    this.lanes.set(flow.name, lane);
    if (!this.started || this.stopped) return;
    void this.restore(lane, this.clock.now(), false).then(() => this.drain(lane));
  }

  replace(flow: Flow, fire: FireFn): void {
    const lane = this.lanes.get(flow.name);
    if (!lane) return this.add(flow, fire);
    checkSchedulable(flow);
    const before = lane.flow.on.schedule;
    const after = flow.on.schedule;
    lane.flow = flow;
    lane.fire = fire;
    lane.timezone = timezoneOf(flow, this.clock);
    if (before?.cron === after?.cron && before?.timezone === after?.timezone) return; // same slots: the armed timer stays
    lane.timer?.stop();
    lane.timer = undefined;
    if (!this.started || this.stopped) return;
    // A new schedule counts from now: slots of the old one are not "missed".
    void this.serial(lane, async () => {
      if (after) lane.lastFire = this.clock.now();
      await this.persist(lane);
      if (this.lanes.get(flow.name) === lane && !this.stopped) this.arm(lane);
    });
  }

  async remove(name: string): Promise<void> {
    const lane = this.lanes.get(name);
    if (!lane) return;
    lane.timer?.stop();
    lane.timer = undefined;
    this.lanes.delete(name);
    this.retiredActive += lane.active;
    // Decisions under way finish; waiting fires of a flow that no longer exists are dropped.
    await lane.chain;
    lane.pending = [];
    await this.opts.state.delete(`flow:${name}`);
    this.checkIdle();
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.stopped = false;
    for (const e of RUN_END_EVENTS) this.opts.bus.on(e, this.onRunEnded);
    const now = this.clock.now();
    await Promise.all([...this.lanes.values()].map((lane) => this.restore(lane, now, true)));
    if (this.stopped) return; // stop() while starting
    for (const lane of this.lanes.values()) {
      this.arm(lane);
      void this.drain(lane);
    }
    await Promise.all([...this.lanes.values()].map((l) => l.chain));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const lane of this.lanes.values()) {
      lane.timer?.stop();
      lane.timer = undefined;
    }
    for (const e of RUN_END_EVENTS) this.opts.bus.off(e, this.onRunEnded);
    // Let decisions already under way finish their state writes.
    await Promise.all([...this.lanes.values()].map((l) => l.chain));
    this.started = false;
    this.checkIdle();
  }

  idle(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.idleWaiters.push(resolve);
      // Decisions in the lanes may be about to launch something: check after them.
      void Promise.all([...this.lanes.values()].map((l) => l.chain)).then(() => this.checkIdle());
    });
  }

  status(): ScheduleStatus[] {
    const now = this.clock.now();
    return [...this.lanes.values()].map((lane): ScheduleStatus => {
      const schedule = lane.flow.on.schedule;
      return {
        flow: lane.flow.name,
        cron: schedule?.cron,
        timezone: lane.timezone,
        next: schedule && !this.stopped ? nextSlot(schedule.cron, lane.timezone!, now) : undefined,
        lastFire: lane.lastFire,
        active: lane.active,
        pending: lane.pending.length,
      };
    });
  }
}
