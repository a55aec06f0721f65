/**
 * What a front end (the `msgflow` command, src/cli) uses of the layers below
 * the runtime, reached through it. The CLI imports only the runtime (the
 * layer rule in eslint.config.js), so this module and present.ts list the
 * whole of what it uses below: reading config.yaml, finding and validating
 * flows and their inputs, a run's log stream, the dashboard alone (`msgflow
 * ui`). Everything that wires parts together (the daemon, the EngineClients,
 * createRuntime) is the runtime's own.
 */
import type { serveDashboard as serve } from '../ui/serve.js';

export { loadConfig, resolveFromConfig } from '../config/load.js';
export { displayPath, findFlow, validateFlowFiles, validationTargets } from '../engine/flow/load.js';
export { checkInputNames, dataInputsOf, fileOverridesFrom } from '../engine/flow/inputs.js';
export { renderFlowJsonSchema } from '../engine/flow/json-schema.js';
export { RUN_LOG_STREAM } from '../engine/run/run-log.js';
// msgflow apply: the plan file's head, and the hash of a flow file its fingerprint holds. Here, not in
// present.ts: they load the built-in actions and the engine, and present.ts is loaded by every command.
export { readPlan } from '../actions/builtins.js';
export { flowHash } from '../engine/run/engine.js';

/** The dashboard over a runtime (see src/ui/serve.ts); its modules are loaded only when one is served. */
export async function serveDashboard(...args: Parameters<typeof serve>): ReturnType<typeof serve> {
  return (await import('../ui/serve.js')).serveDashboard(...args);
}
