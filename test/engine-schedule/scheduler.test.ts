import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/util/clock.js';
import { FlowError } from '../../src/api/errors.js';
import { createCronScheduler } from '../../src/engine/schedule/cron-scheduler.js';
import { createBus, makeFlow, memoryState, recordEvents } from './helpers.js';
import { waitFor } from '../support/wait.js';

const START = Date.parse('2026-03-02T10:00:30Z');

describe('createCronScheduler', () => {
  it('refuses flows it cannot schedule, naming file and key', () => {
    const scheduler = createCronScheduler({ bus: createBus(), state: memoryState(), clock: new ManualClock(START) });
    const noop = async () => {};
    expect(() => scheduler.add(makeFlow('bad', { schedule: { cron: '61 * * * *' } }), noop)).toThrow(
      '/flows/bad.yaml on.schedule.cron: invalid cron expression "61 * * * *": minute (0-59) cannot be "61"',
    );
    expect(() => scheduler.add(makeFlow('tz', { schedule: { cron: '* * * * *', timezone: 'Europe/Atlantis' } }), noop)).toThrow(FlowError);
    expect(() => scheduler.add(makeFlow('none', {}), noop)).toThrow('/flows/none.yaml on: nothing to schedule');
    scheduler.add(makeFlow('ok', { schedule: { cron: '* * * * *' } }), noop);
    expect(() => scheduler.add(makeFlow('ok', { schedule: { cron: '* * * * *' } }), noop)).toThrow(
      "a flow named 'ok' is already scheduled",
    );
  });

  it('a fire that fails to start is reported and does not block later slots', async () => {
    const clock = new ManualClock(START);
    const bus = createBus();
    const logs = recordEvents(bus, ['log']);
    let calls = 0;
    const scheduler = createCronScheduler({ bus, state: memoryState(), clock });
    scheduler.add(makeFlow('flaky', { schedule: { cron: '* * * * *', timezone: 'UTC' }, overlap: 'skip' }), async () => {
      calls++;
      if (calls === 1) throw new Error('input leads: file data/leads.csv not found');
    });
    await scheduler.start();
    await clock.advance(60_000);
    await waitFor('logs.length === 1', () => logs.length === 1);
    expect(logs[0].event).toMatchObject({ level: 'error' });
    expect(logs[0].event.message).toContain(
      "run of flow 'flaky' (schedule 2026-03-02T10:01:00.000Z) failed to start: input leads: file data/leads.csv not found",
    );
    await clock.advance(60_000);
    await waitFor('calls === 2', () => calls === 2);
    await scheduler.stop();
  });

  it('status() lists next slot in the flow time zone and lastFire', async () => {
    const clock = new ManualClock(Date.parse('2026-01-15T06:00:00Z'));
    const scheduler = createCronScheduler({ bus: createBus(), state: memoryState(), clock });
    scheduler.add(makeFlow('berlin', { schedule: { cron: '0 9 * * *', timezone: 'Europe/Berlin' } }), async () => {});
    scheduler.add(makeFlow('ny', { schedule: { cron: '0 9 * * *', timezone: 'America/New_York' } }), async () => {});
    await scheduler.start();
    const byFlow = Object.fromEntries(scheduler.status().map((s) => [s.flow, s]));
    expect(new Date(byFlow.berlin.next!).toISOString()).toBe('2026-01-15T08:00:00.000Z');
    expect(new Date(byFlow.ny.next!).toISOString()).toBe('2026-01-15T14:00:00.000Z');
    expect(byFlow.berlin.lastFire).toBe(clock.now());
    await scheduler.stop();
    expect(scheduler.status()[0].next).toBeUndefined();
  });

  it("a schedule without a timezone is in its clock's zone: two schedulers on clocks of different zones each keep their own", async () => {
    const at = Date.parse('2026-01-15T06:00:00Z');
    const next = async (timeZone: string) => {
      const scheduler = createCronScheduler({ bus: createBus(), state: memoryState(), clock: new ManualClock(at, { timeZone }) });
      scheduler.add(makeFlow('daily', { schedule: { cron: '0 9 * * *' } }), async () => {});
      await scheduler.start();
      const [s] = scheduler.status();
      await scheduler.stop();
      return { timezone: s!.timezone, next: new Date(s!.next!).toISOString() };
    };
    const [tokyo, berlin] = await Promise.all([next('Asia/Tokyo'), next('Europe/Berlin')]);
    expect(tokyo).toEqual({ timezone: 'Asia/Tokyo', next: '2026-01-16T00:00:00.000Z' });
    expect(berlin).toEqual({ timezone: 'Europe/Berlin', next: '2026-01-15T08:00:00.000Z' });
  });

  it('idle() waits for scheduled runs to end', async () => {
    const clock = new ManualClock(START);
    let finish!: () => void;
    const scheduler = createCronScheduler({ bus: createBus(), state: memoryState(), clock });
    scheduler.add(makeFlow('boot', { startup: true }), () => new Promise<void>((r) => (finish = r)));
    await scheduler.start();
    let idle = false;
    const p = scheduler.idle().then(() => (idle = true));
    await waitFor('finish !== undefined', () => finish !== undefined);
    await new Promise((r) => setImmediate(r));
    expect(idle).toBe(false);
    finish();
    await p;
    expect(idle).toBe(true);
    await scheduler.stop();
  });
});
