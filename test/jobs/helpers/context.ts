/**
 * A hand-built ActionContext for driving the job actions directly: durable
 * state kept in Maps that outlive a simulated process (pass the same
 * MemoryDurable objects to the "restarted" context), durable waits recorded
 * in that state, and every emitted event and progress update collected.
 */
import path from 'node:path';
import type { ActionContext, DurableState, Logger, WaitOptions } from '../../../src/engine/action.js';
import type { InstanceApi } from '../../../src/api/types.js';
import type { Clock } from '../../../src/util/clock.js';

export class MemoryDurable implements DurableState {
  readonly map = new Map<string, string>();
  async get<T>(key: string): Promise<T | undefined> {
    const v = this.map.get(key);
    return v === undefined ? undefined : (JSON.parse(v) as T);
  }
  async set(key: string, value: unknown): Promise<void> {
    // Stored as JSON, as a real store would: no shared object references.
    this.map.set(key, JSON.stringify(value));
  }
  async delete(key: string): Promise<void> {
    this.map.delete(key);
  }
  async entries<T>(prefix = ''): Promise<Array<[string, T]>> {
    return [...this.map].filter(([k]) => k.startsWith(prefix)).map(([k, v]) => [k, JSON.parse(v) as T]);
  }
}

/** Durable storage of one simulated machine: the step state and the shared namespaces. */
export class Durables {
  readonly step = new MemoryDurable();
  readonly sharedSpaces = new Map<string, MemoryDurable>();
  shared(ns: string): MemoryDurable {
    let s = this.sharedSpaces.get(ns);
    if (!s) this.sharedSpaces.set(ns, (s = new MemoryDurable()));
    return s;
  }
}

export interface TestContext extends ActionContext {
  events: { name: string; payload?: Record<string, unknown> }[];
  progressLog: { done: number; total?: number; failed?: number }[];
  waits: { until: number; reason: string; key: string }[];
  logs: string[];
  abort: AbortController;
  /** Resolves when the action enters a durable wait. */
  waiting: Promise<void>;
}

export interface MakeContextOptions {
  client: InstanceApi;
  clock: Clock;
  durables: Durables;
  baseDir: string;
  runId?: string;
  flow?: string;
  step?: string;
  dryRun?: boolean;
  instanceName?: string;
  inputs?: Record<string, unknown>;
}

export function makeContext(o: MakeContextOptions): TestContext {
  const abort = new AbortController();
  const logs: string[] = [];
  const log =
    (level: string) =>
    (message: string, fields?: Record<string, unknown>): void =>
      void logs.push(`${level} ${message}${fields ? ' ' + JSON.stringify(fields) : ''}`);
  const logger: Logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
  let signalWaiting!: () => void;
  const waiting = new Promise<void>((r) => (signalWaiting = r));
  const ctx: TestContext = {
    client: o.client,
    instanceName: o.instanceName ?? 'default',
    logger,
    run: {
      id: o.runId ?? 'run-1',
      flow: o.flow ?? 'test-flow',
      step: o.step ?? 'job',
      attempt: 1,
      dryRun: o.dryRun ?? false,
      inputs: o.inputs ?? {},
    },
    signal: abort.signal,
    clock: o.clock,
    state: o.durables.step,
    shared: (ns) => o.durables.shared(ns),
    async wait(w: WaitOptions) {
      const key = `__wait:${w.key ?? 'wait'}`;
      let until = await o.durables.step.get<number>(key);
      if (until === undefined) {
        until = w.until ?? o.clock.now() + (w.ms ?? 0);
        await o.durables.step.set(key, until);
      }
      ctx.waits.push({ until, reason: w.reason, key: w.key ?? 'wait' });
      signalWaiting();
      const left = until - o.clock.now();
      if (left > 0) await o.clock.sleep(left, abort.signal);
      await o.durables.step.delete(key);
    },
    progress: (p) => void ctx.progressLog.push(p),
    emit: (name, payload) => void ctx.events.push({ name, payload }),
    resolvePath: (p) => path.resolve(o.baseDir, p),
    events: [],
    progressLog: [],
    waits: [],
    logs,
    abort,
    waiting,
  };
  return ctx;
}
