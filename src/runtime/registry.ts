import type { Config } from '../config/index.js';
import { BUILTIN_JOB_ACTIONS } from '../actions/index.js';
import { createRegistry, loadPlugins, registerBuiltins, type ActionRegistry } from '../engine/registry/index.js';

/** Every action a flow of this project may use: API methods, `log`, the jobs, and config.yaml's plugins. */
export async function buildRegistry(config: Pick<Config, 'plugins' | 'baseDir'>): Promise<ActionRegistry> {
  const registry = createRegistry();
  registerBuiltins(registry);
  for (const action of BUILTIN_JOB_ACTIONS) registry.register(action);
  await loadPlugins(config.plugins, config.baseDir, registry);
  return registry;
}
