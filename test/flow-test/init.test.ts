import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { msgflowDependency } from '../../src/cli/commands/init.js';
import { createRegistry } from '../../src/engine/registry/registry.js';
import { loadPlugins } from '../../src/engine/registry/plugins.js';
import { cli as runIn } from '../support/cli.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CONFIG = (plugin: string) =>
  `instances: { default: { apiUrl: local } }\nlocal: { instances: [{ idInstance: '1', apiTokenInstance: 'token-123' }] }\nplugins: [${plugin}]\n`;
let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(path.join(tmpdir(), 'msgflow-init-'));
});
afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
});

/** `msgflow ARGV` in the folder `cwd` (its working directory injected, as the process's would be). */
async function cli(cwd: string, ...argv: string[]) {
  const r = await runIn(argv, cwd);
  return { code: r.code, out: r.stdout, err: r.stderr };
}

describe('msgflow init', () => {
  it('writes a project that passes msgflow validate and msgflow test at once (TypeScript plugin included)', async () => {
    const r = await cli(tmp, 'init', 'demo');
    expect(r.code).toBe(0);
    expect(r.out).toContain('plugins/greet.ts');
    const demo = path.join(tmp, 'demo');
    const pkg = JSON.parse(readFileSync(path.join(demo, 'package.json'), 'utf8')) as { type: string; dependencies: Record<string, string> };
    expect(pkg.type).toBe('module');
    // From a checkout, the project depends on this very checkout.
    expect(pkg.dependencies.msgflow).toBe(`file:${ROOT}`);
    // What `npm install` does with a file: dependency: a link in node_modules.
    mkdirSync(path.join(demo, 'node_modules'));
    symlinkSync(ROOT, path.join(demo, 'node_modules/msgflow'), 'dir');
    const v = await cli(demo, 'validate');
    expect(v.err).toBe('');
    expect(v.code).toBe(0);
    const t = await cli(demo, 'test');
    expect(t.out.trim().split('\n').at(-1)).toBe('3 passed, 0 failed');
    expect(t.code).toBe(0);
  });

  it('writes a project whose npm run typecheck passes: typescript and @types/node as devDependencies (the versions msgflow is built with), types: [node]', async () => {
    const demo = path.join(tmp, 'demo');
    const pkg = JSON.parse(readFileSync(path.join(demo, 'package.json'), 'utf8')) as Record<string, Record<string, string>>;
    const own = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Record<string, Record<string, string>>)
      .devDependencies!;
    expect(pkg.devDependencies).toEqual({ typescript: own.typescript, '@types/node': own['@types/node'] });
    const tsconfig = JSON.parse(readFileSync(path.join(demo, 'tsconfig.json'), 'utf8')) as { compilerOptions: { types?: string[] } };
    expect(tsconfig.compilerOptions.types).toEqual(['node']);
    // What `npm install` puts in node_modules for them: the packages (this checkout's own) and the tsc command.
    for (const dep of ['typescript', '@types/node']) {
      mkdirSync(path.dirname(path.join(demo, 'node_modules', dep)), { recursive: true });
      symlinkSync(path.join(ROOT, 'node_modules', dep), path.join(demo, 'node_modules', dep), 'dir');
    }
    mkdirSync(path.join(demo, 'node_modules/.bin'));
    symlinkSync('../typescript/bin/tsc', path.join(demo, 'node_modules/.bin/tsc'));
    const r = await promisify(execFile)('npm', ['run', '--silent', 'typecheck'], {
      cwd: demo,
      env: { ...process.env, npm_config_update_notifier: 'false' },
    }).then(
      (x) => ({ ...x, code: 0 }),
      (e: { stdout: string; stderr: string; code: number }) => e,
    );
    expect(r.stdout + r.stderr).toBe('');
    expect(r.code).toBe(0);
    // tsc over msgflow's declarations takes ~3 s of CPU: the bound only turns a hang into a failure on a busy machine.
  }, 120_000);

  it('refuses a folder that already has a config.yaml, and writes nothing', async () => {
    const r = await cli(tmp, 'init', 'demo');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/demo\/config\.yaml already exists/);
  });

  it('in a folder with no config.yaml, commands point at msgflow init', async () => {
    const empty = mkdtempSync(path.join(tmp, 'empty-'));
    for (const argv of [['validate'], ['test'], ['run', 'x']]) {
      const r = await cli(empty, ...argv);
      expect(r.code).not.toBe(0);
      expect(r.err).toContain("config file not found: config.yaml (no msgflow project here? 'msgflow init' creates one)");
    }
  });

  it('run from a project that installed msgflow from a tarball or git URL, init depends on msgflow the same way (never a registry range)', () => {
    const project = mkdtempSync(path.join(tmp, 'installed-'));
    const root = path.join(project, 'node_modules', 'msgflow');
    mkdirSync(root, { recursive: true });
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ dependencies: { msgflow: 'file:vendor/msgflow-0.1.0.tgz' } }));
    expect(msgflowDependency(root)).toBe(`file:${path.join(project, 'vendor/msgflow-0.1.0.tgz')}`);
    writeFileSync(
      path.join(project, 'package.json'),
      JSON.stringify({ devDependencies: { msgflow: 'git+https://example.com/team/msgflow.git#v0.1.0' } }),
    );
    expect(msgflowDependency(root)).toBe('git+https://example.com/team/msgflow.git#v0.1.0');
    expect(msgflowDependency(ROOT)).toBe(`file:${ROOT}`);
  });
});

describe('plugins as a developer writes them', () => {
  // Module loading is what is tested here, so it runs in a real node process (vitest transforms imports itself).
  // The two processes are independent projects: they run side by side (it.concurrent, the test's own expect).
  it.concurrent('an ESM plugin in a CommonJS project loads, or gets a message naming "type": "module"', async ({ expect }) => {
    const dir = mkdtempSync(path.join(tmp, 'cjs-'));
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'cjs-project' }));
    writeFileSync(path.join(dir, 'config.yaml'), CONFIG('./plugin.js'));
    mkdirSync(path.join(dir, 'node_modules'));
    mkdirSync(path.join(dir, 'flows'));
    writeFileSync(path.join(dir, 'flows/x.yaml'), 'name: x\nsteps:\n  - id: a\n    uses: cjs.echo\n');
    symlinkSync(ROOT, path.join(dir, 'node_modules/msgflow'), 'dir');
    writeFileSync(
      path.join(dir, 'plugin.js'),
      "import { z } from 'msgflow';\nexport const actions = [{ name: 'cjs.echo', description: 'echo', input: z.object({}), output: { description: 'same' }, async run(_c, i) { return i; } }];\n",
    );
    const r = await promisify(execFile)(process.execPath, [path.join(ROOT, 'bin/msgflow.js'), 'validate'], { cwd: dir }).then(
      (x) => ({ ...x, code: 0 }),
      (e: { stdout: string; stderr: string; code: number }) => e,
    );
    if (r.code === 0) {
      // Node >= 20.19 detects ES module syntax and says how to avoid the re-parse.
      expect(r.stdout).toContain('config.yaml: ok');
      expect(r.stderr).toContain('add "type": "module"');
    } else {
      expect(r.stderr).toMatch(/package\.json does not say "type": "module"; add "type": "module" to it/);
    }
  });

  it.concurrent('a .ts plugin loads in a plain node process (tsx registered on demand)', async ({ expect }) => {
    const dir = mkdtempSync(path.join(tmp, 'ts-'));
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'ts-project', type: 'module' }));
    writeFileSync(path.join(dir, 'config.yaml'), CONFIG('./plugin.ts'));
    mkdirSync(path.join(dir, 'node_modules'));
    mkdirSync(path.join(dir, 'flows'));
    writeFileSync(path.join(dir, 'flows/x.yaml'), 'name: x\nsteps:\n  - id: a\n    uses: ts.double\n    with: { n: 2 }\n');
    symlinkSync(ROOT, path.join(dir, 'node_modules/msgflow'), 'dir');
    writeFileSync(
      path.join(dir, 'plugin.ts'),
      "import { defineAction, definePlugin, z } from 'msgflow';\n" +
        'const input = z.strictObject({ n: z.number() });\n' +
        "export default definePlugin({ name: 'ts', actions: [defineAction({ name: 'ts.double', description: 'x2', input, output: { description: 'n times 2' }, async run(_ctx, i: z.infer<typeof input>): Promise<number> { return i.n * 2; } })] });\n",
    );
    const r = await promisify(execFile)(process.execPath, [path.join(ROOT, 'bin/msgflow.js'), 'validate'], { cwd: dir });
    expect(r.stdout).toContain('config.yaml: ok');
  });

  it('the plugin-shape error names the import the README shows', async () => {
    const dir = mkdtempSync(path.join(tmp, 'shape-'));
    writeFileSync(path.join(dir, 'empty.mjs'), 'export default {};\n');
    await expect(loadPlugins(['./empty.mjs'], dir, createRegistry())).rejects.toThrow(
      /import \{ defineAction, definePlugin, z \} from 'msgflow'/,
    );
  });
});
