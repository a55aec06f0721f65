/**
 * What a project's config.yaml decides about an engine and its flows, shared
 * by the daemon's runtime and `msgflow test` (which swaps the store, the
 * clients and the clock, never these): instance identities, `${{ local.url }}`,
 * the project root, and the options flows are loaded with.
 */
import type { Config } from '../config/load.js';
import { resolveFromConfig } from '../config/load.js';
import type { LoadFlowOptions } from '../engine/flow/load.js';
import type { ActionRegistry } from '../engine/registry/registry.js';
import { createEngine } from '../engine/run/engine.js';
import type { Engine, EngineOptions } from '../engine/run/types.js';
import { identityOf } from './clients.js';

/**
 * What the local service calls itself (publicUrl) or where it listens:
 * `${{ local.url }}` in flows. Undefined without a `local:` section.
 */
export function localUrlOf(config: Config): string | undefined {
  return config.local ? (config.local.publicUrl ?? `http://127.0.0.1:${config.local.port}`).replace(/\/+$/, '') : undefined;
}

/** The engine for a project: the config's identities, local URL and root, with the caller's store, clients and clock. */
export function createProjectEngine(config: Config, opts: Omit<EngineOptions, 'identityFor' | 'baseDir'> & { baseDir?: string }): Engine {
  return createEngine({
    localUrl: localUrlOf(config),
    ...opts,
    identityFor: (name) => identityOf(config, name),
    baseDir: opts.baseDir ?? config.baseDir,
  });
}

/** The flows directory and the options its flows are loaded with (instance names checked against the config). */
export function flowSource(config: Config, registry: ActionRegistry): { dir: string; options: LoadFlowOptions } {
  return {
    dir: resolveFromConfig(config, config.flowsDir),
    options: { registry, baseDir: config.baseDir, instances: Object.keys(config.instances), cwd: config.cwd },
  };
}
