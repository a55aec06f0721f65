/**
 * What a daemon adds with executor bullmq: schedules as BullMQ job schedulers
 * (each fired slot taken by one replica), and item workers unless told not to.
 * BullMQ is loaded only in that mode: a local daemon starts faster without it.
 */
import type { TimerSource } from '../../engine/schedule/types.js';
import type { Logger } from '../../util/logger.js';
import type { ItemWorkers } from '../bullmq/workers.js';
import type { Runtime } from '../runtime.js';
import type { DaemonEvent } from './types.js';

export interface Distributed {
  timer: TimerSource;
  /** Starts taking fired slots (after every flow was added) and working items. */
  start(): Promise<void>;
  /** The queues worked here, once started (none with `work: false`). */
  work(): { queues: number; concurrency: number } | undefined;
  close(): Promise<void>;
}

export async function distributed(
  runtime: Runtime,
  o: { work: boolean; concurrency: number; logger: Logger; tell(e: DaemonEvent): void },
): Promise<Distributed> {
  const [{ bullmqTarget }, { bullmqTimers }, { startItemWorkers }] = await Promise.all([
    import('../bullmq/names.js'),
    import('../bullmq/schedules.js'),
    import('../bullmq/workers.js'),
  ]);
  const timers = bullmqTimers(bullmqTarget(runtime.config), o.logger);
  let workers: ItemWorkers | undefined;
  return {
    timer: timers.timer,
    async start() {
      await timers.start();
      if (!o.work) return;
      workers = await startItemWorkers({ runtime, concurrency: o.concurrency, logger: o.logger });
      o.tell({ type: 'working', queues: workers.identities.length, concurrency: o.concurrency });
    },
    work: () => (workers ? { queues: workers.identities.length, concurrency: o.concurrency } : undefined),
    async close() {
      await workers?.close();
      await timers.close();
    },
  };
}
