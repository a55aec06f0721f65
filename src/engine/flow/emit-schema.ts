/**
 * Writes schema/flow.schema.json from the flow schema and the registered
 * actions (the built-ins plus the plugins config.yaml lists).
 *
 *   node --import tsx src/engine/flow/emit-schema.ts [--config config.yaml] [--out schema/flow.schema.json] [--check]
 *
 * `--check` writes nothing and exits 1 when the file is out of date (for CI).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadConfig } from '../../config/index.js';
import { createRegistry, loadPlugins, registerBuiltins } from '../registry/index.js';
import { renderFlowJsonSchema } from './json-schema.js';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

export interface EmitOptions {
  /** @default <repo>/config.yaml (its plugins are included when it exists) */
  config?: string;
  /** @default <repo>/schema/flow.schema.json */
  out?: string;
}

/** Renders the schema text for the given config's plugins. */
export async function renderSchemaFor(configFile: string): Promise<string> {
  const registry = createRegistry();
  registerBuiltins(registry);
  if (existsSync(configFile)) {
    const config = loadConfig(configFile);
    await loadPlugins(config.plugins, config.baseDir, registry);
  }
  return renderFlowJsonSchema(registry);
}

export async function emitSchema(opts: EmitOptions = {}): Promise<{ file: string; changed: boolean }> {
  const file = path.resolve(opts.out ?? path.join(REPO_ROOT, 'schema/flow.schema.json'));
  const text = await renderSchemaFor(path.resolve(opts.config ?? path.join(REPO_ROOT, 'config.yaml')));
  const changed = !existsSync(file) || readFileSync(file, 'utf8') !== text;
  if (changed) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
  return { file, changed };
}

async function main(argv: string[]): Promise<number> {
  const arg = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const config = path.resolve(arg('--config') ?? path.join(REPO_ROOT, 'config.yaml'));
  const out = path.resolve(arg('--out') ?? path.join(REPO_ROOT, 'schema/flow.schema.json'));
  if (argv.includes('--check')) {
    const text = await renderSchemaFor(config);
    const same = existsSync(out) && readFileSync(out, 'utf8') === text;
    process.stdout.write(same ? `${path.relative(process.cwd(), out)} is up to date\n` : `${path.relative(process.cwd(), out)} is out of date: run node --import tsx src/engine/flow/emit-schema.ts\n`);
    return same ? 0 : 1;
  }
  const r = await emitSchema({ config, out });
  process.stdout.write(`${path.relative(process.cwd(), r.file)} ${r.changed ? 'written' : 'unchanged'}\n`);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
