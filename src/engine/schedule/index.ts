/**
 * Scheduling of flows with `on.schedule` / `on.startup`: validation helpers for
 * the flow loader, the Scheduler interface and its embedded node-cron driver.
 *
 * Policies (per flow, see {@link createCronScheduler}):
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
 * The last slot handled is persisted before the run it implies starts, so a
 * crash never makes a slot run twice.
 */
export { validateCron, validateTimezone } from './validate.js';
export { createCronScheduler, type CronSchedulerOptions } from './cron-scheduler.js';
export { nodeCronTimer, clockTimer } from './timers.js';
export { nextSlot, missedSlots, localTimezone, type MissedSlots } from './slots.js';
export type {
  Scheduler,
  FireFn,
  FireInfo,
  FireTrigger,
  ScheduleStatus,
  TimerSource,
  TimerSpec,
  TimerCallbacks,
  CronTimer,
} from './types.js';
