/** Test helpers for the scheduler: an in-memory DurableState, flow fixtures, deferred runs. */
import type { DurableState } from '../../src/engine/action.js';
import { createBus, type EngineBus, type EngineEvents } from '../../src/engine/events.js';
import type { Flow, FlowTrigger } from '../../src/engine/flow/types.js';
import type { FireInfo } from '../../src/engine/schedule/types.js';

/** JSON round-trips values, like a real store, so tests catch non-serialisable state. */
export function memoryState(initial: Record<string, unknown> = {}): DurableState & { data: Map<string, string> } {
  const data = new Map<string, string>(Object.entries(initial).map(([k, v]) => [k, JSON.stringify(v)]));
  return {
    data,
    async get<T>(key: string) {
      const v = data.get(key);
      return v === undefined ? undefined : (JSON.parse(v) as T);
    },
    async set(key, value) {
      data.set(key, JSON.stringify(value));
    },
    async delete(key) {
      data.delete(key);
    },
    async entries<T>(prefix = '') {
      return [...data].filter(([k]) => k.startsWith(prefix)).map(([k, v]) => [k, JSON.parse(v) as T] as [string, T]);
    },
  };
}

export function makeFlow(name: string, on: Partial<FlowTrigger>): Flow {
  return {
    name,
    instance: 'default',
    on: { overlap: 'skip', missed: 'none', startup: false, ...on },
    inputs: {},
    env: {},
    steps: [
      {
        id: 's',
        uses: 'log',
        concurrency: 1,
        with: {},
        retry: { maxAttempts: 1, backoff: 'fixed', delayMs: 0, maxDelayMs: 0, jitter: false },
        continueOnError: false,
        location: `${name}.yaml:1:1`,
      },
    ],
    file: `/flows/${name}.yaml`,
    displayFile: `flows/${name}.yaml`,
    baseDir: '/',
  };
}

/** A fire function whose runs stay active until the test ends them. */
export function controlledRuns() {
  const runs: Array<FireInfo & { end: () => void; ended: boolean }> = [];
  let active = 0;
  let maxActive = 0;
  const fire = (info: FireInfo) =>
    new Promise<void>((resolve) => {
      active++;
      maxActive = Math.max(maxActive, active);
      const run = {
        ...info,
        ended: false,
        end: () => {
          if (run.ended) return;
          run.ended = true;
          active--;
          resolve();
        },
      };
      runs.push(run);
    });
  return {
    fire,
    runs,
    get active() {
      return active;
    },
    get maxActive() {
      return maxActive;
    },
  };
}

/** Records every event of the given names, in order. */
export function recordEvents<K extends keyof EngineEvents>(bus: EngineBus, names: K[]) {
  const seen: Array<{ name: K; event: EngineEvents[K][0] }> = [];
  for (const name of names) {
    bus.on(name, ((event: EngineEvents[K][0]) => seen.push({ name, event })) as never);
  }
  return seen;
}

export async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
}

export { createBus };
