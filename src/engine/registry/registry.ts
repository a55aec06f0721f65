/**
 * The action registry: every action a flow can `uses:`, built-in or from a
 * plugin, by name.
 */
import { FlowError } from '../../api/errors.js';
import type { ActionDefinition } from '../action.js';
import { closest } from './suggest.js';

/** Action names: letters, digits, `_`, `-`, dots to namespace (`greeting.compose`). */
export const ACTION_NAME_RE = /^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)*$/;

export type RegisteredAction = ActionDefinition<any, any>;

export interface ActionRegistry {
  /** Adds an action. Throws PLUGIN_INVALID when the definition is malformed or the name is taken. */
  register(def: ActionDefinition<any, any>, origin?: string): void;
  get(name: string): RegisteredAction | undefined;
  /** Every action, sorted by name. */
  list(): RegisteredAction[];
  /** Who registered an action: `built-in` or the plugin's spec. */
  originOf(name: string): string | undefined;
  /** The closest registered name, for "did you mean". */
  suggest(name: string): string | undefined;
}

/**
 * Checks the shape of an action definition (plugins are plain JS: nothing
 * checked their types). Returns the problem, or undefined.
 */
export function checkActionDefinition(def: unknown): string | undefined {
  if (def === null || typeof def !== 'object') return 'an action must be an object';
  const d = def as Record<string, unknown>;
  if (typeof d.name !== 'string' || !ACTION_NAME_RE.test(d.name)) {
    return `action name ${JSON.stringify(d.name)} must be letters, digits, '_' or '-', with dots between parts (e.g. greeting.compose)`;
  }
  if (typeof d.description !== 'string' || d.description.trim() === '') return `action '${d.name}' needs a description`;
  const input = d.input as { safeParse?: unknown; _zod?: unknown } | undefined;
  if (!input || typeof input.safeParse !== 'function' || typeof input._zod !== 'object') {
    return `action '${d.name}': input must be a zod 4 schema (import { z } from 'msgflow')`;
  }
  const output = d.output as Record<string, unknown> | undefined;
  if (!output || typeof output !== 'object' || typeof output.description !== 'string') {
    return `action '${d.name}': output must be { description: string }`;
  }
  if (typeof d.run !== 'function') return `action '${d.name}': run(ctx, input) must be a function`;
  return undefined;
}

export function createRegistry(): ActionRegistry {
  const actions = new Map<string, RegisteredAction>();
  const origins = new Map<string, string>();
  return {
    register(def, origin = 'built-in') {
      const problem = checkActionDefinition(def);
      if (problem) throw new FlowError('PLUGIN_INVALID', { plugin: origin, reason: problem });
      if (actions.has(def.name)) {
        throw new FlowError('PLUGIN_INVALID', {
          plugin: origin,
          reason: `action '${def.name}' is already registered by ${origins.get(def.name)}`,
        });
      }
      actions.set(def.name, def);
      origins.set(def.name, origin);
    },
    get: (name) => actions.get(name),
    list: () => [...actions.values()].sort((a, b) => a.name.localeCompare(b.name)),
    originOf: (name) => origins.get(name),
    suggest: (name) => closest(name, actions.keys()),
  };
}
