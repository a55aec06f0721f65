import type { DurableState } from './types.js';

/**
 * A view of a DurableState under a key prefix: how a step (or one forEach
 * item) gets its own durable state inside the run's namespace without a file
 * or a namespace per item.
 */
export function prefixedState(base: DurableState, prefix: string): DurableState {
  return {
    get: (key) => base.get(prefix + key),
    set: (key, value) => base.set(prefix + key, value),
    delete: (key) => base.delete(prefix + key),
    async entries<T>(p = '') {
      const all = await base.entries<T>(prefix + p);
      return all.map(([k, v]) => [k.slice(prefix.length), v] as [string, T]);
    },
  };
}
