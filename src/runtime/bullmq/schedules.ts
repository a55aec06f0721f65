/**
 * `on.schedule` on BullMQ: every `msgflow start` replica upserts one job
 * scheduler per scheduled flow (upsert: the same id and pattern from every
 * replica is one scheduler), and each fired slot is one job, taken by one
 * replica. That replica's cron scheduler then applies the flow's overlap
 * policy to the slot as it would to a node-cron tick.
 */
import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../../engine/action.js';
import type { TimerCallbacks, TimerSource } from '../../engine/schedule/types.js';
import { backoffDelay } from '../../util/backoff.js';
import { type BullmqTarget, SCHEDULE_QUEUE, bullmqConnection } from './names.js';

/**
 * Tries of one upsert. Replicas started together upsert the same scheduler at once, and BullMQ
 * may refuse the later one while the earlier one is adding the scheduler's next job ("job ID
 * already exists"); a moment later the same upsert finds the scheduler and succeeds.
 */
const UPSERT_TRIES = 5;
const UPSERT_BACKOFF = { baseMs: 100, maxMs: 2000, jitter: 'full' } as const;

export interface BullmqTimers {
  /** The cron scheduler's source of live slots. */
  timer: TimerSource;
  /** Starts taking fired slots (after every flow was added). */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** The id of a flow's job scheduler. */
export const scheduleId = (flow: string) => `flow-${flow}`;

export function bullmqTimers(target: BullmqTarget, logger: Logger): BullmqTimers {
  const connections: Redis[] = [];
  const conn = () => {
    const c = bullmqConnection(target.url);
    connections.push(c);
    return c;
  };
  const queue = new Queue(SCHEDULE_QUEUE, { connection: conn(), prefix: target.prefix });
  const lanes = new Map<string, TimerCallbacks>();
  const upserts: Promise<unknown>[] = [];
  let worker: Worker | undefined;
  const upsert = async (spec: Parameters<TimerSource>[0]): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      try {
        await queue.upsertJobScheduler(scheduleId(spec.name), { pattern: spec.cron, tz: spec.timezone }, { name: spec.name, data: {} });
        return;
      } catch (e) {
        if (attempt >= UPSERT_TRIES) throw e;
        await new Promise((r) => setTimeout(r, backoffDelay(UPSERT_BACKOFF, attempt)));
      }
    }
  };
  const timer: TimerSource = (spec, callbacks) => {
    lanes.set(spec.name, callbacks);
    const p = upsert(spec).catch((e: unknown) =>
      logger.error(`schedule of flow '${spec.name}' could not be registered in Redis: ${e instanceof Error ? e.message : String(e)}`),
    );
    upserts.push(p);
    // Stopping this replica keeps the scheduler: the other replicas still fire it.
    return { stop: () => void lanes.delete(spec.name) };
  };
  return {
    timer,
    async start() {
      await Promise.all(upserts);
      worker = new Worker(
        SCHEDULE_QUEUE,
        async (job) => {
          const scheduledAt = slotOf(job);
          const lane = lanes.get(job.name);
          if (!lane) {
            logger.warn(`schedule fired for flow '${job.name}', which this replica does not load`);
            return;
          }
          lane.tick(scheduledAt);
        },
        { connection: conn(), prefix: target.prefix, concurrency: 4 },
      );
      worker.on('error', (e) => logger.warn(`schedule worker: ${e.message}`));
      await worker.waitUntilReady();
    },
    async close() {
      await worker?.close();
      await queue.close();
      for (const c of connections) c.disconnect();
    },
  };
}

/**
 * The slot a scheduler's job stands for, exactly: the cron's time, not when a replica took it.
 * BullMQ keeps it as the job's `prevMillis` and in its id (`repeat:<scheduler>:<millis>`);
 * `timestamp + delay` is only near it (10-20 ms after: each is taken from its own clock read),
 * and a slot 10 ms late made the cron scheduler report the whole second's slot missed.
 */
function slotOf(job: Pick<Job, 'id' | 'opts' | 'timestamp' | 'delay'>): number {
  const prev = (job.opts as { prevMillis?: unknown }).prevMillis;
  if (typeof prev === 'number' && Number.isFinite(prev)) return prev;
  const fromId = /^repeat:.+:(\d+)$/.exec(job.id ?? '')?.[1];
  return fromId ? Number(fromId) : job.timestamp + (job.delay ?? 0);
}
