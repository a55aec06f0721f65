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
import { secretSourceFor } from '../config/interpolate.js';
import type { SecretSource } from '../util/secret-source.js';
import type { Redactor } from '../util/secrets.js';

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
    pools: config.pools,
  });
}

/** The flows directory and the options its flows are loaded with (instance names and secrets checked against the config). */
export function flowSource(config: Config, registry: ActionRegistry): { dir: string; options: LoadFlowOptions } {
  return {
    dir: resolveFromConfig(config, config.flowsDir),
    options: {
      registry,
      baseDir: config.baseDir,
      instances: Object.keys(config.instances),
      pools: Object.keys(config.pools),
      cwd: config.cwd,
      secrets: secretsOf(config),
    },
  };
}

/** Where the project's `${{ secrets.NAME }}` values come from (config.yaml `secrets:`). */
export function secretsOf(config: Config): SecretSource {
  return secretSourceFor(config.secrets, config.baseDir, process.env);
}

/**
 * The engine's `secret(name)`: the value from the project's sources, hidden
 * by `redactor` from the moment it is handed out, before any run can print it.
 */
export function secretLookup(config: Config, redactor: Redactor): (name: string) => string | undefined {
  const source = secretsOf(config);
  return (name) => {
    const value = source.get(name);
    if (value !== undefined) redactor.addSecret(name, value);
    return value;
  };
}
