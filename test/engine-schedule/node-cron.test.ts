import { describe, expect, it } from 'vitest';
import { createCronScheduler } from '../../src/engine/schedule/cron-scheduler.js';
import type { FireInfo } from '../../src/engine/schedule/types.js';
import { createBus, makeFlow, memoryState, recordEvents } from './helpers.js';

describe('node-cron driver (real time)', () => {
  it('fires a per-second schedule with whole-second slots, then stops', async () => {
    const bus = createBus();
    const fired = recordEvents(bus, ['schedule:fired']);
    const runs: FireInfo[] = [];
    const scheduler = createCronScheduler({ bus, state: memoryState() });
    scheduler.add(makeFlow('tick', { schedule: { cron: '* * * * * *', timezone: 'Europe/Berlin' }, overlap: 'allow' }), async (info) => {
      runs.push(info);
    });
    const started = Date.now();
    await scheduler.start();
    const deadline = Date.now() + 5_000;
    while (runs.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await scheduler.stop();
    expect(runs.length).toBeGreaterThanOrEqual(2);
    for (const r of runs) {
      expect(r.trigger).toBe('schedule');
      expect(r.scheduledAt % 1000).toBe(0);
      expect(r.scheduledAt).toBeGreaterThan(started - 1000);
    }
    expect(runs[1].scheduledAt).toBeGreaterThan(runs[0].scheduledAt);
    expect(fired.map((f) => f.event.scheduledAt)).toEqual(runs.map((r) => r.scheduledAt));
    const count = runs.length;
    await new Promise((r) => setTimeout(r, 1200));
    expect(runs.length).toBe(count);
  });
});
