import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseCommand } from '../args.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { initFiles } from '../init-template.js';
import { version } from '../main.js';
import { cliPath, type Io } from '../output.js';

/** msgflow's own folder (where its package.json is). */
const MSGFLOW_ROOT = path.resolve(fileURLToPath(import.meta.url), '../../../..');

/**
 * How the new project depends on msgflow: this very checkout (`file:`) when
 * msgflow runs from a git checkout, since it is not published yet; when it
 * runs from another project's node_modules, the spec that project installed
 * it with (a tarball or a git URL: a version range would ask the registry for
 * a package that is not there); else the installed version.
 */
export function msgflowDependency(root = MSGFLOW_ROOT): string {
  if (existsSync(path.join(root, '.git'))) return `file:${root}`;
  return installedSpec(root) ?? `^${version()}`;
}

/** The `msgflow` dependency spec of the project whose node_modules holds `root`; `file:` paths made absolute. */
function installedSpec(root: string): string | undefined {
  if (path.basename(path.dirname(root)) !== 'node_modules') return undefined;
  const project = path.dirname(path.dirname(root));
  let spec: unknown;
  try {
    const pkg = JSON.parse(readFileSync(path.join(project, 'package.json'), 'utf8')) as Record<string, Record<string, unknown> | undefined>;
    spec = pkg.dependencies?.msgflow ?? pkg.devDependencies?.msgflow;
  } catch {
    return undefined; // no readable package.json: fall back to the version
  }
  if (typeof spec !== 'string') return undefined;
  return spec.startsWith('file:') ? `file:${path.resolve(project, spec.slice('file:'.length))}` : spec;
}

/**
 * The `typescript` and `@types/node` ranges msgflow itself is built and
 * tested with (its package.json, published with it), so the new project's
 * `npm run typecheck` checks plugins against the same compiler.
 */
export function typescriptDependencies(root = MSGFLOW_ROOT): { typescriptSpec: string; typesNodeSpec: string } {
  let dev: Record<string, string> | undefined;
  try {
    dev = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { devDependencies?: Record<string, string> })
      .devDependencies;
  } catch {
    dev = undefined; // no readable package.json: the ranges below
  }
  return { typescriptSpec: dev?.typescript ?? '^5.9.0', typesNodeSpec: dev?.['@types/node'] ?? '^20.19.0' };
}

/**
 * `msgflow init [DIR]`: writes a minimal project that passes `msgflow
 * validate` and `msgflow test` as written. Never overwrites a file.
 */
export async function init(argv: string[], io: Io): Promise<number> {
  const { positionals } = parseCommand('init', argv);
  if (positionals.length > 1) throw new UsageError(`init expects at most one DIR, got ${positionals.length}`);
  const dir = cliPath(io, positionals[0] ?? '.');
  const shown = path.relative(io.cwd ?? process.cwd(), dir) || '.';
  if (existsSync(path.join(dir, 'config.yaml'))) {
    io.err(`msgflow: ${path.join(shown, 'config.yaml')} already exists: ${shown} is already a msgflow project (nothing written)`);
    return EXIT.FAILURE;
  }
  const name =
    path
      .basename(dir)
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[._-]+/, '') || 'msgflow-project';
  const files = initFiles({ name, msgflowSpec: msgflowDependency(), ...typescriptDependencies() });
  const written: string[] = [];
  const kept: string[] = [];
  for (const [rel, content] of Object.entries(files)) {
    const file = path.join(dir, rel);
    if (existsSync(file)) {
      kept.push(rel);
      continue;
    }
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, content, { flag: 'wx' });
    written.push(rel);
  }
  io.out(`Created a msgflow project in ${shown}:`);
  for (const f of written) io.out(`  ${f}`);
  for (const f of kept) io.out(`  ${f} (exists, kept)`);
  io.out('');
  io.out('Next:');
  if (shown !== '.') io.out(`  cd ${shown}`);
  io.out('  npm install');
  io.out('  npx msgflow test');
  return EXIT.OK;
}
