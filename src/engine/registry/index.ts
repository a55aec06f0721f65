/** Actions flows can `uses:`: the registry, the built-ins and plugin loading. */
export { createRegistry, checkActionDefinition, ACTION_NAME_RE, type ActionRegistry, type RegisteredAction } from './registry.js';
export { registerBuiltins, apiMethodAction, logAction } from './builtins.js';
export { loadPlugins, resolvePlugin } from './plugins.js';
export { closest, didYouMean, editDistance } from './suggest.js';
