/** Shared helpers of the runner tests: flows built directly (no YAML), a registry, an event recorder. */
import { z } from 'zod';
import type { InstanceApi } from '../../src/api/types.js';
import { defineAction, type ActionContext, type ActionDefinition } from '../../src/engine/action.js';
import { createBus, type EngineBus, type EngineEventName } from '../../src/engine/events.js';
import type { Flow, FlowStep } from '../../src/engine/flow/types.js';
import { createRegistry, type ActionRegistry } from '../../src/engine/registry/registry.js';
import { createEngine } from '../../src/engine/run/engine.js';
import type { Engine, EngineOptions } from '../../src/engine/run/types.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { EngineStore } from '../../src/store/types.js';
import type { Clock } from '../../src/util/clock.js';
import { srcModuleForChild } from '../support/spawn.js';
// @ts-expect-error plain JavaScript without declarations (children load it without tsx): typed below.
import * as kit from './fixtures/engine-kit.mjs';

// One definition of the shapes, shared with the plain-JavaScript children (fixtures/engine-kit.mjs).
export const step: (over: Partial<FlowStep> & { id: string; uses: string }) => FlowStep = kit.step;
export const flow: (steps: FlowStep[], over?: Partial<Flow>) => Flow = kit.flow;

/** An action from a run function, accepting any object input. */
export function action(
  name: string,
  run: (ctx: ActionContext, input: Record<string, unknown>) => Promise<unknown>,
  input: z.ZodType = z.record(z.string(), z.unknown()),
): ActionDefinition<z.ZodType, unknown> {
  return defineAction({ name, description: `test action ${name}`, input, output: { description: 'anything' }, run: run as never });
}

export function registryWith(...defs: ActionDefinition<any, any>[]): ActionRegistry {
  const r = createRegistry();
  for (const d of defs) r.register(d, 'test');
  return r;
}

/** Records every bus event as `[name, payload]`. */
export function recordEvents(bus: EngineBus): Array<[EngineEventName, any]> {
  const out: Array<[EngineEventName, any]> = [];
  const names: EngineEventName[] = [
    'run:started',
    'run:finished',
    'run:failed',
    'run:waiting',
    'run:resumed',
    'run:interrupted',
    'step:started',
    'step:finished',
    'step:retry',
    'item:finished',
    'step:progress',
    'action:event',
    'log',
  ];
  for (const n of names) bus.on(n, ((p: unknown) => out.push([n, p])) as never);
  return out;
}

export interface TestEngine {
  engine: Engine;
  bus: EngineBus;
  store: EngineStore;
  events: Array<[EngineEventName, any]>;
}

export function testEngine(registry: ActionRegistry, over: Partial<EngineOptions> & { clock?: Clock } = {}): TestEngine {
  const bus = over.bus ?? createBus();
  const store = over.store ?? createMemoryStore();
  const events = recordEvents(bus);
  const engine = createEngine({
    store,
    registry,
    bus,
    clientFor: () => ({}) as InstanceApi,
    baseDir: '/project',
    resolveInputs: async (f) => Object.fromEntries(Object.entries(f.inputs).map(([k, d]) => [k, d.value ?? d.default])),
    ...over,
  });
  return { engine, bus, store, events };
}

/**
 * How a plain-JavaScript child (fixtures/*.mjs, built with fixtures/engine-kit.mjs)
 * loads the engine: node options and the modules' URLs as one JSON argument
 * (dist when fresh, else src through tsx: srcModuleForChild's rule).
 */
export function engineModulesForChild(): { execArgv: string[]; modules: string } {
  const m = {
    engine: srcModuleForChild('engine/run/engine'),
    events: srcModuleForChild('engine/events'),
    registry: srcModuleForChild('engine/registry/registry'),
    lowdbStore: srcModuleForChild('store/lowdb-store'),
  };
  return { execArgv: m.engine.execArgv, modules: JSON.stringify(Object.fromEntries(Object.entries(m).map(([k, v]) => [k, v.url]))) };
}
