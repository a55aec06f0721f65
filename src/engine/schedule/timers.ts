/**
 * Timer sources: node-cron for production (it owns the real-time heartbeat,
 * time zones and DST), and a Clock-driven one for tests and embedders that
 * control time.
 */
import { createTask } from 'node-cron';
import type { Logger } from '../action.js';
import type { Clock } from '../../util/clock.js';
import { nextSlot } from './slots.js';
import type { TimerSource } from './types.js';

/**
 * Live slots from node-cron 4 (`timezone` option). Slots node-cron reports as
 * missed (event loop stalled past its tolerance) are passed on so the flow's
 * `missed` policy decides about them instead of node-cron's warning.
 */
export function nodeCronTimer(logger?: Logger): TimerSource {
  // node-cron logs through its own console logger by default; route it to ours.
  const cronLogger = {
    info: (m: string) => logger?.debug(m),
    warn: (m: string) => logger?.debug(m),
    error: (m: string | Error, err?: Error) => logger?.error(String(m), err ? { error: err.message } : undefined),
    debug: (m: string | Error) => logger?.debug(String(m)),
  };
  return (spec, callbacks) => {
    const task = createTask(spec.cron, (ctx) => callbacks.tick(ctx.date.getTime()), {
      timezone: spec.timezone,
      name: `msgflow:${spec.name}`,
      logger: cronLogger,
      suppressMissedWarning: true,
    });
    task.on('execution:missed', (ctx) => callbacks.missed?.(ctx.date.getTime()));
    void task.start();
    return {
      stop: () => {
        void task.destroy();
      },
    };
  };
}

/**
 * Live slots computed with cron-parser and awaited on a Clock. With a
 * ManualClock, `advance(3 * 3600_000)` delivers every slot of those three
 * hours, in order.
 */
export function clockTimer(clock: Clock): TimerSource {
  return (spec, callbacks) => {
    const ac = new AbortController();
    const loop = async () => {
      let after = clock.now();
      while (!ac.signal.aborted) {
        const next = nextSlot(spec.cron, spec.timezone, after);
        if (next === undefined) return;
        try {
          await clock.sleep(next - clock.now(), ac.signal);
        } catch {
          return; // aborted by stop()
        }
        if (ac.signal.aborted) return;
        callbacks.tick(next);
        after = next;
      }
    };
    void loop();
    return { stop: () => ac.abort() };
  };
}
