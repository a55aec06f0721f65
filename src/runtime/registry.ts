import type { Config } from '../config/load.js';
import { BUILTIN_JOB_ACTIONS, HTTP_REQUEST, httpRequestAction } from '../actions/builtins.js';

import { createRegistry, type ActionRegistry } from '../engine/registry/registry.js';
import { loadPlugins } from '../engine/registry/plugins.js';
import { registerBuiltins } from '../engine/registry/builtins.js';

/** Every action a flow of this project may use: API methods, `log`, the jobs, and config.yaml's plugins. */
export async function buildRegistry(config: Pick<Config, 'plugins' | 'baseDir'> & Partial<Pick<Config, 'http'>>): Promise<ActionRegistry> {
  const registry = createRegistry();
  registerBuiltins(registry);
  // http.request carries config.yaml's http.allowPrivate; the other jobs need nothing of config.
  for (const action of BUILTIN_JOB_ACTIONS)
    registry.register(action.name === HTTP_REQUEST ? httpRequestAction(config.http?.allowPrivate) : action);
  await loadPlugins(config.plugins, config.baseDir, registry);
  return registry;
}
