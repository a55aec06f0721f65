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
      const url = resolvePlugin(spec, baseDir);
      if (isTypeScript(url)) await registerTypeScript();
      mod = (await import(url)) as Record<string, unknown>;
    } catch (e) {
      const reason = loadFailureReason(e, spec, baseDir);
      throw new FlowError('PLUGIN_LOAD_FAILED', { plugin: spec, reason }, { cause: e });
    }
    const plugin = (isObject(mod.default) ? mod.default : mod) as Record<string, unknown>;
    const actions = plugin.actions;
    if (!Array.isArray(actions) || actions.length === 0) {
      throw new FlowError('PLUGIN_INVALID', {
        plugin: spec,
        reason:
          "must export { actions: [...] } with at least one action, e.g. `import { defineAction, definePlugin, z } from 'msgflow'` " +
          "and `export default definePlugin({ name: 'my-plugin', actions: [myAction] })` (or a named export `actions`)",
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

const TS_EXT = /\.(ts|mts|cts)$/i;

function isTypeScript(url: string): boolean {
  return TS_EXT.test(url.split(/[?#]/)[0]!);
}

// cache: Node's module hooks are process-wide, so tsx's loader is registered once per process whichever registry asks first; holds no project's data
let tsRegistered: Promise<void> | undefined;

/**
 * `.ts` plugins load as written: tsx's ESM loader is registered (once per
 * process) before the first one is imported. Node alone refuses them
 * (`Unknown file extension ".ts"`).
 */
function registerTypeScript(): Promise<void> {
  tsRegistered ??= import('tsx/esm/api').then(({ register }) => {
    register();
  });
  return tsRegistered;
}

/** Why a plugin could not be imported, with the fix when the cause is a known setup mistake. */
function loadFailureReason(e: unknown, spec: string, baseDir: string): string {
  const first = e instanceof Error ? e.message.split('\n')[0]! : String(e);
  const esmInCjs = e instanceof SyntaxError && /Cannot use import statement outside a module|Unexpected token 'export'/.test(first);
  if (esmInCjs && isPathSpec(spec) && !spec.endsWith('.mjs')) {
    const pkg = nearestPackageJson(path.resolve(baseDir, spec));
    const where = pkg ? path.relative(baseDir, pkg) || pkg : 'package.json (none found: create one)';
    return `${first}: the plugin uses import/export (ESM) but ${where} does not say "type": "module"; add "type": "module" to it (npm pkg set type=module), or rename the plugin to .mjs`;
  }
  return first;
}

function nearestPackageJson(file: string): string | undefined {
  let dir = path.dirname(file);
  for (;;) {
    const candidate = path.join(dir, 'package.json');
    if (existsSync(candidate)) return candidate;
    const up = path.dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object';
}
