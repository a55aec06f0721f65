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
import { systemClock, type Clock } from '../../util/clock.js';
import { localTimezone, missedSlots, nextSlot } from './slots.js';
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
 * @example
 * const scheduler = createCronScheduler({ bus, state: store.kv('scheduler') });
 * for (const flow of flows) scheduler.add(flow, (info) => engine.start(flow, { trigger: info.trigger }).then((h) => h.done).then(() => {}));
 * await scheduler.start();
 */
export function createCronScheduler(opts: CronSchedulerOptions): Scheduler {
  const clock = opts.clock ?? systemClock;
  const timer = opts.timer ?? (clock === systemClock ? nodeCronTimer(opts.logger) : clockTimer(clock));
  const queueLimit = Math.max(1, opts.queueLimit ?? 1);
  const maxMissed = Math.max(1, opts.maxMissed ?? 1000);
  const { bus, state } = opts;
  const lanes = new Map<string, Lane>();
  let started = false;
  let stopped = false;
  let idleWaiters: Array<() => void> = [];

  const report = (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => {
    if (opts.logger) opts.logger[level](message, fields);
    else bus.emit('log', { level, message, fields });
  };

  const serial = (lane: Lane, fn: () => Promise<void>): Promise<void> => {
    const next = lane.chain.then(fn).catch((err: unknown) => {
      report('error', `scheduler: flow '${lane.flow.name}': ${(err as Error)?.message ?? String(err)}`);
    });
    lane.chain = next;
    return next;
  };

  const persist = (lane: Lane) => {
    const record: LaneRecord = { lastFire: lane.lastFire ?? clock.now(), pending: lane.pending };
    return state.set(`flow:${lane.flow.name}`, record);
  };

  const busy = (lane: Lane) => lane.active > 0 || (opts.isBusy?.(lane.flow.name) ?? false);

  const checkIdle = () => {
    if (!stopped && [...lanes.values()].some((l) => l.active > 0 || l.pending.length > 0)) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const w of waiters) w();
  };

  /** Starts a run now; not awaited by the lane (a run may last hours). */
  const launch = (lane: Lane, info: FireInfo) => {
    lane.active++;
    let result: Promise<void>;
    try {
      result = Promise.resolve(lane.fire({ scheduledAt: info.scheduledAt, trigger: info.trigger }));
    } catch (err) {
      result = Promise.reject(err);
    }
    result
      .catch((err: unknown) => {
        report('error', `scheduler: run of flow '${lane.flow.name}' (${info.trigger} ${new Date(info.scheduledAt).toISOString()}) failed to start: ${(err as Error)?.message ?? String(err)}`);
      })
      .finally(() => {
        lane.active--;
        void drain(lane);
        checkIdle();
      });
  };

  /** Starts the next pending fire when the flow is free; pending fires always run one at a time. */
  const drain = (lane: Lane) =>
    serial(lane, async () => {
      if (stopped || !started || lane.pending.length === 0 || busy(lane)) return;
      const next = lane.pending.shift()!;
      await persist(lane); // taken off the durable list BEFORE it starts
      launch(lane, next);
    });

  /** Applies the overlap policy to one fire. Runs inside the lane. */
  const accept = async (lane: Lane, info: FireInfo) => {
    if (info.trigger !== 'startup') lane.lastFire = Math.max(lane.lastFire ?? 0, info.scheduledAt);
    const occupied = busy(lane) || lane.pending.length > 0;
    const overlap = lane.flow.on.overlap;
    if (!occupied || overlap === 'allow') {
      await persist(lane);
      launch(lane, info);
      return;
    }
    if (overlap === 'skip') {
      await persist(lane);
      bus.emit('schedule:skipped', { flow: lane.flow.name, scheduledAt: info.scheduledAt, reason: 'overlap: skip: the previous run is still active' });
      return;
    }
    lane.pending.push({ ...info, kind: 'queued' });
    const dropped: PendingFire[] = [];
    while (lane.pending.filter((p) => p.kind === 'queued').length > queueLimit) {
      const i = lane.pending.findIndex((p) => p.kind === 'queued');
      dropped.push(...lane.pending.splice(i, 1));
    }
    await persist(lane);
    for (const d of dropped) {
      bus.emit('schedule:skipped', {
        flow: lane.flow.name,
        scheduledAt: d.scheduledAt,
        reason: `overlap: queue: ${queueLimit} fire(s) already waiting; the newer fire of ${new Date(info.scheduledAt).toISOString()} takes its place`,
      });
    }
  };

  /** Slots in (lastFire, upTo] nobody fired: the flow's `missed` policy decides. Runs inside the lane. */
  const handleGap = async (lane: Lane, upTo: number) => {
    const schedule = lane.flow.on.schedule;
    if (!schedule || lane.lastFire === undefined || upTo <= lane.lastFire) return;
    const { slots, truncated } = missedSlots(schedule.cron, lane.timezone!, lane.lastFire, upTo, maxMissed);
    if (slots.length === 0) return;
    const policy = lane.flow.on.missed;
    if (truncated) {
      report('warn', `scheduler: flow '${lane.flow.name}' missed more than ${maxMissed} slots since ${new Date(lane.lastFire).toISOString()}; only the latest ${maxMissed} are considered`);
    }
    const latest = slots[slots.length - 1];
    lane.lastFire = latest;
    if (policy === 'all') lane.pending.push(...slots.map((s): PendingFire => ({ scheduledAt: s, trigger: 'missed', kind: 'catch-up' })));
    // `last` goes through the overlap policy below, which persists; the others persist here.
    if (policy !== 'last') await persist(lane);
    for (const s of slots) {
      const willRun = policy === 'all' || (policy === 'last' && s === latest);
      bus.emit('schedule:missed', { flow: lane.flow.name, scheduledAt: s, policy, willRun });
    }
    if (policy === 'last') await accept(lane, { scheduledAt: latest, trigger: 'missed' });
  };

  const onTick = (lane: Lane, scheduledAt: number) =>
    serial(lane, async () => {
      if (stopped || (lane.lastFire !== undefined && scheduledAt <= lane.lastFire)) return;
      bus.emit('schedule:fired', { flow: lane.flow.name, scheduledAt, firedAt: clock.now() });
      await handleGap(lane, scheduledAt - 1);
      await accept(lane, { scheduledAt, trigger: 'schedule' });
    }).then(() => drain(lane));

  const onMissed = (lane: Lane, scheduledAt: number) =>
    serial(lane, async () => {
      if (!stopped) await handleGap(lane, scheduledAt);
    }).then(() => drain(lane));

  const onRunEnded = (e: { flow: string }) => {
    const lane = lanes.get(e.flow);
    // A run the scheduler did not start (isBusy) has ended: waiting fires may go.
    if (lane && lane.pending.length > 0) setImmediate(() => void drain(lane));
  };

  return {
    add(flow, fire) {
      if (started) throw new Error(`scheduler: add('${flow.name}') after start()`);
      const schedule = flow.on.schedule;
      if (!schedule && !flow.on.startup) {
        throw new FlowError('FLOW_INVALID', { location: flow.file, path: 'on', reason: 'nothing to schedule: neither on.schedule nor on.startup: true' });
      }
      if (lanes.has(flow.name)) {
        throw new FlowError('FLOW_INVALID', { location: flow.file, path: 'name', reason: `a flow named '${flow.name}' is already scheduled` });
      }
      if (schedule) {
        const bad = validateCron(schedule.cron);
        if (bad) throw new FlowError('FLOW_INVALID', { location: flow.file, path: 'on.schedule.cron', reason: bad });
        const badTz = schedule.timezone === undefined ? undefined : validateTimezone(schedule.timezone);
        if (badTz) throw new FlowError('FLOW_INVALID', { location: flow.file, path: 'on.schedule.timezone', reason: badTz });
      }
      lanes.set(flow.name, {
        flow,
        fire,
        timezone: schedule ? (schedule.timezone ?? localTimezone()) : undefined,
        pending: [],
        active: 0,
        chain: Promise.resolve(),
      });
    },

    async start() {
      if (started) return;
      started = true;
      stopped = false;
      bus.on('run:finished', onRunEnded);
      bus.on('run:failed', onRunEnded);
      bus.on('run:interrupted', onRunEnded);
      const now = clock.now();
      await Promise.all(
        [...lanes.values()].map((lane) =>
          serial(lane, async () => {
            const record = await state.get<LaneRecord>(`flow:${lane.flow.name}`);
            lane.pending = Array.isArray(record?.pending) ? record.pending : [];
            if (typeof record?.lastFire === 'number') {
              lane.lastFire = record.lastFire;
              await handleGap(lane, now);
            } else if (lane.flow.on.schedule) {
              // First start: remember it, so that downtime from now on is detected.
              lane.lastFire = now;
              await persist(lane);
            }
            if (lane.flow.on.startup) await accept(lane, { scheduledAt: now, trigger: 'startup' });
          }),
        ),
      );
      if (stopped) return; // stop() while starting
      for (const lane of lanes.values()) {
        const schedule = lane.flow.on.schedule;
        if (schedule) {
          lane.timer = timer(
            { cron: schedule.cron, timezone: lane.timezone!, name: lane.flow.name },
            { tick: (t) => void onTick(lane, t), missed: (t) => void onMissed(lane, t) },
          );
        }
        void drain(lane);
      }
      await Promise.all([...lanes.values()].map((l) => l.chain));
    },

    async stop() {
      stopped = true;
      for (const lane of lanes.values()) {
        lane.timer?.stop();
        lane.timer = undefined;
      }
      bus.off('run:finished', onRunEnded);
      bus.off('run:failed', onRunEnded);
      bus.off('run:interrupted', onRunEnded);
      // Let decisions already under way finish their state writes.
      await Promise.all([...lanes.values()].map((l) => l.chain));
      started = false;
      checkIdle();
    },

    idle() {
      return new Promise<void>((resolve) => {
        idleWaiters.push(resolve);
        // Decisions in the lanes may be about to launch something: check after them.
        void Promise.all([...lanes.values()].map((l) => l.chain)).then(checkIdle);
      });
    },

    status() {
      const now = clock.now();
      return [...lanes.values()].map((lane): ScheduleStatus => {
        const schedule = lane.flow.on.schedule;
        return {
          flow: lane.flow.name,
          cron: schedule?.cron,
          timezone: lane.timezone,
          next: schedule && !stopped ? nextSlot(schedule.cron, lane.timezone!, now) : undefined,
          lastFire: lane.lastFire,
          active: lane.active,
          pending: lane.pending.length,
        };
      });
    },
  };
}
