/**
 * `msgflow worker` (and `msgflow start` in bullmq mode): one BullMQ Worker
 * per instance identity of config.yaml, working that instance's items.
 *
 * - Limiter: the instance's rate limit (its highest per-method requests per
 *   second) caps the queue for all workers together; each process's client
 *   still paces every method by its own limit.
 * - A checkAccount pause (kv `pauses`, the record `msgflow pauses` lists)
 *   rate-limits the whole queue (BullMQ's manual rate limit), re-checked at
 *   least every PAUSE_RECHECK_MS so that `msgflow pauses lift` takes effect
 *   soon.
 * - A worker killed with kill -9 holds its items' locks until they expire
 *   (executor.lockDurationMs); another worker's stalled-job check
 *   (executor.stalledIntervalMs) then gives them back to the queue.
 */
import { DelayedError, Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { METHOD_SPECS, API_METHODS, defaultRateLimits } from '../../api/methods.js';
import type { Config } from '../../config/load.js';
import type { Logger } from '../../engine/action.js';
import { identityOf } from '../clients.js';
import type { Runtime } from '../runtime.js';
import { ItemHost, type ItemJobData, type ItemJobResult } from './item-host.js';
import type { WorkerDeps } from './run-context.js';
import { isStepJob, StepHost, type StepJobData, type StepJobResult } from './step-host.js';
import { bullmqConnection, bullmqTarget, itemQueueName } from './names.js';

/** The longest a queue stays rate-limited on one pause check. */
export const PAUSE_RECHECK_MS = 30_000;
/** How often a job whose worker died may be taken over before it fails. */
const MAX_STALLED = 10;

export interface ItemWorkersOptions {
  runtime: Runtime;
  /** Items worked at once per instance queue. @default 8 */
  concurrency?: number;
  logger: Logger;
}

export interface ItemWorkers {
  /** The instance identities whose queues this process works. */
  readonly identities: string[];
  /** Lets active items finish (their results are recorded), then disconnects. */
  close(): Promise<void>;
}

/** The instance's total rate as a BullMQ limiter; none when the client does not limit it. */
export function instanceLimiter(config: Config, name: string): { max: number; duration: number } {
  const inst = config.instances[name];
  if (inst?.rateLimit === false) return { max: Number.MAX_SAFE_INTEGER, duration: 1000 };
  const limits = { ...defaultRateLimits(), ...stripUndefined(inst?.rateLimits ?? {}) };
  const rates = API_METHODS.map((m) => limits[m] ?? METHOD_SPECS[m].defaultRatePerSecond);
  // 0 means unlimited; BullMQ's manual rate limit (pauses) needs a limiter to be set, so "unlimited" is a very large one.
  const max = rates.some((r) => r === 0) ? Number.MAX_SAFE_INTEGER : Math.max(1, ...rates);
  return { max, duration: 1000 };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export async function startItemWorkers(opts: ItemWorkersOptions): Promise<ItemWorkers> {
  const { runtime, logger } = opts;
  const { config } = runtime;
  const target = bullmqTarget(config);
  const deps: WorkerDeps = {
    store: runtime.store,
    bus: runtime.bus,
    clock: runtime.clock,
    registry: runtime.registry,
    logger,
    clientFor: (name) => runtime.clientFor(name),
    identityFor: (name) => identityOf(config, name),
    flows: () => new Map(runtime.flows().flows.map((f) => [f.name, f])),
    localUrl: runtime.localUrl,
    secret: runtime.secret,
    baseDir: config.baseDir,
    defaultRateLimitWaitMs: 1000,
    journalLagMs: config.executor.journalLagMs,
    lockDurationMs: config.executor.lockDurationMs,
    redactor: runtime.redactor,
    ...(runtime.telemetry ? { tracer: runtime.telemetry.tracer } : {}),
  };
  const hosts: Hosts = { items: new ItemHost(deps), steps: new StepHost(deps) };
  const connections: Redis[] = [];
  const conn = () => {
    const c = bullmqConnection(target.url);
    connections.push(c);
    return c;
  };
  const lanes: QueueWorker[] = [];
  const byIdentity = new Map<string, string>();
  for (const name of Object.keys(config.instances))
    if (!byIdentity.has(identityOf(config, name))) byIdentity.set(identityOf(config, name), name);
  for (const [identity, name] of byIdentity) {
    lanes.push(
      workQueue(hosts, identity, {
        connection: conn,
        prefix: target.prefix,
        concurrency: opts.concurrency ?? 8,
        limiter: instanceLimiter(config, name),
        lockDurationMs: config.executor.lockDurationMs,
        stalledIntervalMs: config.executor.stalledIntervalMs,
        label: `instance '${name}'`,
        logger,
      }),
    );
  }
  await Promise.all(lanes.map((l) => l.worker.waitUntilReady()));
  return {
    identities: [...byIdentity.keys()],
    async close() {
      // A step may run for hours (a campaign): it stops at its next safe point and goes back to the queue; items finish.
      hosts.steps.stop();
      await Promise.all(lanes.map((l) => l.close()));
      for (const c of connections) c.disconnect();
    },
  };
}

/** What a worker works: forEach items, and single steps sent to workers. */
export interface Hosts {
  items: ItemHost;
  steps: StepHost;
}

export interface WorkQueueOptions {
  connection(): Redis;
  prefix: string;
  concurrency: number;
  limiter: { max: number; duration: number };
  lockDurationMs: number;
  stalledIntervalMs: number;
  /** Names the queue in log lines (never its identity's secrets: identities are hashes). */
  label: string;
  logger: Logger;
}

type JobData = ItemJobData | StepJobData;
type JobResult = ItemJobResult | StepJobResult;

export interface QueueWorker {
  worker: Worker<JobData, JobResult>;
  close(): Promise<void>;
}

/** One BullMQ Worker on an instance identity's queue (its items and steps), with the pause handling. */
export function workQueue(hosts: Hosts, identity: string, o: WorkQueueOptions): QueueWorker {
  const queueName = itemQueueName(identity);
  const queue = new Queue(queueName, { connection: o.connection(), prefix: o.prefix });
  const worker = new Worker<JobData, JobResult>(
    queueName,
    async (job, token, signal) => {
      const { data } = job;
      if (isStepJob(data)) {
        const r = await hosts.steps.process(data, signal ?? new AbortController().signal, (p) => job.updateProgress(p));
        if (r.kind !== 'later' && r.kind !== 'interrupted') return r;
        // Back to the queue without spending an attempt: at once when this worker stops, later when another holds the step.
        await job.moveToDelayed(Date.now() + (r.kind === 'later' ? r.ms : 0), token);
        throw new DelayedError();
      }
      const r = await hosts.items.process(data, signal, job.attemptsMade === 0 && job.attemptsStarted <= 1 && !job.stalledCounter);
      if (r.kind === 'later') {
        // Only this item waits (a dead worker's send still being looked for at the service).
        await job.moveToDelayed(Date.now() + r.ms, token);
        throw new DelayedError();
      }
      if (r.kind !== 'paused') return r;
      // Every worker of the queue stops taking items (BullMQ's manual rate limit); this one goes back to wait.
      await queue.rateLimit(Math.min(r.ms, PAUSE_RECHECK_MS));
      throw Worker.RateLimitError();
    },
    {
      connection: o.connection(),
      prefix: o.prefix,
      concurrency: o.concurrency,
      limiter: o.limiter,
      lockDuration: o.lockDurationMs,
      stalledInterval: o.stalledIntervalMs,
      maxStalledCount: MAX_STALLED,
    },
  );
  worker.on('error', (e) => o.logger.warn(`worker of ${o.label}: ${e.message}`));
  worker.on('stalled', (id) => o.logger.info(`item ${id} of ${o.label}: its worker stopped; taken over`));
  return {
    worker,
    async close() {
      await worker.close();
      await queue.close();
    },
  };
}
