/**
 * The daemon's scheduling: unfinished runs resume first, then every flow with
 * `on.schedule` or `on.startup` is scheduled (missed slots caught up, startup
 * runs started).
 */
import type { Flow } from '../../engine/flow/types.js';
import { createCronScheduler } from '../../engine/schedule/cron-scheduler.js';
import type { FireFn, Scheduler } from '../../engine/schedule/types.js';
import type { Runtime } from '../runtime.js';
import type { Distributed } from './distributed.js';
import type { DaemonEvent } from './types.js';

export interface Scheduling {
  scheduler: Scheduler;
  /** How a scheduled flow's slot starts its run (the reloader schedules changed flows with it). */
  fireFor(flow: Flow): FireFn;
}

export async function scheduleFlows(
  runtime: Runtime,
  flows: readonly Flow[],
  dist: Distributed | undefined,
  tell: (e: DaemonEvent) => void,
): Promise<Scheduling> {
  const resumed = await runtime.engine.resumeUnfinished(flows);
  if (resumed.length > 0) tell({ type: 'resumed', runs: resumed.length });
  const scheduler = createCronScheduler({
    bus: runtime.bus,
    state: runtime.store.kv('scheduler'),
    clock: runtime.clock,
    isBusy: (flow) => runtime.engine.activeRuns().some((r) => r.flow === flow),
    // In bullmq mode the slots come from BullMQ job schedulers: each fires on one replica.
    // A replica starting must not report the slot another replica is about to take as missed.
    ...(dist ? { timer: dist.timer, lateSlotMs: 5_000 } : {}),
  });
  const fireFor =
    (flow: Flow): FireFn =>
    async ({ trigger }) => {
      const handle = await runtime.engine.start(flow, { trigger });
      await handle.done;
    };
  for (const flow of flows) if (flow.on.schedule || flow.on.startup) scheduler.add(flow, fireFor(flow));
  await scheduler.start();
  await dist?.start();
  tell({ type: 'scheduled', schedules: scheduler.status() });
  return { scheduler, fireFor };
}
