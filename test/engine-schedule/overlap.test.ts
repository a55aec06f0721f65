import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/util/clock.js';
import { createCronScheduler } from '../../src/engine/schedule/cron-scheduler.js';
import type { FlowTrigger } from '../../src/engine/flow/types.js';
import { controlledRuns, createBus, makeFlow, memoryState, recordEvents } from './helpers.js';
import { waitFor } from '../support/wait.js';

const MIN = 60_000;
const START = Date.parse('2026-03-02T10:00:30Z');
const slot = (n: number) => Date.parse('2026-03-02T10:00:00Z') + n * MIN; // slot(1) = 10:01

function setup(
  overlap: FlowTrigger['overlap'],
  extra: { isBusy?: (f: string) => boolean; queueLimit?: number; state?: ReturnType<typeof memoryState> } = {},
) {
  const clock = new ManualClock(START);
  const bus = createBus();
  const state = extra.state ?? memoryState();
  const runs = controlledRuns();
  const events = recordEvents(bus, ['schedule:fired', 'schedule:skipped']);
  const scheduler = createCronScheduler({ bus, state, clock, isBusy: extra.isBusy, queueLimit: extra.queueLimit });
  scheduler.add(makeFlow('every-minute', { schedule: { cron: '* * * * *', timezone: 'UTC' }, overlap }), runs.fire);
  return { clock, bus, state, runs, events, scheduler };
}

describe('overlap policies (ManualClock-driven timer)', () => {
  it('fires each slot as time passes', async () => {
    const { clock, scheduler, runs, events } = setup('allow');
    await scheduler.start();
    expect(scheduler.status()[0].next).toBe(slot(1));
    await clock.advance(3 * MIN);
    await waitFor('runs.runs.length === 3', () => runs.runs.length === 3);
    expect(runs.runs.map((r) => [r.trigger, r.scheduledAt])).toEqual([1, 2, 3].map((n) => ['schedule', slot(n)]));
    expect(events.filter((e) => e.name === 'schedule:fired').map((e) => e.event.scheduledAt)).toEqual([slot(1), slot(2), slot(3)]);
    await scheduler.stop();
  });

  it('allow: runs overlap', async () => {
    const { clock, scheduler, runs } = setup('allow');
    await scheduler.start();
    await clock.advance(3 * MIN);
    await waitFor('runs.runs.length === 3', () => runs.runs.length === 3);
    expect(runs.maxActive).toBe(3);
    await scheduler.stop();
  });

  it('skip: a fire during an active run is skipped with schedule:skipped; the next free slot runs', async () => {
    const { clock, scheduler, runs, events } = setup('skip');
    await scheduler.start();
    await clock.advance(MIN);
    await waitFor('runs.runs.length === 1', () => runs.runs.length === 1);
    await clock.advance(2 * MIN);
    await waitFor(
      "events.filter((e) => e.name === 'schedule:skipped').length === 2",
      () => events.filter((e) => e.name === 'schedule:skipped').length === 2,
    );
    expect(runs.runs).toHaveLength(1);
    expect(events.filter((e) => e.name === 'schedule:skipped').map((e) => e.event.scheduledAt)).toEqual([slot(2), slot(3)]);
    runs.runs[0].end();
    await waitFor('runs.active === 0', () => runs.active === 0);
    await clock.advance(MIN);
    await waitFor('runs.runs.length === 2', () => runs.runs.length === 2);
    expect(runs.runs[1].scheduledAt).toBe(slot(4));
    expect(runs.maxActive).toBe(1);
    await scheduler.stop();
  });

  it('skip: counts runs the scheduler did not start (isBusy)', async () => {
    let manualRunActive = true;
    const { clock, scheduler, runs, events } = setup('skip', { isBusy: () => manualRunActive });
    await scheduler.start();
    await clock.advance(MIN);
    await waitFor("events.some((e) => e.name === 'schedule:skipped')", () => events.some((e) => e.name === 'schedule:skipped'));
    expect(runs.runs).toHaveLength(0);
    manualRunActive = false;
    await clock.advance(MIN);
    await waitFor('runs.runs.length === 1', () => runs.runs.length === 1);
    await scheduler.stop();
  });

  it('queue: waits for the active run; a newer fire replaces the waiting one (queueLimit 1)', async () => {
    const { clock, scheduler, runs, events, state } = setup('queue');
    await scheduler.start();
    await clock.advance(MIN);
    await waitFor('runs.runs.length === 1', () => runs.runs.length === 1);
    await clock.advance(MIN); // slot 2 waits
    await waitFor('scheduler.status()[0].pending === 1', () => scheduler.status()[0].pending === 1);
    expect((await state.get<{ pending: Array<{ scheduledAt: number }> }>('flow:every-minute'))!.pending.map((p) => p.scheduledAt)).toEqual([
      slot(2),
    ]);
    await clock.advance(MIN); // slot 3 takes slot 2's place
    await waitFor("events.some((e) => e.name === 'schedule:skipped')", () => events.some((e) => e.name === 'schedule:skipped'));
    expect(events.filter((e) => e.name === 'schedule:skipped').map((e) => e.event.scheduledAt)).toEqual([slot(2)]);
    expect(scheduler.status()[0]).toMatchObject({ active: 1, pending: 1 });
    runs.runs[0].end();
    await waitFor('runs.runs.length === 2', () => runs.runs.length === 2);
    expect(runs.runs[1]).toMatchObject({ trigger: 'schedule', scheduledAt: slot(3) });
    expect(runs.maxActive).toBe(1);
    await scheduler.stop();
  });

  it('queue: with queueLimit 2 both waiting fires run, in order', async () => {
    const { clock, scheduler, runs, events } = setup('queue', { queueLimit: 2 });
    await scheduler.start();
    await clock.advance(3 * MIN);
    await waitFor('scheduler.status()[0].pending === 2', () => scheduler.status()[0].pending === 2);
    expect(events.some((e) => e.name === 'schedule:skipped')).toBe(false);
    runs.runs[0].end();
    await waitFor('runs.runs.length === 2', () => runs.runs.length === 2);
    runs.runs[1].end();
    await waitFor('runs.runs.length === 3', () => runs.runs.length === 3);
    runs.runs[2].end();
    await scheduler.idle();
    expect(runs.runs.map((r) => r.scheduledAt)).toEqual([slot(1), slot(2), slot(3)]);
    expect(runs.maxActive).toBe(1);
    await scheduler.stop();
  });

  it('queue: a waiting fire survives a restart and runs when the scheduler starts again', async () => {
    const first = setup('queue');
    await first.scheduler.start();
    await first.clock.advance(2 * MIN);
    await waitFor('first.scheduler.status()[0].pending === 1', () => first.scheduler.status()[0].pending === 1);
    // Crash: the active run and the scheduler vanish without stop().
    const second = setup('queue', { state: first.state });
    second.clock.set(START + 2 * MIN + 10_000); // back up 10 s later, before the next slot
    await second.scheduler.start();
    await waitFor('second.runs.runs.length === 1', () => second.runs.runs.length === 1);
    expect(second.runs.runs[0]).toMatchObject({ trigger: 'schedule', scheduledAt: slot(2) });
    await second.scheduler.stop();
  });

  it('stop() disarms the timer: no fire after it', async () => {
    const { clock, scheduler, runs } = setup('allow');
    await scheduler.start();
    await scheduler.stop();
    await clock.advance(5 * MIN);
    await new Promise((r) => setImmediate(r));
    expect(runs.runs).toHaveLength(0);
    expect(clock.pending).toBe(0);
  });
});
