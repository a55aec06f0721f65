import { describe, expect, it } from 'vitest';
import { createCronScheduler } from '../../src/engine/schedule/cron-scheduler.js';
import type { FireInfo } from '../../src/engine/schedule/types.js';
import { waitFor } from '../support/wait.js';
import { createBus, makeFlow, memoryState, recordEvents } from './helpers.js';

describe('node-cron driver (real time)', () => {
  it('fires a per-second schedule with whole-second slots, then stops', async () => {
    // Two schedulers on the same per-second schedule: `kept` fires twice, proving the slots
    // recur; `stopped` is stopped after its first fire, and `kept`'s second fire is the slot it
    // would have fired in (no fixed sleep to prove it stays quiet).
    const started = Date.now();
    const ticker = (name: string) => {
      const bus = createBus();
      const fired = recordEvents(bus, ['schedule:fired']);
      const runs: FireInfo[] = [];
      const scheduler = createCronScheduler({ bus, state: memoryState() });
      scheduler.add(makeFlow(name, { schedule: { cron: '* * * * * *', timezone: 'Europe/Berlin' }, overlap: 'allow' }), async (info) => {
        runs.push(info);
      });
      return { scheduler, fired, runs };
    };
    const kept = ticker('kept');
    const stopped = ticker('stopped');
    await Promise.all([kept.scheduler.start(), stopped.scheduler.start()]);
    try {
      await waitFor('the first fire', () => stopped.runs.length > 0, { timeoutMs: 5_000, intervalMs: 10 });
      await stopped.scheduler.stop();
      await waitFor('a second fire', () => kept.runs.length >= 2 && kept.runs.at(-1)!.scheduledAt > stopped.runs[0]!.scheduledAt, {
        timeoutMs: 5_000,
        intervalMs: 10,
      });
      // The slot's timers run together; a little slack lets a fire of the stopped one show if it came.
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await kept.scheduler.stop();
      await stopped.scheduler.stop();
    }
    for (const r of [...kept.runs, ...stopped.runs]) {
      expect(r.trigger).toBe('schedule');
      expect(r.scheduledAt % 1000).toBe(0);
      expect(r.scheduledAt).toBeGreaterThan(started - 1000);
    }
    expect(kept.runs[1]!.scheduledAt).toBeGreaterThan(kept.runs[0]!.scheduledAt);
    for (const t of [kept, stopped]) expect(t.fired.map((f) => f.event.scheduledAt)).toEqual(t.runs.map((r) => r.scheduledAt));
    expect(stopped.runs).toHaveLength(1);
  });
});
