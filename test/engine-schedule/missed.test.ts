import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/util/clock.js';
import { createCronScheduler } from '../../src/engine/schedule/cron-scheduler.js';
import type { TimerSource } from '../../src/engine/schedule/types.js';
import { controlledRuns, createBus, makeFlow, memoryState, recordEvents } from './helpers.js';
import { waitFor } from '../support/wait.js';

const iso = (t: number) => new Date(t).toISOString();
// Last fire Monday 2026-01-05 09:00Z; the daemon comes back Thursday 10:00Z: Tue, Wed, Thu 09:00 were missed.
const LAST = Date.parse('2026-01-05T09:00:00Z');
const NOW = Date.parse('2026-01-08T10:00:00Z');
const MISSED = ['2026-01-06T09:00:00.000Z', '2026-01-07T09:00:00.000Z', '2026-01-08T09:00:00.000Z'];

function setup(missed: 'none' | 'last' | 'all', initial: Record<string, unknown> = { 'flow:daily': { lastFire: LAST, pending: [] } }) {
  const clock = new ManualClock(NOW);
  const bus = createBus();
  const state = memoryState(initial);
  const runs = controlledRuns();
  const events = recordEvents(bus, ['schedule:missed']);
  const scheduler = createCronScheduler({ bus, state, clock });
  scheduler.add(makeFlow('daily', { schedule: { cron: '0 9 * * *', timezone: 'UTC' }, missed }), runs.fire);
  return { clock, bus, state, runs, events, scheduler };
}

describe('missed runs on start-up', () => {
  it('none: reports each missed slot, runs nothing, moves lastFire on', async () => {
    const { scheduler, runs, events, state } = setup('none');
    await scheduler.start();
    expect(runs.runs).toHaveLength(0);
    expect(events.map((e) => [iso(e.event.scheduledAt), e.event.willRun, e.event.policy])).toEqual(MISSED.map((m) => [m, false, 'none']));
    expect((await state.get<{ lastFire: number }>('flow:daily'))!.lastFire).toBe(Date.parse(MISSED[2]));
    await scheduler.stop();
  });

  it('last: runs once, for the latest slot', async () => {
    const { scheduler, runs, events, state } = setup('last');
    await scheduler.start();
    await waitFor('runs.runs.length === 1', () => runs.runs.length === 1);
    expect(runs.runs.map((r) => [r.trigger, iso(r.scheduledAt)])).toEqual([['missed', MISSED[2]]]);
    expect(events.map((e) => e.event.willRun)).toEqual([false, false, true]);
    expect((await state.get<{ lastFire: number }>('flow:daily'))!.lastFire).toBe(Date.parse(MISSED[2]));
    runs.runs[0].end();
    await scheduler.idle();
    expect(runs.runs).toHaveLength(1);
    await scheduler.stop();
  });

  it('all: runs every slot in order, one after the other', async () => {
    const { scheduler, runs, events } = setup('all');
    await scheduler.start();
    expect(events.map((e) => e.event.willRun)).toEqual([true, true, true]);
    for (let i = 0; i < 3; i++) {
      await waitFor(`run ${i + 1}`, () => runs.runs.length === i + 1);
      expect(runs.active).toBe(1); // the next slot waits for this one
      runs.runs[i].end();
    }
    await scheduler.idle();
    expect(runs.runs.map((r) => [r.trigger, iso(r.scheduledAt)])).toEqual(MISSED.map((m) => ['missed', m]));
    expect(runs.maxActive).toBe(1);
    await scheduler.stop();
  });

  it('all: a crash mid-way replays neither started nor finished slots', async () => {
    const first = setup('all');
    await first.scheduler.start();
    await waitFor('first.runs.runs.length === 1', () => first.runs.runs.length === 1);
    first.runs.runs[0].end();
    await waitFor('first.runs.runs.length === 2', () => first.runs.runs.length === 2);
    // "kill -9": the second run never ends and the scheduler is never stopped; a new process shares the state.
    const clock = new ManualClock(NOW + 60_000);
    const bus = createBus();
    const runs = controlledRuns();
    const again = createCronScheduler({ bus, state: first.state, clock });
    again.add(makeFlow('daily', { schedule: { cron: '0 9 * * *', timezone: 'UTC' }, missed: 'all' }), runs.fire);
    await again.start();
    await waitFor('runs.runs.length === 1', () => runs.runs.length === 1);
    runs.runs[0].end();
    await again.idle();
    // Slot 2 was taken off the durable list before it started: the engine's resume owns it now.
    expect(runs.runs.map((r) => iso(r.scheduledAt))).toEqual([MISSED[2]]);
    await again.stop();
  });

  it('first start: nothing is missed, the start time becomes the reference', async () => {
    const { scheduler, runs, events, state } = setup('all', {});
    await scheduler.start();
    expect(events).toHaveLength(0);
    expect(runs.runs).toHaveLength(0);
    expect(await state.get('flow:daily')).toEqual({ lastFire: NOW, pending: [] });
    await scheduler.stop();
  });

  it('computes missed slots in the flow time zone', async () => {
    const clock = new ManualClock(Date.parse('2026-01-06T08:30:00Z'));
    const bus = createBus();
    const events = recordEvents(bus, ['schedule:missed']);
    const state = memoryState({ 'flow:berlin': { lastFire: LAST, pending: [] }, 'flow:utc': { lastFire: LAST, pending: [] } });
    const scheduler = createCronScheduler({ bus, state, clock });
    const noop = async () => {};
    scheduler.add(makeFlow('berlin', { schedule: { cron: '0 9 * * *', timezone: 'Europe/Berlin' } }), noop);
    scheduler.add(makeFlow('utc', { schedule: { cron: '0 9 * * *', timezone: 'UTC' } }), noop);
    await scheduler.start();
    // 08:30Z is past 09:00 Berlin (08:00Z) but before 09:00 UTC.
    expect(events.map((e) => [e.event.flow, iso(e.event.scheduledAt)])).toEqual([['berlin', '2026-01-06T08:00:00.000Z']]);
    await scheduler.stop();
  });

  it('startup: true runs once at start', async () => {
    const clock = new ManualClock(NOW);
    const bus = createBus();
    const runs = controlledRuns();
    const scheduler = createCronScheduler({ bus, state: memoryState(), clock });
    scheduler.add(makeFlow('boot', { startup: true }), runs.fire);
    await scheduler.start();
    await waitFor('runs.runs.length === 1', () => runs.runs.length === 1);
    expect(runs.runs.map((r) => [r.trigger, r.scheduledAt])).toEqual([['startup', NOW]]);
    expect(scheduler.status()).toEqual([
      { flow: 'boot', cron: undefined, timezone: undefined, next: undefined, lastFire: undefined, active: 1, pending: 0 },
    ]);
    await scheduler.stop();
  });
});

describe('missed slots while running', () => {
  it('a tick after a gap applies the missed policy to the slots in between', async () => {
    const clock = new ManualClock(LAST);
    const bus = createBus();
    const runs = controlledRuns();
    const events = recordEvents(bus, ['schedule:missed', 'schedule:fired']);
    let deliver: ((t: number) => void) | undefined;
    const timer: TimerSource = (_spec, cb) => {
      deliver = cb.tick;
      return { stop: () => (deliver = undefined) };
    };
    const scheduler = createCronScheduler({ bus, state: memoryState({ 'flow:daily': { lastFire: LAST, pending: [] } }), clock, timer });
    scheduler.add(makeFlow('daily', { schedule: { cron: '0 9 * * *', timezone: 'UTC' }, missed: 'last', overlap: 'queue' }), runs.fire);
    await scheduler.start();
    // The machine slept three days; the timer wakes for Thursday's slot only.
    clock.set(NOW);
    deliver!(Date.parse(MISSED[2]));
    await waitFor('runs.runs.length === 1', () => runs.runs.length === 1);
    expect(events.map((e) => [e.name, iso(e.event.scheduledAt)])).toEqual([
      ['schedule:fired', MISSED[2]],
      ['schedule:missed', MISSED[0]],
      ['schedule:missed', MISSED[1]],
    ]);
    // `last` catch-up run for Wednesday first, Thursday's live fire queued behind it.
    runs.runs[0].end();
    await waitFor('runs.runs.length === 2', () => runs.runs.length === 2);
    expect(runs.runs.map((r) => [r.trigger, iso(r.scheduledAt)])).toEqual([
      ['missed', MISSED[1]],
      ['schedule', MISSED[2]],
    ]);
    // A duplicate delivery of an already handled slot is ignored.
    deliver!(Date.parse(MISSED[2]));
    runs.runs[1].end();
    await scheduler.idle();
    expect(runs.runs).toHaveLength(2);
    await scheduler.stop();
    expect(deliver).toBeUndefined();
  });
});

describe('replicas sharing the scheduler state (a shared timer fires each slot on one of them)', () => {
  it('a slot fired by one replica is neither missed nor fired again by the other', async () => {
    const clock = new ManualClock(LAST);
    const bus = createBus();
    const state = memoryState({ 'flow:daily': { lastFire: LAST, pending: [] } });
    const events = recordEvents(bus, ['schedule:missed']);
    const replicas = [0, 1].map(() => {
      const runs = controlledRuns();
      let deliver: ((t: number) => void) | undefined;
      const timer: TimerSource = (_spec, cb) => {
        deliver = cb.tick;
        return { stop: () => (deliver = undefined) };
      };
      const scheduler = createCronScheduler({ bus, state, clock, timer });
      scheduler.add(makeFlow('daily', { schedule: { cron: '0 9 * * *', timezone: 'UTC' }, missed: 'last', overlap: 'queue' }), runs.fire);
      return { runs, scheduler, deliver: (t: number) => deliver!(t) };
    });
    for (const r of replicas) await r.scheduler.start();
    // Tuesday's slot fires on replica 0, Wednesday's on replica 1, Wednesday's again (a duplicate) on replica 0.
    clock.set(Date.parse(MISSED[0]));
    replicas[0]!.deliver(Date.parse(MISSED[0]));
    await waitFor('the first run', () => replicas[0]!.runs.runs.length === 1);
    replicas[0]!.runs.runs[0]!.end();
    await replicas[0]!.scheduler.idle();
    clock.set(Date.parse(MISSED[1]));
    replicas[1]!.deliver(Date.parse(MISSED[1]));
    await waitFor('the second run', () => replicas[1]!.runs.runs.length === 1);
    replicas[1]!.runs.runs[0]!.end();
    await replicas[1]!.scheduler.idle();
    replicas[0]!.deliver(Date.parse(MISSED[1]));
    await replicas[0]!.scheduler.idle();
    expect(replicas.map((r) => r.runs.runs.map((x) => [x.trigger, iso(x.scheduledAt)]))).toEqual([
      [['schedule', MISSED[0]]],
      [['schedule', MISSED[1]]],
    ]);
    expect(events).toEqual([]);
    for (const r of replicas) await r.scheduler.stop();
  });

  it('a replica starting while another takes the latest slot late does not report that slot missed', async () => {
    // Replica 0 fired 09:00 on Tuesday; the shared timer hands Wednesday's slot to replica 0 0.8 s
    // late, while replica 1 starts 0.8 s after the slot.
    const wednesday = Date.parse(MISSED[1]);
    const clock = new ManualClock(Date.parse(MISSED[0]));
    const bus = createBus();
    const state = memoryState({ 'flow:daily': { lastFire: Date.parse(MISSED[0]), pending: [] } });
    const events = recordEvents(bus, ['schedule:missed']);
    const runs = controlledRuns();
    let deliver: ((t: number) => void) | undefined;
    const timer: TimerSource = (_spec, cb) => {
      deliver = cb.tick;
      return { stop: () => (deliver = undefined) };
    };
    const starting = createCronScheduler({ bus, state, clock, timer: () => ({ stop() {} }), lateSlotMs: 5_000 });
    starting.add(makeFlow('daily', { schedule: { cron: '0 9 * * *', timezone: 'UTC' }, missed: 'none' }), controlledRuns().fire);
    const firing = createCronScheduler({ bus, state, clock, timer });
    firing.add(makeFlow('daily', { schedule: { cron: '0 9 * * *', timezone: 'UTC' }, missed: 'none' }), runs.fire);
    await firing.start();
    clock.set(wednesday + 800);
    await starting.start();
    deliver!(wednesday);
    await waitFor('the late slot runs', () => runs.runs.length === 1);
    expect(events).toEqual([]);
    runs.runs[0]!.end();
    // Without the allowance the starting replica takes the slot in flight for a missed one.
    const eager = createCronScheduler({
      bus,
      state: memoryState({ 'flow:daily': { lastFire: Date.parse(MISSED[0]), pending: [] } }),
      clock,
      timer: () => ({ stop() {} }),
    });
    eager.add(makeFlow('daily', { schedule: { cron: '0 9 * * *', timezone: 'UTC' }, missed: 'none' }), controlledRuns().fire);
    await eager.start();
    expect(events.map((e) => iso(e.event.scheduledAt))).toEqual([MISSED[1]]);
    for (const s of [starting, firing, eager]) await s.stop();
  });

  it('a tick does not take the slot before it for missed while that slot may still be firing on another replica', async () => {
    // Slots every second; the last record says 41 s. Slot 42 is being fired on another replica, its
    // record not written yet, when this replica takes slot 43, 1.2 s late.
    const at = (sec: number) => Date.parse('2026-01-05T09:00:00Z') + sec * 1000;
    const tickAt = async (lateSlotMs: number | undefined) => {
      const clock = new ManualClock(at(41) + 100);
      const bus = createBus();
      const events = recordEvents(bus, ['schedule:missed']);
      let deliver: ((t: number) => void) | undefined;
      const timer: TimerSource = (_spec, cb) => {
        deliver = cb.tick;
        return { stop: () => (deliver = undefined) };
      };
      const state = memoryState({ 'flow:tick': { lastFire: at(41), pending: [] } });
      const runs = controlledRuns();
      const scheduler = createCronScheduler({ bus, state, clock, timer, ...(lateSlotMs === undefined ? {} : { lateSlotMs }) });
      scheduler.add(makeFlow('tick', { schedule: { cron: '* * * * * *', timezone: 'UTC' }, missed: 'none', overlap: 'allow' }), runs.fire);
      await scheduler.start();
      clock.set(at(43) + 1200);
      deliver!(at(43));
      await waitFor('slot 43 runs', () => runs.runs.length === 1);
      await scheduler.stop();
      return events.map((e) => iso(e.event.scheduledAt));
    };
    expect(await tickAt(5_000)).toEqual([]);
    expect(await tickAt(undefined)).toEqual([iso(at(42))]);
  });
});
