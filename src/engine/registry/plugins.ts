/**
 * Loads action plugins listed in config.yaml `plugins:`: a path (relative to
 * the config file's directory) or an npm package name. A plugin module
 * exports (as default, or as named exports) `{ name?, actions: [...] }`,
 * see definePlugin in ../action.ts.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { FlowError, MsgflowError } from '../../api/errors.js';
import type { ActionRegistry } from './registry.js';
import { checkActionDefinition } from './registry.js';

function isPathSpec(spec: string): boolean {
  return spec.startsWith('./') || spec.startsWith('../') || spec.startsWith('/') || path.isAbsolute(spec) || spec.startsWith('file:');
}

/** Absolute file URL of a plugin, resolved the way Node would from `baseDir`. */
export function resolvePlugin(spec: string, baseDir: string): string {
  if (spec.startsWith('file:')) return spec;
  if (isPathSpec(spec)) {
    const file = path.resolve(baseDir, spec);
    if (!existsSync(file)) throw new Error(`file not found: ${file}`);
    return pathToFileURL(file).href;
  }
  // An npm package: resolved from the project (baseDir), not from msgflow's own install.
  const req = createRequire(path.join(baseDir, 'package.json'));
  try {
    return pathToFileURL(req.resolve(spec)).href;
  } catch (e) {
    const code = (e as { code?: string }).code;
    // ESM-only packages have no `require` export condition: let import() resolve them.
    if (code === 'ERR_PACKAGE_PATH_NOT_EXPORTED') return spec;
    if (code === 'MODULE_NOT_FOUND') throw new Error(`package '${spec}' is not installed (npm install ${spec})`);
    throw e;
  }
}

/**
 * Imports each plugin and registers its actions. Stops at the first broken
 * plugin with PLUGIN_LOAD_FAILED (cannot import) or PLUGIN_INVALID (imports,
 * but does not export valid actions), naming the plugin.
 */
export async function loadPlugins(specs: readonly string[], baseDir: string, registry: ActionRegistry): Promise<void> {
  for (const spec of specs) {
    let mod: Record<string, unknown>;
    try {
      mod = (await import(resolvePlugin(spec, baseDir))) as Record<string, unknown>;
    } catch (e) {
      const reason = e instanceof Error ? e.message.split('\n')[0] : String(e);
      throw new FlowError('PLUGIN_LOAD_FAILED', { plugin: spec, reason }, { cause: e });
    }
    const plugin = (isObject(mod.default) ? mod.default : mod) as Record<string, unknown>;
    const actions = plugin.actions;
    if (!Array.isArray(actions) || actions.length === 0) {
      throw new FlowError('PLUGIN_INVALID', {
        plugin: spec,
        reason: 'must export { actions: [...] } (default export or named export `actions`) with at least one action',
      });
    }
    for (const [i, def] of actions.entries()) {
      const problem = checkActionDefinition(def);
      if (problem) throw new FlowError('PLUGIN_INVALID', { plugin: spec, reason: `actions[${i}]: ${problem}` });
    }
    for (const def of actions) {
      try {
        registry.register(def, spec);
      } catch (e) {
        if (e instanceof MsgflowError) throw new FlowError('PLUGIN_INVALID', { plugin: spec, reason: e.params.reason }, { cause: e });
        throw e;
      }
    }
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object';
}
